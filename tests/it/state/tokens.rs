//! Seal/open behaviour of every codec: round trips, tampering (with the
//! exact error kind each mutation must produce), binding, time window,
//! rotation, size cap and single use.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elicitkit::state::envelope::HEADER_LEN;
use elicitkit::state::{
    Binding, Claims, CodecName, KeyRing, MemoryReplayGuard, OpenedClaims, SealError, Sealer,
    SealerConfig, StateError, request_digest, tamper,
};
use serde_json::json;

const NOW: u64 = 1_800_000_000_000;

fn ring(kid: u32, byte: u8) -> KeyRing {
    KeyRing::from_keys([(kid, vec![byte; 32])]).unwrap()
}

fn sealer(codec: CodecName, ring: &KeyRing) -> Sealer {
    Sealer::new(ring, codec, SealerConfig::default()).unwrap()
}

fn digest() -> [u8; 32] {
    request_digest("tools/call", "get_weather", &json!({"location": "NY"})).unwrap()
}

fn claims(s: &Sealer, payload_len: usize) -> Claims {
    let payload = (0..payload_len).map(|i| (i % 251) as u8).collect();
    s.claims("alice", Some("client-1"), digest(), 1, payload, NOW)
}

fn kind(r: Result<OpenedClaims, StateError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.kind(),
    }
}

#[test]
fn round_trip_every_codec_and_size() {
    let r = ring(0, 1);
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        for len in [0, 64, 256, 1024, 4096] {
            let c = claims(&s, len);
            let t = s.seal(&c).unwrap();
            assert_eq!(t.len(), s.token_len(&c), "{codec} predicted length");
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
            let d = digest();
            let b = Binding {
                principal: "alice",
                request_digest: &d,
            };
            assert_eq!(s.open(&t, &b, NOW + 1).unwrap(), c, "{codec} {len}");
        }
    }
}

#[test]
fn confidential_codecs_hide_claims_and_mac_codecs_show_them() {
    let r = ring(0, 1);
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        let mut c = claims(&s, 0);
        c.payload = b"SECRET-ANSWER-42".to_vec();
        let bin = URL_SAFE_NO_PAD.decode(s.seal(&c).unwrap()).unwrap();
        let visible = bin.windows(16).any(|w| w == b"SECRET-ANSWER-42");
        assert_eq!(visible, !codec.confidential(), "{codec}");
    }
}

/// What opening a mutated token must fail with, from its decoded bytes.
fn expected(s: &Sealer, mutated: &[u8], kids: &[u32]) -> &'static str {
    let Ok(d) = URL_SAFE_NO_PAD.decode(mutated) else {
        return "malformed";
    };
    if d.len() < HEADER_LEN {
        return "malformed";
    }
    if d[0] != 1 {
        return "unsupported_version";
    }
    if CodecName::from_id(d[5]) != Some(s.codec()) {
        return "malformed";
    }
    let kid = u32::from_be_bytes([d[1], d[2], d[3], d[4]]);
    if !kids.contains(&kid) {
        return "unknown_key";
    }
    if d.len() < HEADER_LEN + s.codec().nonce_len() + s.codec().tag_len() {
        return "malformed";
    }
    "bad_tag"
}

