//! The codecs that seal a claims record into an envelope body, behind one
//! trait ([`StateCodec`]) and selectable by name ([`CodecName`]).
//!
//! Each codec instance holds one derived key with its schedule precomputed.
//! The per-codec key is `HMAC-SHA256(master key, "elicitkit/request-state/v1/"
//! || codec name)`, so one master key used with two codecs never shares a key.
//!
//! The envelope header (version, key id, algorithm) is always authenticated:
//! it is the HMAC/BLAKE3 prefix or the AEAD associated data.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::RngCore;
use zeroize::Zeroizing;

use super::error::{ConfigError, StateError};
use super::primitive::{AEAD_TAG_LEN, AeadAlg, AeadKey, Blake3Keyed, HmacSha256};

/// Per-key message bound for codecs with random 96-bit nonces (AES-GCM,
/// ChaCha20-Poly1305): 2^32 seals, the NIST SP 800-38D §8.3 limit for random
/// IVs (collision probability below 2^-32). Past it, `seal` refuses with
/// [`SealError::KeyExhausted`]; rotate the key.
pub const RANDOM_96BIT_NONCE_BOUND: u64 = 1 << 32;

/// The six codecs, by their stable names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodecName {
    /// `hmac-sha256`: integrity only, claims readable by the client.
    HmacSha256,
    /// `blake3-keyed`: integrity only, claims readable by the client.
    Blake3Keyed,
    /// `aes-256-gcm`: confidential; random 96-bit nonce (bounded per key).
    Aes256Gcm,
    /// `aes-256-gcm-siv`: confidential, nonce-misuse resistant.
    Aes256GcmSiv,
    /// `chacha20-poly1305`: confidential; random 96-bit nonce (bounded per key).
    ChaCha20Poly1305,
    /// `xchacha20-poly1305`: confidential; random 192-bit nonce.
    XChaCha20Poly1305,
}

impl CodecName {
    /// Every codec, in envelope-id order.
    pub const ALL: [CodecName; 6] = [
        CodecName::HmacSha256,
        CodecName::Blake3Keyed,
        CodecName::Aes256Gcm,
        CodecName::Aes256GcmSiv,
        CodecName::ChaCha20Poly1305,
        CodecName::XChaCha20Poly1305,
    ];

    /// Stable name, as accepted by `FromStr`.
    pub fn as_str(self) -> &'static str {
        match self {
            CodecName::HmacSha256 => "hmac-sha256",
            CodecName::Blake3Keyed => "blake3-keyed",
            CodecName::Aes256Gcm => "aes-256-gcm",
            CodecName::Aes256GcmSiv => "aes-256-gcm-siv",
            CodecName::ChaCha20Poly1305 => "chacha20-poly1305",
            CodecName::XChaCha20Poly1305 => "xchacha20-poly1305",
        }
    }

    /// Algorithm byte in the envelope.
    pub fn id(self) -> u8 {
        match self {
            CodecName::HmacSha256 => 1,
            CodecName::Blake3Keyed => 2,
            CodecName::Aes256Gcm => 3,
            CodecName::Aes256GcmSiv => 4,
            CodecName::ChaCha20Poly1305 => 5,
            CodecName::XChaCha20Poly1305 => 6,
        }
    }

    /// Codec for an envelope algorithm byte.
    pub fn from_id(id: u8) -> Option<CodecName> {
        CodecName::ALL.into_iter().find(|c| c.id() == id)
    }

    /// True when the claims are encrypted (hidden from the client).
    pub fn confidential(self) -> bool {
        !matches!(self, CodecName::HmacSha256 | CodecName::Blake3Keyed)
    }

    /// True when a repeated nonce does not break security: MACs have no
    /// nonce, GCM-SIV degrades gracefully, XChaCha's 192-bit random nonces
    /// do not collide in practice.
    pub fn nonce_misuse_resistant(self) -> bool {
        !matches!(self, CodecName::Aes256Gcm | CodecName::ChaCha20Poly1305)
    }

    /// Bytes between the header and the sealed claims (the AEAD nonce).
    pub fn nonce_len(self) -> usize {
        match self.aead() {
            Some(a) => a.nonce_len(),
            None => 0,
        }
    }

    /// Length of the tag at the end of the envelope.
    pub fn tag_len(self) -> usize {
        if self.confidential() {
            AEAD_TAG_LEN
        } else {
            32
        }
    }

    fn aead(self) -> Option<AeadAlg> {
        match self {
            CodecName::HmacSha256 | CodecName::Blake3Keyed => None,
            CodecName::Aes256Gcm => Some(AeadAlg::Aes256Gcm),
            CodecName::Aes256GcmSiv => Some(AeadAlg::Aes256GcmSiv),
            CodecName::ChaCha20Poly1305 => Some(AeadAlg::ChaCha20Poly1305),
            CodecName::XChaCha20Poly1305 => Some(AeadAlg::XChaCha20Poly1305),
        }
    }

    /// Builds a codec instance for a master key (≥ 32 bytes, checked by
    /// [`crate::state::KeyRing`]).
    pub fn instantiate(self, master_key: &[u8]) -> Box<dyn StateCodec> {
        let mut label = Vec::with_capacity(48);
        label.extend_from_slice(b"elicitkit/request-state/v1/");
        label.extend_from_slice(self.as_str().as_bytes());
        let sub = Zeroizing::new(HmacSha256::new(master_key).tag(&[&label]));
        match self.aead() {
            None if self == CodecName::HmacSha256 => Box::new(MacCodec {
                name: self,
                mac: Mac::Hmac(HmacSha256::new(&sub[..])),
            }),
            None => Box::new(MacCodec {
                name: self,
                mac: Mac::Blake3(Blake3Keyed::new(&sub)),
            }),
            Some(alg) => Box::new(AeadCodec {
                name: self,
                key: AeadKey::new(alg, &sub),
                sealed: AtomicU64::new(0),
                bound: if self.nonce_misuse_resistant() {
                    u64::MAX
                } else {
                    RANDOM_96BIT_NONCE_BOUND
                },
            }),
        }
    }
}

