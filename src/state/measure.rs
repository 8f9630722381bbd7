//! A quick on-machine measurement of every codec, for `elicitkit state
//! bench`: token size, seal and open time for one payload size.
//!
//! This is a rough, robust estimate (median of short batches), not a
//! criterion run; `benches/state_codec.rs` is the rigorous one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::{Binding, Claims, CodecName, KeyRing, Sealer, SealerConfig};

/// One codec's numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Which codec.
    pub codec: CodecName,
    /// Token length in characters.
    pub token_len: usize,
    /// Median nanoseconds per seal.
    pub seal_ns: f64,
    /// Median nanoseconds per open (owned claims, binding checked).
    pub open_ns: f64,
}

/// Typical claims: a short principal and client id, `payload_len` bytes.
pub fn typical_claims(payload_len: usize, now_ms: u64) -> Claims {
    Claims {
        principal: "user-7f3a9c".into(),
        client_id: Some("client-12".into()),
        request_digest: [0xd1; 32],
        issued_at: now_ms,
        expires_at: now_ms + 600_000,
        nonce: [0x17; 16],
        round: 1,
        payload: (0..payload_len).map(|i| (i * 31 % 251) as u8).collect(),
    }
}

/// Median ns/op of `f` over batches, spending about `budget`.
fn time_per_op(budget: Duration, mut f: impl FnMut()) -> f64 {
    // Calibrate a batch to ~1/20 of the budget (at least 1 op).
    let t = Instant::now();
    f();
    let one = t.elapsed().max(Duration::from_nanos(20));
    let batch = ((budget / 20).as_nanos() / one.as_nanos()).clamp(1, 1_000_000) as u32;
    let mut samples = Vec::with_capacity(20);
    let start = Instant::now();
    while samples.len() < 5 || (start.elapsed() < budget && samples.len() < 200) {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        samples.push(t.elapsed().as_nanos() as f64 / f64::from(batch));
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Measures `codec` with a fresh random key. `budget` is per operation.
pub fn measure(codec: CodecName, payload_len: usize, budget: Duration) -> Measurement {
    let ring = KeyRing::generate();
    let sealer = match Sealer::new(
        &ring,
        codec,
        SealerConfig {
            max_token_len: 1 << 20,
            ..SealerConfig::default()
        },
    ) {
        Ok(s) => s,
        Err(_) => unreachable!("a generated ring and a 1 MiB cap are valid"),
    };
    let now = super::now_ms();
    let claims = typical_claims(payload_len, now);
    let token = sealer.seal(&claims).unwrap_or_default();
    let digest = claims.request_digest;
    let binding = Binding {
        principal: &claims.principal,
        request_digest: &digest,
    };
    let seal_ns = time_per_op(budget, || {
        let _ = black_box(sealer.seal(black_box(&claims)));
    });
    let open_ns = time_per_op(budget, || {
        let _ = black_box(sealer.open(black_box(&token), &binding, now));
    });
    Measurement {
        codec,
        token_len: token.len(),
        seal_ns,
        open_ns,
    }
}

/// A one-line recommendation for `codec`.
pub fn recommendation(codec: CodecName) -> &'static str {
    match codec {
        CodecName::HmacSha256 => "default when clients may read the state: standard MAC, no nonce",
        CodecName::Blake3Keyed => {
            "integrity only; fastest on large payloads, less standard than HMAC"
        }
        CodecName::Aes256Gcm => {
            "confidential, fast with AES-NI; random nonces: ≤2^32 seals per key"
        }
        CodecName::Aes256GcmSiv => "pick for secrets in state: misuse resistant, near GCM speed",
        CodecName::ChaCha20Poly1305 => "confidential without AES hardware; ≤2^32 seals per key",
        CodecName::XChaCha20Poly1305 => {
            "confidential, 192-bit random nonces; best choice without AES-NI"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_every_codec_with_positive_numbers() {
        for codec in CodecName::ALL {
            let m = measure(codec, 64, Duration::from_millis(2));
            assert_eq!(m.codec, codec);
            assert!(m.token_len > 100, "{codec}: {}", m.token_len);
            assert!(m.seal_ns > 0.0 && m.open_ns > 0.0);
            assert!(!recommendation(codec).is_empty());
        }
    }
}
