//! The raw cryptographic primitives under the codecs, one backend each.
//!
//! Backends were chosen by measurement (`cargo bench --bench state_codec --
//! backend`, open of a 352-byte record, see the table in [`crate::state`]):
//!
//! | primitive | backend |
//! |---|---|
//! | HMAC-SHA256 | BACKEND_HMAC |
//! | BLAKE3 keyed | `blake3` (only implementation) |
//! | AES-256-GCM | BACKEND_GCM |
//! | AES-256-GCM-SIV | BACKEND_SIV |
//! | ChaCha20-Poly1305 | BACKEND_CHACHA |
//! | XChaCha20-Poly1305 | RustCrypto `chacha20poly1305` (only implementation) |
//!
//! This layer does no framing: it is what the known-answer tests and the
//! bench "floor" exercise, so codec overhead is measured against it.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};

/// HMAC-SHA256 with the key schedule (inner/outer pads) computed once.
pub struct HmacSha256(ring::hmac::Key);

impl HmacSha256 {
    /// Prepares a key of any length (RFC 2104).
    pub fn new(key: &[u8]) -> Self {
        HmacSha256(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key))
    }

    /// Tag over the concatenation of `parts`.
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut ctx = ring::hmac::Context::with_key(&self.0);
        for p in parts {
            ctx.update(p);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }
}

/// BLAKE3 in keyed mode (a PRF/MAC with a 32-byte key).
pub struct Blake3Keyed(blake3::Hasher);

impl Blake3Keyed {
    /// Prepares the keyed hasher once; it is cloned per tag.
    pub fn new(key: &[u8; 32]) -> Self {
        Blake3Keyed(blake3::Hasher::new_keyed(key))
    }

    /// Tag over the concatenation of `parts`.
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut h = self.0.clone();
        for p in parts {
            h.update(p);
        }
        *h.finalize().as_bytes()
    }
}

/// The AEAD algorithms the codecs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AeadAlg {
    /// AES-256-GCM, 96-bit nonce.
    Aes256Gcm,
    /// AES-256-GCM-SIV (RFC 8452), 96-bit nonce, nonce-misuse resistant.
    Aes256GcmSiv,
    /// ChaCha20-Poly1305 (RFC 8439), 96-bit nonce.
    ChaCha20Poly1305,
    /// XChaCha20-Poly1305, 192-bit nonce.
    XChaCha20Poly1305,
}

impl AeadAlg {
    /// Nonce length in bytes.
    pub fn nonce_len(self) -> usize {
        match self {
            AeadAlg::XChaCha20Poly1305 => 24,
            _ => 12,
        }
    }
}

/// Length of every AEAD tag used here.
pub const AEAD_TAG_LEN: usize = 16;

enum AeadInner {
    AwsLc(aws_lc_rs::aead::LessSafeKey),
    Ring(ring::aead::LessSafeKey),
    XChaCha(Box<chacha20poly1305::XChaCha20Poly1305>),
}

/// An AEAD key with its schedule expanded once.
pub struct AeadKey {
    alg: AeadAlg,
    inner: AeadInner,
}

/// The AEAD rejected its input (wrong tag, wrong lengths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AeadFailure;

fn aws(alg: &'static aws_lc_rs::aead::Algorithm, key: &[u8; 32]) -> AeadInner {
    match aws_lc_rs::aead::UnboundKey::new(alg, key) {
        Ok(k) => AeadInner::AwsLc(aws_lc_rs::aead::LessSafeKey::new(k)),
        // A 32-byte key is always accepted by these algorithms.
        Err(_) => unreachable!("aws-lc-rs refused a 32-byte key"),
    }
}

#[allow(dead_code)]
fn ring_key(alg: &'static ring::aead::Algorithm, key: &[u8; 32]) -> AeadInner {
    match ring::aead::UnboundKey::new(alg, key) {
        Ok(k) => AeadInner::Ring(ring::aead::LessSafeKey::new(k)),
        Err(_) => unreachable!("ring refused a 32-byte key"),
    }
}