#[test]
fn every_bit_flip_truncation_and_extension_is_rejected_with_the_right_kind() {
    let r = ring(0, 2);
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        let t = s.seal(&claims(&s, 256)).unwrap();
        let mut seen = std::collections::BTreeMap::<&str, usize>::new();
        for bit in 0..t.len() * 8 {
            let m = tamper::flip_bit(&t, bit);
            let got = kind(s.open_bytes(&m, &b, NOW));
            assert_eq!(got, expected(&s, &m, &[0]), "{codec} text bit {bit}");
            *seen.entry(got).or_default() += 1;
        }
        // Flips in the characters covering body and tag must be BadTag.
        assert!(seen["bad_tag"] > t.len() * 3, "{codec}: {seen:?}");
        assert!(seen["malformed"] > 0, "{codec}: {seen:?}");
        for bit in 0..(t.len() * 6 / 8) * 8 {
            let m = tamper::flip_decoded_bit(&t, bit).unwrap();
            let want = match bit / 8 {
                0 => "unsupported_version",
                1..=4 => "unknown_key",
                5 => "malformed",
                _ => "bad_tag",
            };
            assert_eq!(kind(s.open(&m, &b, NOW)), want, "{codec} binary bit {bit}");
        }
        for n in 0..t.len() {
            let m = tamper::truncate(&t, n);
            let got = kind(s.open(&m, &b, NOW));
            assert!(
                got == "bad_tag" || got == "malformed",
                "{codec} truncate {n}: {got}"
            );
            assert_eq!(
                got,
                expected(&s, m.as_bytes(), &[0]),
                "{codec} truncate {n}"
            );
        }
        for extra in [
            &b"A"[..],
            b"AA",
            b"AAA",
            b"AAAA",
            b"=",
            b"==",
            b"_",
            b"\n",
            b" ",
            b".",
        ] {
            let m = tamper::extend(&t, extra);
            let got = kind(s.open_bytes(&m, &b, NOW));
            assert!(
                got == "bad_tag" || got == "malformed",
                "{codec} extend {extra:?}: {got}"
            );
            assert_eq!(got, expected(&s, &m, &[0]), "{codec} extend {extra:?}");
        }
        let padded = tamper::with_padding(&t).unwrap();
        if padded != t {
            assert_eq!(kind(s.open(&padded, &b, NOW)), "malformed");
        }
        let std = tamper::to_standard_base64(&t).unwrap();
        if std != t {
            assert_eq!(kind(s.open(&std, &b, NOW)), "malformed");
        }
    }
}

#[test]
fn splicing_two_valid_tokens_is_bad_tag() {
    let r = ring(0, 3);
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        let t1 = s.seal(&claims(&s, 64)).unwrap();
        let t2 = s.seal(&claims(&s, 64)).unwrap();
        for at in [HEADER_LEN, HEADER_LEN + 8, 40, 100] {
            let m = tamper::splice(&t1, &t2, at).unwrap();
            if m != t2 {
                assert_eq!(
                    kind(s.open(&m, &b, NOW)),
                    "bad_tag",
                    "{codec} splice at {at}"
                );
            }
        }
    }
}

#[test]
fn binding_mismatches() {
    let r = ring(0, 4);
    let d = digest();
    let other = request_digest("tools/call", "get_weather", &json!({"location": "LA"})).unwrap();
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        let t = s.seal(&claims(&s, 32)).unwrap();
        let bob = Binding {
            principal: "bob",
            request_digest: &d,
        };
        assert_eq!(kind(s.open(&t, &bob, NOW)), "wrong_principal");
        let la = Binding {
            principal: "alice",
            request_digest: &other,
        };
        assert_eq!(kind(s.open(&t, &la, NOW)), "wrong_request");
    }
}

#[test]
fn expiry_and_skew() {
    let r = ring(0, 5);
    let cfg = SealerConfig {
        clock_skew: Duration::from_millis(2_000),
        ttl: Duration::from_millis(60_000),
        ..SealerConfig::default()
    };
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    for codec in CodecName::ALL {
        let s = Sealer::new(&r, codec, cfg).unwrap();
        let c = claims(&s, 16);
        assert_eq!(c.expires_at, NOW + 60_000);
        let t = s.seal(&c).unwrap();
        // The skew never extends a lifetime: refused from expires_at on.
        assert_eq!(kind(s.open(&t, &b, NOW + 59_999)), "ok");
        assert_eq!(kind(s.open(&t, &b, NOW + 60_000)), "expired");
        assert_eq!(kind(s.open(&t, &b, NOW + 62_000)), "expired");
        // Only an issue time in the future is tolerated, by the skew.
        assert_eq!(kind(s.open(&t, &b, NOW - 2_000)), "ok");
        assert_eq!(kind(s.open(&t, &b, NOW - 2_001)), "not_yet_valid");
    }
}

