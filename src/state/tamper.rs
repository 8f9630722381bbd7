//! Deterministic mutations of a token, shared by the tests, the fuzz
//! targets and the conformance checker. None of them panics: indexes past
//! the end are clamped or wrap.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};

/// Flips bit `bit % 8` of character `bit / 8` of the token text (wrapping
/// around the text length). The result may not be UTF-8 or base64.
pub fn flip_bit(token: &str, bit: usize) -> Vec<u8> {
    let mut b = token.as_bytes().to_vec();
    if !b.is_empty() {
        let i = (bit / 8) % b.len();
        b[i] ^= 1 << (bit % 8);
    }
    b
}

/// Decodes the token, flips bit `bit` of the binary envelope (wrapping),
/// and re-encodes canonically: the base64 stays valid, the content does not.
/// Returns `None` if the token does not decode.
pub fn flip_decoded_bit(token: &str, bit: usize) -> Option<String> {
    let mut b = URL_SAFE_NO_PAD.decode(token).ok()?;
    if b.is_empty() {
        return None;
    }
    let i = (bit / 8) % b.len();
    b[i] ^= 1 << (bit % 8);
    Some(URL_SAFE_NO_PAD.encode(b))
}

/// The first `n` characters (all of it if shorter).
pub fn truncate(token: &str, n: usize) -> String {
    token.get(..n.min(token.len())).unwrap_or(token).to_owned()
}

/// The token followed by `extra`.
pub fn extend(token: &str, extra: &[u8]) -> Vec<u8> {
    let mut b = token.as_bytes().to_vec();
    b.extend_from_slice(extra);
    b
}

/// The same bytes re-encoded as base64url **with** `=` padding.
pub fn with_padding(token: &str) -> Option<String> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .map(|b| URL_SAFE.encode(b))
}

/// The same bytes re-encoded as standard base64 (`+`, `/`, padding).
pub fn to_standard_base64(token: &str) -> Option<String> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .map(|b| STANDARD.encode(b))
}

/// `a`'s first `at` decoded bytes followed by the rest of `b`, re-encoded:
/// a header or body from one token with the tail of another.
pub fn splice(a: &str, b: &str, at: usize) -> Option<String> {
    let a = URL_SAFE_NO_PAD.decode(a).ok()?;
    let b = URL_SAFE_NO_PAD.decode(b).ok()?;
    let mut out = a[..at.min(a.len())].to_vec();
    out.extend_from_slice(&b[at.min(b.len())..]);
    Some(URL_SAFE_NO_PAD.encode(out))
}

/// Replaces the decoded byte at `index` (if in range) and re-encodes; use
/// to set a header field such as the version (0) or algorithm (5).
pub fn set_decoded_byte(token: &str, index: usize, value: u8) -> Option<String> {
    let mut b = URL_SAFE_NO_PAD.decode(token).ok()?;
    *b.get_mut(index)? = value;
    Some(URL_SAFE_NO_PAD.encode(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_change_and_never_panic() {
        let t = "AQAAAAAB";
        assert_ne!(flip_bit(t, 3), t.as_bytes());
        assert_eq!(flip_bit("", 3), Vec::<u8>::new());
        assert_eq!(truncate(t, 100), t);
        assert_eq!(truncate(t, 2), "AQ");
        assert_eq!(extend(t, b"A").len(), t.len() + 1);
        assert_eq!(with_padding("AQ").as_deref(), Some("AQ=="));
        assert_eq!(to_standard_base64("-_-_").as_deref(), Some("+/+/"));
        assert_eq!(splice("AAAA", "____", 1).as_deref(), Some("AP__"));
        assert_ne!(flip_decoded_bit(t, 0).as_deref(), Some(t));
        assert_eq!(flip_decoded_bit("*", 0), None);
        assert_eq!(set_decoded_byte(t, 99, 1), None);
        assert_eq!(set_decoded_byte("AAAA", 0, 1).as_deref(), Some("AQAA"));
    }
}
