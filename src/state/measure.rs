//! A quick on-machine measurement of every codec, for `elicitkit state
//! bench`: token size, seal and open time for one payload size over a few
//! rounds (min, median, max), and the codec to recommend from them.
//!
//! Each round's figure is the median of short batches: a rough, robust
//! estimate, not a criterion run; `benches/state_codec.rs` is the rigorous
//! one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::cpu::CpuFeatures;
use super::{Binding, Claims, CodecName, KeyRing, Sealer, SealerConfig};

/// How many rounds `state bench` measures every codec in.
pub const REPEATS: usize = 5;

/// A spread is wide, and the host noisy, when max exceeds min by this factor.
pub const WIDE_SPREAD: f64 = 1.5;

/// Lowest, median and highest of repeated measurements (ns per operation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The lowest.
    pub min: f64,
    /// The median (mean of the middle two for an even count).
    pub median: f64,
    /// The highest.
    pub max: f64,
}

impl Spread {
    /// The spread of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let (first, last) = (*s.first()?, *s.last()?);
        let mid = s.len() / 2;
        let median = if s.len().is_multiple_of(2) {
            (s[mid - 1] + s[mid]) / 2.0
        } else {
            s[mid]
        };
        Some(Spread {
            min: first,
            median,
            max: last,
        })
    }

    /// True when `max` exceeds [`WIDE_SPREAD`] × `min`.
    pub fn is_wide(&self) -> bool {
        self.max > WIDE_SPREAD * self.min
    }
}

/// One codec's numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Which codec.
    pub codec: CodecName,
    /// Token length in characters.
    pub token_len: usize,
    /// ns per seal, over the rounds.
    pub seal_ns: Spread,
    /// ns per open (owned claims, binding checked), over the rounds.
    pub open_ns: Spread,
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

/// One codec ready to time: a sealer with a fresh random key, typical
/// claims and their token.
struct Subject {
    sealer: Sealer,
    claims: Claims,
    token: String,
    now: u64,
}

impl Subject {
    fn new(codec: CodecName, payload_len: usize) -> Self {
        let config = SealerConfig {
            max_token_len: 1 << 20,
            ..SealerConfig::default()
        };
        let Ok(sealer) = Sealer::new(&KeyRing::generate(), codec, config) else {
            unreachable!("a generated ring and a 1 MiB cap are valid")
        };
        let now = super::now_ms();
        let claims = typical_claims(payload_len, now);
        let token = sealer.seal(&claims).unwrap_or_default();
        Subject {
            sealer,
            claims,
            token,
            now,
        }
    }

    /// Median ns per seal and per open, spending about `budget` on each.
    fn time(&self, budget: Duration) -> (f64, f64) {
        let digest = self.claims.request_digest;
        let binding = Binding {
            principal: &self.claims.principal,
            request_digest: &digest,
        };
        let seal = time_per_op(budget, || {
            let _ = black_box(self.sealer.seal(black_box(&self.claims)));
        });
        let open = time_per_op(budget, || {
            let _ = black_box(self.sealer.open(black_box(&self.token), &binding, self.now));
        });
        (seal, open)
    }
}

/// Measures each of `codecs` in `repeats` rounds (every codec once per
/// round, so a burst of load on the host touches them alike), spending
/// about `budget` per codec and operation over all rounds.
pub fn measure_all(
    codecs: &[CodecName],
    payload_len: usize,
    budget: Duration,
    repeats: usize,
) -> Vec<Measurement> {
    let repeats = repeats.max(1);
    let per_round = budget / u32::try_from(repeats).unwrap_or(u32::MAX);
    let subjects: Vec<Subject> = codecs
        .iter()
        .map(|c| Subject::new(*c, payload_len))
        .collect();
    let mut samples = vec![(Vec::new(), Vec::new()); codecs.len()];
    for _ in 0..repeats {
        for (s, (seal, open)) in subjects.iter().zip(&mut samples) {
            let (a, b) = s.time(per_round);
            seal.push(a);
            open.push(b);
        }
    }
    codecs
        .iter()
        .zip(&subjects)
        .zip(&samples)
        .filter_map(|((codec, s), (seal, open))| {
            Some(Measurement {
                codec: *codec,
                token_len: s.token.len(),
                seal_ns: Spread::of(seal)?,
                open_ns: Spread::of(open)?,
            })
        })
        .collect()
}

