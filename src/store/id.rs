//! Record ids: 128 random bits, URL-safe base64 without padding.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Length of every id [`new_id`] returns.
pub const ID_LEN: usize = 22;

/// A fresh id from the thread-local CSPRNG, safe in a URL path (`/flow/<id>`).
pub fn new_id() -> String {
    let bytes: [u8; 16] = rand::random();
    URL_SAFE_NO_PAD.encode(bytes)
}

/// True when `id` could have come from [`new_id`]; lookups of anything else
/// answer "not found" without touching storage.
pub fn is_plausible_id(id: &str) -> bool {
    id.len() == ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_url_safe_and_distinct() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert!(is_plausible_id(&a));
        assert!(!is_plausible_id("../etc/passwd"));
        assert!(!is_plausible_id(""));
    }
}