impl fmt::Display for CodecName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CodecName {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CodecName::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| ConfigError::UnknownCodec(s.to_owned()))
    }
}

/// Why sealing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The token would exceed the configured cap, or a field exceeds its
    /// length prefix.
    #[error("sealed requestState would be too large")]
    TooLarge,
    /// This key reached its per-key message bound; rotate it.
    #[error("key reached its message bound for random 96-bit nonces; rotate the key")]
    KeyExhausted,
}

/// One codec with one key: seals a claims record after an envelope header,
/// and opens it again.
pub trait StateCodec: Send + Sync {
    /// Which codec this is.
    fn name(&self) -> CodecName;

    /// Appends `nonce? || sealed(body) || tag` to `out`, which already holds
    /// exactly the envelope header (authenticated as a prefix / AAD).
    fn seal(&self, out: &mut Vec<u8>, body: &[u8]) -> Result<(), SealError>;

    /// Verifies `env` (header followed by what `seal` appended) and returns
    /// the claims record, decrypted in place where needed. Fails with
    /// `BadTag` or `Malformed` (too short) only.
    fn open<'a>(&self, env: &'a mut [u8], header_len: usize) -> Result<&'a [u8], StateError>;
}

// Each codec lives once per key behind a Box<dyn StateCodec>: keep the
// MAC state inline (no extra indirection per tag) despite the size gap.
#[allow(clippy::large_enum_variant)]
enum Mac {
    Hmac(HmacSha256),
    Blake3(Blake3Keyed),
}

struct MacCodec {
    name: CodecName,
    mac: Mac,
}

impl MacCodec {
    fn tag(&self, parts: &[&[u8]]) -> [u8; 32] {
        match &self.mac {
            Mac::Hmac(h) => h.tag(parts),
            Mac::Blake3(b) => b.tag(parts),
        }
    }
}

impl StateCodec for MacCodec {
    fn name(&self) -> CodecName {
        self.name
    }

    fn seal(&self, out: &mut Vec<u8>, body: &[u8]) -> Result<(), SealError> {
        out.extend_from_slice(body);
        let tag = self.tag(&[out]);
        out.extend_from_slice(&tag);
        Ok(())
    }

    fn open<'a>(&self, env: &'a mut [u8], header_len: usize) -> Result<&'a [u8], StateError> {
        let Some(split) = env.len().checked_sub(32).filter(|s| *s >= header_len) else {
            return Err(StateError::Malformed("shorter than header and tag"));
        };
        let (signed, tag) = env.split_at(split);
        let expect = self.tag(&[signed]);
        if tags_equal(&expect, tag) {
            Ok(&signed[header_len..])
        } else {
            Err(StateError::BadTag)
        }
    }
}

