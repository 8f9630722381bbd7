//! Masking of secrets before they are stored, e.g. `sk-live-…9f2c`.

/// Masks `secret` for display and storage: keeps a short prefix up to the
/// first `-` or `_` (at most 8 characters, only when the secret is long
/// enough) and the last four characters; short secrets become `…` alone.
pub fn mask_secret(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() < 12 {
        return "…".to_owned();
    }
    let prefix: String = match chars.iter().take(9).position(|c| *c == '-' || *c == '_') {
        Some(end) => chars[..=end].iter().collect(),
        None => String::new(),
    };
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{prefix}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::mask_secret;

    #[test]
    fn keeps_prefix_and_last_four() {
        assert_eq!(mask_secret("sk-abcdefghijkl9f2c"), "sk-…9f2c");
        assert_eq!(mask_secret("abcdefghijklmnop"), "…mnop");
    }

    #[test]
    fn short_secrets_reveal_nothing() {
        assert_eq!(mask_secret("hunter2"), "…");
        assert_eq!(mask_secret(""), "…");
    }

    #[test]
    fn never_contains_the_middle() {
        let s = "sk-ThisIsTheSecretMiddlePart1234";
        assert!(!mask_secret(s).contains("Secret"));
    }
}