/// The codec to use on this machine and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recommendation {
    /// The codec.
    pub codec: CodecName,
    /// Why, citing the measured medians it rests on.
    pub reason: String,
}

/// Picks one codec from measured `rows` and the CPU's features.
///
/// States that must stay secret want a confidential, nonce-misuse
/// resistant codec: aes-256-gcm-siv when AES runs in hardware, unless
/// xchacha20-poly1305's opens were all faster than its fastest;
/// xchacha20-poly1305 without AES hardware. Opens decide because a server
/// opens every state a client sends back, forged ones included. `None`
/// when either candidate is missing from `rows`.
pub fn recommend(rows: &[Measurement], cpu: &CpuFeatures) -> Option<Recommendation> {
    let row = |c| rows.iter().find(|m| m.codec == c);
    let siv = row(CodecName::Aes256GcmSiv)?;
    let xchacha = row(CodecName::XChaCha20Poly1305)?;
    let fastest = rows
        .iter()
        .min_by(|a, b| a.open_ns.median.total_cmp(&b.open_ns.median))?;
    let (pick, why) = if !cpu.aes_hardware() {
        let why = format!(
            "no {} detected, so AES runs in software; xchacha20-poly1305 needs no AES \
             hardware and draws 192-bit random nonces: open {:.0} ns median against {:.0} ns \
             for aes-256-gcm-siv",
            cpu.aes_label(),
            xchacha.open_ns.median,
            siv.open_ns.median
        );
        (xchacha, why)
    } else if xchacha.open_ns.max < siv.open_ns.min {
        let why = format!(
            "confidential and nonce-misuse resistant (192-bit random nonces), and faster here \
             even with {}: every open took at most {:.0} ns, aes-256-gcm-siv's at least {:.0} ns",
            cpu.aes_label(),
            xchacha.open_ns.max,
            siv.open_ns.min
        );
        (xchacha, why)
    } else {
        let why = format!(
            "{} present; confidential and nonce-misuse resistant, open {:.0} ns median",
            cpu.aes_label(),
            siv.open_ns.median
        );
        (siv, why)
    };
    let mut reason = format!("{why}, {}", versus_fastest(pick, fastest));
    if let Some(h) = row(CodecName::HmacSha256) {
        reason.push_str(&format!(
            ". If clients may read the claims, hmac-sha256 (open {:.0} ns median) is the \
             standard default",
            h.open_ns.median
        ));
    }
    Some(Recommendation {
        codec: pick.codec,
        reason,
    })
}

