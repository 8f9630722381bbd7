//! The raw cryptographic primitives under the codecs, one backend each.
//!
//! Backends were chosen by measurement (`cargo bench --bench state_codec --
//! backend/`: verify/decrypt of a 352-byte record, the claims of a 256-byte
//! payload; 2 shared cores with AES-NI, VAES, SHA-NI, AVX-512; median ns,
//! three runs, noisy, so ties were broken by the run majority):
//!
//! | primitive | ring | aws-lc-rs | RustCrypto | chosen |
//! |---|---|---|---|---|
//! | HMAC-SHA256 | 540–610 | 530–670 | 330–530 | RustCrypto `hmac`+`sha2` (SHA-NI), fastest in 2 of 3 runs |
//! | AES-256-GCM | 196–269 | 238–331 | 373–701 | `ring` |
//! | AES-256-GCM-SIV | n/a | 253–492 | 1040–1300 | `aws-lc-rs` |
//! | ChaCha20-Poly1305 | 452–634 | 389–589 | 2860–4070 | `aws-lc-rs` |
//! | XChaCha20-Poly1305 | n/a | n/a | 3000–4350 | HChaCha20 (RustCrypto `chacha20`) + `ring` ChaCha20-Poly1305: 665–675 |
//! | BLAKE3 keyed | | | | `blake3` (only implementation) |
//!
//! Re-measured 2026-11-30 (AES-256-GCM, same bench, one run): ring 140 ns,
//! aws-lc-rs 167 ns, RustCrypto 371 ns; ring (VAES-AVX2) stays.
//!
//! This layer does no framing: it is what the known-answer tests and the
//! bench "floor" exercise, so codec overhead is measured against it.

/// HMAC-SHA256 with the key schedule (inner/outer pads) computed once and
/// the prepared state cloned per tag.
#[derive(Clone)]
pub struct HmacSha256(hmac::Hmac<sha2::Sha256>);

impl HmacSha256 {
    /// Prepares a key of any length (RFC 2104).
    pub fn new(key: &[u8]) -> Self {
        use hmac::Mac;
        match hmac::Hmac::<sha2::Sha256>::new_from_slice(key) {
            Ok(m) => HmacSha256(m),
            // HMAC accepts keys of every length.
            Err(_) => unreachable!("HMAC refused a key"),
        }
    }

    /// Tag over the concatenation of `parts`.
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; 32] {
        use hmac::Mac;
        let mut m = self.0.clone();
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().into()
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

// One per key, built once: inline keys (no extra indirection per
// operation) matter more than the size gap between variants.
#[allow(clippy::large_enum_variant)]
enum AeadInner {
    AwsLc(aws_lc_rs::aead::LessSafeKey),
    Ring(ring::aead::LessSafeKey),
    /// HChaCha20 subkey per message, then ChaCha20-Poly1305 from `ring`
    /// with nonce `0^4 || nonce[16..24]` (draft-irtf-cfrg-xchacha §2.3).
    XChaCha(zeroize::Zeroizing<[u8; 32]>),
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

/// XChaCha20 = HChaCha20(key, nonce[..16]) as the ChaCha20-Poly1305 key,
/// with 96-bit nonce `0^4 || nonce[16..24]`. `nonce` is 24 bytes (checked).
fn xchacha_subkey(key: &[u8; 32], nonce: &[u8]) -> (ring::aead::LessSafeKey, ring::aead::Nonce) {
    let mut hn = [0u8; 16];
    hn.copy_from_slice(&nonce[..16]);
    let sub = zeroize::Zeroizing::new(<[u8; 32]>::from(chacha20::hchacha::<
        chacha20::cipher::consts::U10,
    >(key.into(), &hn.into())));
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&nonce[16..24]);
    let key = match ring::aead::UnboundKey::new(&ring::aead::CHACHA20_POLY1305, &sub[..]) {
        Ok(k) => ring::aead::LessSafeKey::new(k),
        Err(_) => unreachable!("ring refused a 32-byte key"),
    };
    (key, ring::aead::Nonce::assume_unique_for_key(n))
}

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
            AeadAlg::Aes256Gcm => ring_key(&ring::aead::AES_256_GCM, key),
            AeadAlg::Aes256GcmSiv => aws(&aws_lc_rs::aead::AES_256_GCM_SIV, key),
            AeadAlg::ChaCha20Poly1305 => aws(&aws_lc_rs::aead::CHACHA20_POLY1305, key),
            AeadAlg::XChaCha20Poly1305 => AeadInner::XChaCha(zeroize::Zeroizing::new(*key)),
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
                let (sub, n) = xchacha_subkey(k, nonce);
                let tag = sub
                    .seal_in_place_separate_tag(n, ring::aead::Aad::from(aad), buf)
                    .map_err(|_| AeadFailure)?;
                out.copy_from_slice(tag.as_ref());
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
            AeadInner::XChaCha(k) => {
                let (sub, n) = xchacha_subkey(k, nonce);
                let t = ring::aead::Tag::try_from(tag).map_err(|_| AeadFailure)?;
                sub.open_in_place_separate_tag(n, ring::aead::Aad::from(aad), t, buf, 0..)
                    .map(|_| ())
                    .map_err(|_| AeadFailure)
            }
        }
    }
}
