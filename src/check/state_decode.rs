//! Reading an opaque `requestState` the way an attacker (or a leak hunt)
//! would: split on dots, decode each part leniently (base64 or base64url,
//! padded or not, stray trailing bits allowed), and look into decoded JSON
//! and JWT-style payloads. Used to tell a real tamper from a re-encoding of
//! the same bytes, to build such re-encodings, and to find a typed secret
//! that came back inside a state or a reply.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

fn lenient(alpha: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alpha,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::Indifferent),
    )
}

/// One part's bytes, read as base64url or standard base64 (any padding,
/// non-canonical last characters allowed); `None` when it is neither.
pub fn decode_part(part: &str) -> Option<Vec<u8>> {
    if part.len() < 2 {
        return None;
    }
    lenient(&alphabet::URL_SAFE)
        .decode(part)
        .or_else(|_| lenient(&alphabet::STANDARD).decode(part))
        .ok()
}

/// The decoded bytes of every dot-separated part (a part that is not
/// base64 stands for itself).
pub fn decoded_parts(state: &str) -> Vec<Vec<u8>> {
    state
        .split('.')
        .map(|p| decode_part(p).unwrap_or_else(|| p.as_bytes().to_vec()))
        .collect()
}

/// True when `a` and `b` differ only in how the same bytes are encoded.
pub fn same_bytes(a: &str, b: &str) -> bool {
    a.split('.').count() == b.split('.').count() && decoded_parts(a) == decoded_parts(b)
}

/// A part whose last character carries unused bits, with those bits set
/// (the same bytes, encoded non-canonically); `None` when the length leaves
/// no spare bits or the part is not unpadded base64url.
fn noncanonical_tail(part: &str) -> Option<String> {
    let spare = match part.len() % 4 {
        2 => 0b1111,
        3 => 0b11,
        _ => return None,
    };
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    let last = part.chars().last()?;
    let table = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let v = table.iter().position(|&c| char::from(c) == last)?;
    let changed = char::from(table[v | spare]);
    if changed == last {
        return None;
    }
    let out = format!("{}{changed}", &part[..part.len() - 1]);
    (lenient(&alphabet::URL_SAFE).decode(&out).ok()? == bytes).then_some(out)
}

/// Re-encodings of `state` that keep every part's bytes: each decodable
/// part (one at a time) as standard base64, with `=` padding, and with a
/// non-canonical last character; each with what it is. A server that signs
/// the encoded text of one part and compares the decoded bytes of another
/// accepts some of these and not others.
pub fn reencodings(state: &str) -> Vec<(String, String)> {
    let parts: Vec<&str> = state.split('.').collect();
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(part) else {
            continue;
        };
        if part.len() < 2 {
            continue;
        }
        let with = |new: String| {
            let mut v: Vec<String> = parts.iter().map(|p| (*p).to_owned()).collect();
            v[i] = new;
            v.join(".")
        };
        let which = if parts.len() > 1 {
            format!("part {} of {}", i + 1, parts.len())
        } else {
            "the state".to_owned()
        };
        let standard = STANDARD.encode(&bytes);
        if standard != *part {
            out.push((
                format!("{which} as standard base64 (+/ and padding)"),
                with(standard),
            ));
        }
        let padded = URL_SAFE.encode(&bytes);
        if padded != *part {
            out.push((format!("{which} with = padding"), with(padded)));
        }
        if let Some(t) = noncanonical_tail(part) {
            out.push((
                format!("{which} with a non-canonical last character"),
                with(t),
            ));
        }
    }
    out
}

/// Where `needle` appears in `text` once decoded: the text itself, a
/// dot-separated part, its base64 decoding, or JSON inside (strings in the
/// JSON are decoded again, for JWTs in JSON and the like). Depth-bounded.
pub fn find_in(text: &str, needle: &str) -> Option<String> {
    find_at(text, needle, 0)
}

fn find_at(text: &str, needle: &str, depth: usize) -> Option<String> {
    if text.contains(needle) {
        return Some("in clear".into());
    }
    if depth >= 3 {
        return None;
    }
    let parts: Vec<&str> = text.split('.').collect();
    for (n, part) in parts.iter().enumerate() {
        let Some(bytes) = decode_part(part) else {
            continue;
        };
        let where_ = if parts.len() > 1 {
            format!("part {} of {} (base64-decoded)", n + 1, parts.len())
        } else {
            "base64-decoded".to_owned()
        };
        let decoded = String::from_utf8_lossy(&bytes);
        if decoded.contains(needle) {
            return Some(where_);
        }
        // JSON after a binary prefix (e.g. an 8-byte expiry): from the first brace.
        if let Some(start) = decoded.find('{')
            && let Ok(v) = serde_json::from_str::<Value>(&decoded[start..])
            && let Some(inner) = find_in_json(&v, needle, depth + 1)
        {
            return Some(format!("{where_}, then {inner}"));
        }
    }
    None
}

