//! Key rings: several keys by id, the first one current.
//!
//! # Format (file or environment variable)
//!
//! UTF-8 text, one key per line, `#` comments and blank lines ignored:
//!
//! ```text
//! # current key first; older keys stay listed until their states expire
//! 2:3q2-7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
//! 1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8
//! ```
//!
//! Each line is `kid:key` where `kid` is a decimal `u32` and `key` is
//! base64url (padding optional). A text holding exactly one line with no
//! `kid:` is a bare key with kid 0. A file that is not UTF-8 text is taken
//! as one raw binary key with kid 0. Every key must be at least 32 bytes;
//! anything else is refused with a [`KeyError`] saying why.
//!
//! Rotation: put the new key on the first line and keep the old ones below
//! until the longest TTL has passed; states in flight keep opening.

use std::fmt;
use std::path::Path;

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use rand::RngCore;
use zeroize::Zeroizing;

use super::error::KeyError;

/// Minimum key length in bytes.
pub const MIN_KEY_LEN: usize = 32;

const LENIENT_URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Keys by id; the first is the one new states are sealed with.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<(u32, Zeroizing<Vec<u8>>)>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("kids", &self.kids().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// A ring of `(kid, key)` pairs, the first current. Refuses an empty
    /// list, short keys and duplicate ids.
    pub fn from_keys(keys: impl IntoIterator<Item = (u32, Vec<u8>)>) -> Result<Self, KeyError> {
        let mut out: Vec<(u32, Zeroizing<Vec<u8>>)> = Vec::new();
        for (kid, key) in keys {
            let key = Zeroizing::new(key);
            if key.len() < MIN_KEY_LEN {
                return Err(KeyError::TooShort {
                    kid,
                    len: key.len(),
                });
            }
            if out.iter().any(|(k, _)| *k == kid) {
                return Err(KeyError::DuplicateKid(kid));
            }
            out.push((kid, key));
        }
        if out.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(KeyRing { keys: out })
    }

    /// One fresh random 32-byte key with kid 0, for "no key given".
    pub fn generate() -> Self {
        let mut key = vec![0u8; MIN_KEY_LEN];
        rand::rng().fill_bytes(&mut key);
        KeyRing {
            keys: vec![(0, Zeroizing::new(key))],
        }
    }

    /// Parses the text format in the module docs.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if let [(line, only)] = lines.as_slice()
            && !only.contains(':')
        {
            return Self::from_keys([(0, decode_key(*line, only)?)]);
        }
        let mut keys = Vec::with_capacity(lines.len());
        for (line, l) in lines {
            let Some((kid, key)) = l.split_once(':') else {
                return Err(KeyError::BadLine {
                    line,
                    reason: "expected `kid:base64url(key)`",
                });
            };
            let kid: u32 = kid.trim().parse().map_err(|_| KeyError::BadLine {
                line,
                reason: "key id is not a decimal u32",
            })?;
            keys.push((kid, decode_key(line, key.trim())?));
        }
        Self::from_keys(keys)
    }

    /// Reads a key file (text format, or raw binary key).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let bytes = Zeroizing::new(std::fs::read(path).map_err(|source| KeyError::Io {
            path: path.to_owned(),
            source,
        })?);
        match std::str::from_utf8(&bytes) {
            Ok(text) => Self::parse(text),
            Err(_) => Self::from_keys([(0, bytes.to_vec())]),
        }
    }

    /// Reads the text format from environment variable `var`.
    pub fn from_env(var: &str) -> Result<Self, KeyError> {
        let text =
            Zeroizing::new(std::env::var(var).map_err(|_| KeyError::EnvMissing(var.to_owned()))?);
        Self::parse(&text)
    }

    /// Id of the current (sealing) key.
    pub fn current_kid(&self) -> u32 {
        self.keys[0].0
    }

    /// All key ids, current first.
    pub fn kids(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.iter().map(|(k, _)| *k)
    }

    /// `(kid, key bytes)` pairs, current first.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.keys.iter().map(|(k, v)| (*k, v.as_slice()))
    }
}

fn decode_key(line: usize, b64: &str) -> Result<Vec<u8>, KeyError> {
    LENIENT_URL.decode(b64).map_err(|_| KeyError::BadLine {
        line,
        reason: "key is not base64url",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn b64(n: usize, v: u8) -> String {
        URL_SAFE_NO_PAD.encode(vec![v; n])
    }

    #[test]
    fn parses_lines_current_first() {
        let padded = base64::engine::general_purpose::URL_SAFE.encode([2u8; 40]);
        let text = format!("# comment\n\n7:{}\n3:{padded}\n", b64(32, 1));
        let ring = KeyRing::parse(&text).unwrap();
        assert_eq!(ring.current_kid(), 7);
        assert_eq!(ring.kids().collect::<Vec<_>>(), vec![7, 3]);
        assert_eq!(ring.iter().nth(1).unwrap().1, &[2u8; 40][..]);
    }

    #[test]
    fn bare_key_is_kid_zero() {
        let ring = KeyRing::parse(&b64(32, 9)).unwrap();
        assert_eq!(ring.current_kid(), 0);
    }

    #[test]
    fn refuses_bad_input() {
        assert!(matches!(
            KeyRing::parse(&b64(31, 1)),
            Err(KeyError::TooShort { kid: 0, len: 31 })
        ));
        assert!(matches!(KeyRing::parse(""), Err(KeyError::Empty)));
        assert!(matches!(
            KeyRing::parse("x:abc"),
            Err(KeyError::BadLine { line: 1, .. })
        ));
        assert!(matches!(
            KeyRing::parse("1:***"),
            Err(KeyError::BadLine { .. })
        ));
        let dup = format!("1:{}\n1:{}", b64(32, 1), b64(32, 2));
        assert!(matches!(
            KeyRing::parse(&dup),
            Err(KeyError::DuplicateKid(1))
        ));
        let mixed = format!("{}\n{}", b64(32, 1), b64(32, 2));
        assert!(matches!(
            KeyRing::parse(&mixed),
            Err(KeyError::BadLine { line: 1, .. })
        ));
        assert!(matches!(
            KeyRing::from_env("ELICITKIT_TEST_SURELY_UNSET_VAR"),
            Err(KeyError::EnvMissing(_))
        ));
    }

    #[test]
    fn file_text_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        std::fs::write(&p, format!("5:{}\n", b64(32, 4))).unwrap();
        assert_eq!(KeyRing::from_file(&p).unwrap().current_kid(), 5);
        let mut raw = vec![0xffu8; 32];
        raw[0] = 0xfe;
        std::fs::write(&p, &raw).unwrap();
        let r = KeyRing::from_file(&p).unwrap();
        assert_eq!(r.iter().next().unwrap().1, &raw[..]);
        assert!(matches!(
            KeyRing::from_file(dir.path().join("missing")),
            Err(KeyError::Io { .. })
        ));
        let g = KeyRing::generate();
        assert_eq!(g.iter().next().unwrap().1.len(), 32);
    }
}
