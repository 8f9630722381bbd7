//! `requestState` sealing for MRTR servers.
//!
//! A server hands the client an opaque `requestState` and must trust it again
//! on the retry. The spec (digest §4.7 S7/S8) says: treat it as
//! attacker-controlled, protect its integrity, bind it to the principal, the
//! originating request and a short expiry, and enforce single use on the
//! server where an action must not repeat. This module does all four.
//!
//! # Pieces
//!
//! - [`Claims`]: what every state carries (principal, client id, request
//!   digest, issued/expires, nonce, round, payload).
//! - [`request_digest`] / [`canonical_json`]: the origin-request binding.
//! - [`CodecName`] / [`StateCodec`]: six codecs behind one trait.
//! - [`KeyRing`]: keys by id from a file or environment variable; rotation.
//! - [`Sealer`]: seal with the current key, open with any listed key, check
//!   size, tag, time window and [`Binding`]. Errors are [`StateError`], one
//!   kind per reason.
//! - [`ReplayGuard`] / [`MemoryReplayGuard`]: single use.
//! - [`OpenedClaims`]: what [`Sealer::open`] returns (owned, one buffer).
//! - [`base64url`]: strict SIMD decoding of the token text.
//! - [`tamper`]: deterministic mutations for tests, fuzzing and checks.
//! - [`primitive`]: the raw algorithms, for known-answer tests and benches.
//!
//! # Token format (version 1)
//!
//! The token is the base64url encoding, **without padding**, of:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | version = 1 |
//! | 1 | 4 | key id, u32 big-endian |
//! | 5 | 1 | algorithm: 1 hmac-sha256, 2 blake3-keyed, 3 aes-256-gcm, 4 aes-256-gcm-siv, 5 chacha20-poly1305, 6 xchacha20-poly1305 |
//! | 6 | 0 / 12 / 24 | random AEAD nonce (none for the two MAC codecs; 24 for XChaCha) |
//! | … | n | claims record (below): plaintext for MACs, ciphertext for AEADs |
//! | end − t | 32 / 16 | tag: HMAC-SHA256 or BLAKE3 over bytes 0..end−32; AEAD tag with bytes 0..6 as associated data |
//!
//! Claims record (fixed binary layout, all integers big-endian, no JSON):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | issued_at (Unix ms) |
//! | 8 | 8 | expires_at (Unix ms) |
//! | 16 | 16 | nonce |
//! | 32 | 4 | round |
//! | 36 | 32 | request digest |
//! | 68 | 1 | flags: bit 0 = client id present; other bits must be 0 |
//! | 69 | 2 | principal length P |
//! | 71 | 2 | client id length C (0 when absent) |
//! | 73 | 4 | payload length L |
//! | 77 | P, C, L | principal (UTF-8), client id (UTF-8), payload |
//!
//! The record must be exactly 77 + P + C + L bytes. Keys are derived per
//! codec from the master key (see [`codec`]). A 256-byte payload with an
//! 11-byte principal and a 9-byte client id gives 522 characters (MAC
//! codecs), 516 (96-bit-nonce AEADs) or 532 (XChaCha).
//!
//! # Opening
//!
//! [`Sealer::open`] checks, in order, and stops at the first failure:
//! length ≤ `max_token_len` (`TooLarge`, before decoding) → canonical
//! base64url (`Malformed`) → version (`UnsupportedVersion`) → algorithm
//! byte equals the configured codec (`Malformed`) → key id in the ring
//! (`UnknownKey`) → tag, compared in constant time (`BadTag`) → claims layout
//! (`Malformed`) → `issued_at ≤ now + skew` (`NotYetValid`) →
//! `now < expires_at` (`Expired`; the skew never extends a lifetime) →
//! principal (`WrongPrincipal`) →
//! request digest (`WrongRequest`). `Replayed` comes from a [`ReplayGuard`],
//! see [`Sealer::open_once`].
//!
//! `open` returns [`OpenedClaims`]: the one buffer the token was decoded
//! (and decrypted) into, with every claim read from it in place, so an
//! owned open allocates once and copies nothing after the decode.
//! [`Sealer::open_in`] decodes into a caller's buffer and returns borrowed
//! [`ClaimsRef`] (no allocation at all once the buffer has grown).
//!
//! # Speed
//!
//! What `open` costs beyond the primitive (`benches/state_codec.rs`, groups
//! `open/`, `open_in/` and `floor/`: the floor is the same primitive on the
//! same backend over the same decoded envelope bytes). Medians in ns, 256-byte
//! payload, one criterion run (`-- '^(open|open_in|floor)/.*/256$'
//! --warm-up-time 1 --measurement-time 3`) on 2 shared AMD EPYC cores with
//! AVX-512 VBMI, VAES and SHA-NI:
//!
//! | codec | open (owned) | open_in (borrowed) | floor | open/floor | open_in/floor |
//! |---|---|---|---|---|---|
//! | hmac-sha256 | 336 | 314 | 281 | 1.20 | 1.12 |
//! | blake3-keyed | 482 | 474 | 420 | 1.15 | 1.13 |
//! | aes-256-gcm | 194 | 191 | 163 | 1.19 | 1.17 |
//! | aes-256-gcm-siv | 342 | 326 | 309 | 1.10 | 1.05 |
//! | chacha20-poly1305 | 349 | 375 | 313 | 1.11 | 1.20 |
//! | xchacha20-poly1305 | 542 | 495 | 464 | 1.17 | 1.06 |
//!
//! A second run right before it gave ratios 1.07–1.30 (open) and 1.06–1.16
//! (open_in). Before the SIMD decoder and [`OpenedClaims`] (same machine,
//! same session): open/floor 1.71 (HMAC-SHA256) and 1.89 (AES-256-GCM).
//!
//! The bench ends with a targets table from the same run's medians: per codec
//! open ÷ floor (target ≤ 1.2) and rmcp's open ÷ ours (target ≥ 2.5, or, where
//! the primitive alone makes that impossible, rmcp ÷ floor ÷ 1.2: the best a
//! codec within 1.2× of its primitive can do), each row `ok` or `MISS`.
//!
//! The text is decoded by [`base64url`] (AVX-512 VBMI or AVX2, strict); MAC
//! tags are compared word-wise in constant time; the claims layout is parsed
//! in place. Noise between runs on the shared machine is ±10 %; only the
//! ratios within one run mean anything.
//!
//! # Nonces
//!
//! AEAD nonces are drawn from a CSPRNG (`rand::rng()`) per seal.
//! AES-256-GCM and ChaCha20-Poly1305 use 96-bit nonces, so each key seals at
//! most [`codec::RANDOM_96BIT_NONCE_BOUND`] (2^32) states, after which
//! `seal` refuses until the key is rotated. AES-256-GCM-SIV (a repeated
//! nonce reveals only that two identical claims were sealed) and
//! XChaCha20-Poly1305 (192-bit nonces) are the codecs meant for random
//! nonces at any volume.

pub mod base64url;
pub mod claims;
pub mod codec;
pub mod cpu;
pub mod digest;
pub mod envelope;
pub mod error;
pub mod keyring;
pub mod measure;
pub mod opened;
pub mod primitive;
pub mod replay;
pub mod sealer;
pub mod tamper;

pub use claims::{Claims, ClaimsRef};
pub use codec::{CodecName, SealError, StateCodec};
pub use digest::{CanonicalError, canonical_json, request_digest};
pub use error::{ConfigError, KeyError, StateError};
pub use keyring::KeyRing;
pub use opened::OpenedClaims;
pub use replay::{MemoryReplayGuard, ReplayGuard};
pub use sealer::{Binding, Sealer, SealerConfig};

/// Current system time in Unix milliseconds (0 if the clock is before 1970).
pub use crate::clock::now_ms;