#[test]
fn rotation_keeps_states_in_flight_and_retired_keys_are_unknown() {
    let old = KeyRing::from_keys([(1, vec![6; 32])]).unwrap();
    let rotated = KeyRing::from_keys([(2, vec![7; 32]), (1, vec![6; 32])]).unwrap();
    let retired = KeyRing::from_keys([(2, vec![7; 32])]).unwrap();
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    for codec in CodecName::ALL {
        let before = sealer(codec, &old);
        let after = sealer(codec, &rotated);
        let t_old = before.seal(&claims(&before, 16)).unwrap();
        let t_new = after.seal(&claims(&after, 16)).unwrap();
        assert_eq!(kind(after.open(&t_old, &b, NOW)), "ok", "{codec}");
        assert_eq!(kind(after.open(&t_new, &b, NOW)), "ok", "{codec}");
        assert_eq!(kind(before.open(&t_new, &b, NOW)), "unknown_key", "{codec}");
        assert_eq!(
            sealer(codec, &retired).open(&t_old, &b, NOW),
            Err(StateError::UnknownKey(1))
        );
        // Same kid, different key material: the tag must not verify.
        let impostor = sealer(codec, &KeyRing::from_keys([(1, vec![8; 32])]).unwrap());
        assert_eq!(kind(impostor.open(&t_old, &b, NOW)), "bad_tag", "{codec}");
    }
}

#[test]
fn wrong_codec_for_the_sealer_is_malformed() {
    let r = ring(0, 9);
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    let hmac = sealer(CodecName::HmacSha256, &r);
    let gcm = sealer(CodecName::Aes256Gcm, &r);
    let t = hmac.seal(&claims(&hmac, 8)).unwrap();
    assert_eq!(kind(gcm.open(&t, &b, NOW)), "malformed");
}

#[test]
fn size_cap_is_checked_before_decoding_and_when_sealing() {
    let r = ring(0, 10);
    let cfg = SealerConfig {
        max_token_len: 600,
        ..SealerConfig::default()
    };
    let s = Sealer::new(&r, CodecName::HmacSha256, cfg).unwrap();
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    assert_eq!(s.seal(&claims(&s, 1024)), Err(SealError::TooLarge));
    // 601 characters of garbage: TooLarge, not Malformed (no decoding).
    let junk = "*".repeat(601);
    assert_eq!(kind(s.open(&junk, &b, NOW)), "too_large");
    assert_eq!(kind(s.open(&"*".repeat(600), &b, NOW)), "malformed");
    let big = sealer(CodecName::HmacSha256, &r);
    let t = big.seal(&claims(&big, 1024)).unwrap();
    assert_eq!(kind(s.open(&t, &b, NOW)), "too_large");
    assert!(
        Sealer::new(
            &r,
            CodecName::HmacSha256,
            SealerConfig {
                max_token_len: 10,
                ..cfg
            }
        )
        .is_err()
    );
}

#[test]
fn open_once_rejects_the_second_use() {
    let r = ring(0, 11);
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    let guard = MemoryReplayGuard::new();
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        let t = s.seal(&claims(&s, 16)).unwrap();
        assert_eq!(kind(s.open_once(&t, &b, NOW, &guard)), "ok");
        assert_eq!(kind(s.open_once(&t, &b, NOW + 5, &guard)), "replayed");
        // A failed open does not consume the nonce.
        let t2 = s.seal(&claims(&s, 16)).unwrap();
        let bob = Binding {
            principal: "bob",
            request_digest: &d,
        };
        assert_eq!(kind(s.open_once(&t2, &bob, NOW, &guard)), "wrong_principal");
        assert_eq!(kind(s.open_once(&t2, &b, NOW, &guard)), "ok");
    }
}

#[test]
fn garbage_never_panics() {
    let r = ring(0, 12);
    let d = digest();
    let b = Binding {
        principal: "alice",
        request_digest: &d,
    };
    for codec in CodecName::ALL {
        let s = sealer(codec, &r);
        for t in [
            "",
            "A",
            "AQ",
            "AQAAAAAB",
            "AQAAAAAD",
            "AgAAAAAB",
            "////",
            "\u{e9}\u{e9}",
        ] {
            assert_ne!(kind(s.open(t, &b, NOW)), "ok", "{codec} {t:?}");
        }
        let mut x = 0x1234_5678u32;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                        [(x % 64) as usize]
                })
                .collect();
            let mut t = vec![1u8, 0, 0, 0, 0, codec.id()];
            t.extend_from_slice(&bytes);
            let tok = URL_SAFE_NO_PAD.encode(&t);
            assert_ne!(kind(s.open(&tok, &b, NOW)), "ok");
            assert_ne!(kind(s.open_bytes(&bytes, &b, NOW)), "ok");
        }
    }
}