fn find_in_json(v: &Value, needle: &str, depth: usize) -> Option<String> {
    match v {
        Value::String(s) => find_at(s, needle, depth).map(|w| format!("a JSON string ({w})")),
        Value::Array(a) => a.iter().find_map(|x| find_in_json(x, needle, depth)),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| find_in_json(x, needle, depth).map(|w| format!("{w} at key {k:?}"))),
        _ => None,
    }
}

/// The expiry a state says it has, in Unix milliseconds: an `exp`,
/// `expires_at`, `expiresAt` or `expiry` number in JSON inside any
/// dot-separated part (base64-decoded; JSON after a binary prefix too), read
/// as seconds, or as milliseconds when it is that large. `None` when no
/// part reads so (an encrypted state says nothing).
pub fn expiry_ms(state: &str) -> Option<u64> {
    const KEYS: [&str; 4] = ["exp", "expires_at", "expiresAt", "expiry"];
    state.split('.').find_map(|part| {
        let bytes = decode_part(part)?;
        let text = String::from_utf8_lossy(&bytes);
        let v: Value = serde_json::from_str(&text[text.find('{')?..]).ok()?;
        let n = KEYS.iter().find_map(|k| v.get(*k)?.as_u64())?;
        // Seconds until the year 33658; milliseconds above.
        Some(if n < 1_000_000_000_000 { n * 1000 } else { n })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reencodings_keep_the_bytes_and_tampers_do_not() {
        // 32 bytes: 43 characters, the last one carries 2 spare bits.
        let tag = URL_SAFE_NO_PAD.encode([7u8; 32]);
        let state = format!("v1.{}.{tag}", URL_SAFE_NO_PAD.encode(b"{\"p\":1}"));
        let re = reencodings(&state);
        assert!(re.len() >= 2, "{re:?}");
        for (what, s) in &re {
            assert_ne!(s, &state, "{what}");
            assert!(same_bytes(&state, s), "{what}: {s}");
        }
        assert!(!same_bytes(&state, &format!("{state}A")));
        let flipped = state.replacen("v1.", "v1.A", 1);
        assert!(!same_bytes(&state, &flipped));
        assert_eq!(noncanonical_tail("AQID"), None, "no spare bits");
        let t = noncanonical_tail("AQ").unwrap();
        assert_ne!(t, "AQ");
        assert_eq!(decode_part(&t), Some(vec![1]));
    }

    #[test]
    fn a_marker_is_found_through_the_encodings() {
        let m = "ekSECRETabc123";
        assert_eq!(find_in(&format!("x{m}y"), m).as_deref(), Some("in clear"));
        let body = URL_SAFE_NO_PAD.encode(format!("\0\0\0\0\0\0\0\0{{\"api_key\":\"{m}\"}}"));
        let state = format!("rs1.{body}.AAAA");
        let w = find_in(&state, m).unwrap();
        assert!(w.contains("part 2 of 3"), "{w}");
        // A JWT whose payload holds base64 of the marker, inside JSON.
        let inner = URL_SAFE_NO_PAD.encode(m);
        let payload = URL_SAFE_NO_PAD.encode(format!("{{\"memo\":\"{inner}\"}}"));
        let jwt = format!("eyJhbGciOiJIUzI1NiJ9.{payload}.sig");
        assert!(find_in(&jwt, m).is_some());
        assert_eq!(find_in("v1.AAAA.BBBB", m), None);
    }

    #[test]
    fn an_expiry_is_read_where_the_state_shows_one() {
        // The TypeScript SDK's codec: v1.<base64url JSON {p, exp}>.<mac>.
        let body = URL_SAFE_NO_PAD.encode(r#"{"p":{"trip":1},"exp":1800000000}"#);
        let state = format!("v1.{body}.{}", URL_SAFE_NO_PAD.encode([1u8; 32]));
        assert_eq!(expiry_ms(&state), Some(1_800_000_000_000));
        let ms = URL_SAFE_NO_PAD.encode(r#"{"expiresAt":1800000000123}"#);
        assert_eq!(expiry_ms(&ms), Some(1_800_000_000_123));
        // No expiry field, or sealed: nothing to read.
        let rmcp = "rs1.AAAAAAAAAAB7ImF3YWl0aW5nIjoiZGV0YWlscyJ9.sJbDOrxT_fZovRQTOhShdAVjPNXGtbsiC8wSCwvCAsw";
        assert_eq!(expiry_ms(rmcp), None);
        assert_eq!(expiry_ms("qPREEiAAAAAAAAAAAAAA"), None);
    }
}