impl AeadKey {
    /// Expands `key` for `alg`.
    pub fn new(alg: AeadAlg, key: &[u8; 32]) -> Self {
        let inner = match alg {
            AeadAlg::Aes256Gcm => aws(&aws_lc_rs::aead::AES_256_GCM, key),
            AeadAlg::Aes256GcmSiv => aws(&aws_lc_rs::aead::AES_256_GCM_SIV, key),
            AeadAlg::ChaCha20Poly1305 => aws(&aws_lc_rs::aead::CHACHA20_POLY1305, key),
            AeadAlg::XChaCha20Poly1305 => AeadInner::XChaCha(Box::new(
                chacha20poly1305::XChaCha20Poly1305::new(key.into()),
            )),
        };
        AeadKey { alg, inner }
    }

    /// The algorithm of this key.
    pub fn alg(&self) -> AeadAlg {
        self.alg
    }

    /// Encrypts `buf` in place and returns the tag. `nonce` must be
    /// `alg().nonce_len()` bytes.
    pub fn seal_in_place(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; AEAD_TAG_LEN], AeadFailure> {
        if nonce.len() != self.alg.nonce_len() {
            return Err(AeadFailure);
        }
        let mut out = [0u8; AEAD_TAG_LEN];
        match &self.inner {
            AeadInner::AwsLc(k) => {
                let n = aws_lc_rs::aead::Nonce::try_assume_unique_for_key(nonce)
                    .map_err(|_| AeadFailure)?;
                let tag = k
                    .seal_in_place_separate_tag(n, aws_lc_rs::aead::Aad::from(aad), buf)
                    .map_err(|_| AeadFailure)?;
                out.copy_from_slice(tag.as_ref());
            }
            AeadInner::Ring(k) => {
                let n =
                    ring::aead::Nonce::try_assume_unique_for_key(nonce).map_err(|_| AeadFailure)?;
                let tag = k
                    .seal_in_place_separate_tag(n, ring::aead::Aad::from(aad), buf)
                    .map_err(|_| AeadFailure)?;
                out.copy_from_slice(tag.as_ref());
            }
            AeadInner::XChaCha(k) => {
                let tag = k
                    .encrypt_in_place_detached(nonce.into(), aad, buf)
                    .map_err(|_| AeadFailure)?;
                out.copy_from_slice(&tag);
            }
        }
        Ok(out)
    }

    /// Verifies `tag` and decrypts `buf` in place. On failure `buf`'s
    /// content is unspecified.
    pub fn open_in_place(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8],
    ) -> Result<(), AeadFailure> {
        if nonce.len() != self.alg.nonce_len() || tag.len() != AEAD_TAG_LEN {
            return Err(AeadFailure);
        }
        match &self.inner {
            AeadInner::AwsLc(k) => {
                let n = aws_lc_rs::aead::Nonce::try_assume_unique_for_key(nonce)
                    .map_err(|_| AeadFailure)?;
                k.open_in_place_separate_tag(n, aws_lc_rs::aead::Aad::from(aad), tag, buf)
                    .map(|_| ())
                    .map_err(|_| AeadFailure)
            }
            AeadInner::Ring(k) => {
                let n =
                    ring::aead::Nonce::try_assume_unique_for_key(nonce).map_err(|_| AeadFailure)?;
                let t = ring::aead::Tag::try_from(tag).map_err(|_| AeadFailure)?;
                k.open_in_place_separate_tag(n, ring::aead::Aad::from(aad), t, buf, 0..)
                    .map(|_| ())
                    .map_err(|_| AeadFailure)
            }
            AeadInner::XChaCha(k) => k
                .decrypt_in_place_detached(nonce.into(), aad, buf, tag.into())
                .map_err(|_| AeadFailure),
        }
    }
}
