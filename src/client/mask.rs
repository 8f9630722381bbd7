//! Masking for evidence: nothing secret reaches a report. Authorization
//! headers, values under keys the secret heuristic flags (`api_key`,
//! `password`, ...), form-encoded secret fields and strings that look like
//! API keys are replaced by `***`; long texts are shortened.

use crate::protocol::mrtr::REQUEST_STATE;
use crate::schema::asks_for_secret;
use serde_json::Value;

/// Longest body kept in evidence, in characters.
pub const MAX_EVIDENCE_CHARS: usize = 2_000;

/// The replacement for a masked value.
pub const MASK: &str = "***";

/// A header value as it may appear in evidence.
pub fn header_value(name: &str, value: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower == "authorization" || lower == "cookie" || lower == "set-cookie" {
        match value.split_once(' ') {
            Some((scheme, _)) if lower == "authorization" => format!("{scheme} {MASK}"),
            _ => MASK.to_owned(),
        }
    } else {
        value.to_owned()
    }
}

fn secret_key(key: &str) -> bool {
    // `requestState` and `progressToken` are opaque, not secrets.
    !matches!(key, REQUEST_STATE | "progressToken" | "tokens") && asks_for_secret(key)
}

fn looks_like_api_key(s: &str) -> bool {
    ((s.starts_with("sk-") || s.starts_with("sk_")) && s.len() >= 12 && !s.contains('…'))
        || s.contains(crate::client::browser::SECRET_MARKER)
}

/// Masks secrets inside a JSON value, in place.
pub fn json_value(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                if secret_key(k) && !val.is_object() && !val.is_array() && !val.is_null() {
                    *val = Value::String(MASK.into());
                } else {
                    json_value(val);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(json_value),
        Value::String(s) if looks_like_api_key(s) => *s = MASK.into(),
        _ => {}
    }
}

fn form_encoded(body: &str) -> Option<String> {
    if body.is_empty() || body.contains(['{', ' ', '\n']) || !body.contains('=') {
        return None;
    }
    let parts: Vec<String> = body
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if secret_key(k) || k == "csrf" => format!("{k}={MASK}"),
            _ => pair.to_owned(),
        })
        .collect();
    Some(parts.join("&"))
}

/// A body as it may appear in evidence: JSON re-serialised with secrets
/// masked, SSE `data:` lines likewise, form bodies with secret fields
/// masked, anything else shortened.
pub fn body(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let masked = if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
        json_value(&mut v);
        v.to_string()
    } else if text.contains("data:") {
        text.lines()
            .map(|line| match line.strip_prefix("data:") {
                Some(data) => match serde_json::from_str::<Value>(data.trim()) {
                    Ok(mut v) => {
                        json_value(&mut v);
                        format!("data: {v}")
                    }
                    Err(_) => line.to_owned(),
                },
                None => line.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else if let Some(f) = form_encoded(&text) {
        f
    } else {
        text.into_owned()
    };
    shorten(&masked, MAX_EVIDENCE_CHARS)
}

/// The first `max` characters of `s`, with a note of how much was cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}… [{} more bytes]", &s[..cut], s.len() - cut),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn authorization_and_cookies_are_masked() {
        assert_eq!(header_value("Authorization", "Bearer alice"), "Bearer ***");
        assert_eq!(header_value("cookie", "ek_auth=alice"), "***");
        assert_eq!(header_value("Mcp-Method", "tools/call"), "tools/call");
    }

    #[test]
    fn secret_fields_in_json_and_sse_are_masked() {
        let b = br#"{"inputResponses":{"b":{"action":"accept","content":{"api_key":"hunter2","name":"x"}}},"requestState":"abc"}"#;
        let out = body(b);
        assert!(!out.contains("hunter2"), "{out}");
        assert!(
            out.contains("\"name\":\"x\"") && out.contains("abc"),
            "{out}"
        );
        let sse = b"id: 1\ndata: {\"password\":\"pw\",\"k\":\"sk-test-0123456789ab\"}\n\n";
        let out = body(sse);
        assert!(
            !out.contains("pw\"") && !out.contains("sk-test-0123"),
            "{out}"
        );
        let mut v = json!(["sk-live-aaaaaaaaaaaa", "sk-…9f2c"]);
        json_value(&mut v);
        assert_eq!(v, json!(["***", "sk-…9f2c"]));
    }

    #[test]
    fn form_bodies_and_long_texts() {
        assert_eq!(
            body(b"csrf=abc&api_key=sk-test-123456789"),
            "csrf=***&api_key=***"
        );
        let long = "x".repeat(MAX_EVIDENCE_CHARS + 10);
        let s = body(long.as_bytes());
        assert!(s.ends_with("[10 more bytes]"), "{s}");
    }
}