/// How `pick`'s median open compares with the fastest one measured.
fn versus_fastest(pick: &Measurement, fastest: &Measurement) -> String {
    if pick.codec == fastest.codec {
        return "the fastest open measured here".to_owned();
    }
    let caveat = if fastest.codec.nonce_misuse_resistant() {
        ""
    } else {
        " (random 96-bit nonces: at most 2^32 seals per key)"
    };
    format!(
        "{:.1}× the fastest open here, {} at {:.0} ns{caveat}",
        pick.open_ns.median / fastest.open_ns.median,
        fastest.codec,
        fastest.open_ns.median
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::cpu::CpuFlag;

    #[test]
    fn measures_every_codec_in_every_round() {
        let rows = measure_all(&CodecName::ALL, 64, Duration::from_millis(4), 2);
        assert_eq!(rows.len(), CodecName::ALL.len());
        for (m, codec) in rows.iter().zip(CodecName::ALL) {
            assert_eq!(m.codec, codec);
            assert!(m.token_len > 100, "{codec}: {}", m.token_len);
            for s in [m.seal_ns, m.open_ns] {
                assert!(
                    s.min > 0.0 && s.min <= s.median && s.median <= s.max,
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn spread_is_min_median_max() {
        let s = Spread::of(&[30.0, 10.0, 20.0, 50.0, 40.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (10.0, 30.0, 50.0));
        let even = Spread::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((even.min, even.median, even.max), (1.0, 2.5, 4.0));
        let one = Spread::of(&[7.0]).unwrap();
        assert_eq!((one.min, one.median, one.max), (7.0, 7.0, 7.0));
        assert_eq!(Spread::of(&[]), None);
        assert!(!s.is_wide() || s.max > 1.5 * s.min);
        assert!(Spread::of(&[100.0, 151.0]).unwrap().is_wide());
        assert!(!Spread::of(&[100.0, 150.0]).unwrap().is_wide());
    }

    fn cpu(aes: bool) -> CpuFeatures {
        let flag = |name, label| CpuFlag {
            name,
            label,
            present: aes,
        };
        CpuFeatures {
            arch: "x86_64",
            flags: vec![flag("aes", "AES-NI"), flag("pclmulqdq", "PCLMULQDQ")],
        }
    }

    /// Rows with the given (min, median, max) open ns per codec.
    fn rows(open: &[(CodecName, [f64; 3])]) -> Vec<Measurement> {
        open.iter()
            .map(|(codec, [min, median, max])| {
                let s = Spread {
                    min: *min,
                    median: *median,
                    max: *max,
                };
                Measurement {
                    codec: *codec,
                    token_len: 500,
                    seal_ns: s,
                    open_ns: s,
                }
            })
            .collect()
    }

    #[test]
    fn aes_hardware_recommends_gcm_siv_citing_its_median() {
        let r = rows(&[
            (CodecName::HmacSha256, [300.0, 336.0, 350.0]),
            (CodecName::Aes256Gcm, [180.0, 194.0, 200.0]),
            (CodecName::Aes256GcmSiv, [330.0, 342.0, 360.0]),
            (CodecName::XChaCha20Poly1305, [500.0, 542.0, 560.0]),
        ]);
        let rec = recommend(&r, &cpu(true)).unwrap();
        assert_eq!(rec.codec, CodecName::Aes256GcmSiv);
        for cited in [
            "AES-NI",
            "342 ns",
            "1.8×",
            "aes-256-gcm at 194 ns",
            "2^32",
            "336 ns",
        ] {
            assert!(rec.reason.contains(cited), "{cited}: {}", rec.reason);
        }
    }

    #[test]
    fn no_aes_hardware_recommends_xchacha() {
        let r = rows(&[
            (CodecName::Aes256GcmSiv, [900.0, 950.0, 990.0]),
            (CodecName::XChaCha20Poly1305, [500.0, 542.0, 560.0]),
        ]);
        let rec = recommend(&r, &cpu(false)).unwrap();
        assert_eq!(rec.codec, CodecName::XChaCha20Poly1305);
        assert!(
            rec.reason.contains("no AES-NI with PCLMULQDQ")
                && rec.reason.contains("542 ns")
                && rec.reason.contains("950 ns")
                && rec.reason.contains("the fastest open measured here"),
            "{}",
            rec.reason
        );
        assert!(!rec.reason.contains("hmac"), "no hmac row: {}", rec.reason);
    }

    #[test]
    fn xchacha_wins_with_aes_hardware_only_when_clearly_faster() {
        let clear = rows(&[
            (CodecName::Aes256GcmSiv, [600.0, 650.0, 700.0]),
            (CodecName::XChaCha20Poly1305, [400.0, 450.0, 590.0]),
        ]);
        let rec = recommend(&clear, &cpu(true)).unwrap();
        assert_eq!(rec.codec, CodecName::XChaCha20Poly1305);
        assert!(
            rec.reason.contains("590 ns") && rec.reason.contains("600 ns"),
            "{}",
            rec.reason
        );
        let overlapping = rows(&[
            (CodecName::Aes256GcmSiv, [600.0, 650.0, 700.0]),
            (CodecName::XChaCha20Poly1305, [400.0, 450.0, 610.0]),
        ]);
        let rec = recommend(&overlapping, &cpu(true)).unwrap();
        assert_eq!(rec.codec, CodecName::Aes256GcmSiv);
        assert!(rec.reason.contains("1.4×"), "{}", rec.reason);
        assert_eq!(recommend(&overlapping[..1], &cpu(true)), None);
    }
}