/// Constant-time equality of a computed 32-byte tag and the token's tag:
/// XOR the four 64-bit words, OR the differences together, and decide once
/// at the end (no early exit, no data-dependent branch). `black_box` keeps
/// the compiler from turning the fold back into a short-circuit compare.
/// The tag is `signed.len()..` of a slice split at `len - 32`, so it is
/// always 32 bytes; anything else compares unequal.
fn tags_equal(expect: &[u8; 32], tag: &[u8]) -> bool {
    let Ok(tag) = <&[u8; 32]>::try_from(tag) else {
        return false;
    };
    let mut diff = 0u64;
    for (a, b) in expect.chunks_exact(8).zip(tag.chunks_exact(8)) {
        let a = u64::from_ne_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]]);
        let b = u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        diff |= std::hint::black_box(a ^ b);
    }
    diff == 0
}

struct AeadCodec {
    name: CodecName,
    key: AeadKey,
    sealed: AtomicU64,
    bound: u64,
}

impl StateCodec for AeadCodec {
    fn name(&self) -> CodecName {
        self.name
    }

    fn seal(&self, out: &mut Vec<u8>, body: &[u8]) -> Result<(), SealError> {
        if self.bound != u64::MAX && self.sealed.fetch_add(1, Ordering::Relaxed) >= self.bound {
            return Err(SealError::KeyExhausted);
        }
        let header_len = out.len();
        let nl = self.key.alg().nonce_len();
        out.resize(header_len + nl, 0);
        rand::rng().fill_bytes(&mut out[header_len..]);
        out.extend_from_slice(body);
        let (head, rest) = out.split_at_mut(header_len);
        let (nonce, buf) = rest.split_at_mut(nl);
        let tag = self
            .key
            .seal_in_place(nonce, head, buf)
            .map_err(|_| SealError::TooLarge)?;
        out.extend_from_slice(&tag);
        Ok(())
    }

    fn open<'a>(&self, env: &'a mut [u8], header_len: usize) -> Result<&'a [u8], StateError> {
        let nl = self.key.alg().nonce_len();
        let Some(tag_at) = env
            .len()
            .checked_sub(AEAD_TAG_LEN)
            .filter(|t| *t >= header_len + nl)
        else {
            return Err(StateError::Malformed("shorter than header, nonce and tag"));
        };
        let (head, rest) = env.split_at_mut(header_len);
        let (nonce, rest) = rest.split_at_mut(nl);
        let (buf, tag) = rest.split_at_mut(tag_at - header_len - nl);
        match self.key.open_in_place(nonce, head, buf, tag) {
            Ok(()) => Ok(&env[header_len + nl..tag_at]),
            Err(_) => Err(StateError::BadTag),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ids_are_unique() {
        for c in CodecName::ALL {
            assert_eq!(c.as_str().parse::<CodecName>().unwrap(), c);
            assert_eq!(c.to_string(), c.as_str());
            assert_eq!(CodecName::from_id(c.id()), Some(c));
        }
        assert!("aes-128-gcm".parse::<CodecName>().is_err());
        assert_eq!(CodecName::from_id(0), None);
        assert!(!CodecName::HmacSha256.confidential());
        assert!(CodecName::XChaCha20Poly1305.confidential());
        assert!(!CodecName::Aes256Gcm.nonce_misuse_resistant());
        assert!(CodecName::Aes256GcmSiv.nonce_misuse_resistant());
    }

    #[test]
    fn tags_equal_sees_every_byte() {
        let a = [0x5au8; 32];
        assert!(tags_equal(&a, &a));
        for i in 0..32 {
            for bit in 0..8 {
                let mut b = a;
                b[i] ^= 1 << bit;
                assert!(!tags_equal(&a, &b), "byte {i} bit {bit}");
            }
        }
        assert!(!tags_equal(&a, &a[..31]));
    }

    #[test]
    fn derived_keys_differ_per_codec() {
        // Same master key, same header and body: MAC tags must differ.
        let key = [5u8; 32];
        let mut a = vec![1, 0, 0, 0, 0, 1];
        CodecName::HmacSha256
            .instantiate(&key)
            .seal(&mut a, b"body")
            .unwrap();
        let mut b = vec![1, 0, 0, 0, 0, 1];
        CodecName::Blake3Keyed
            .instantiate(&key)
            .seal(&mut b, b"body")
            .unwrap();
        assert_ne!(a, b);
    }
}
