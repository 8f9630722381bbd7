//! `requestState` codecs: seal and open for every codec at 64/256/1024/4096-byte
//! payloads, the raw primitive on the same bytes and backend (the floor), the
//! backend candidates for each primitive, and the codecs users would pick
//! instead (rmcp `RequestStateCodec`, jsonwebtoken HS256, pasetors v4.local),
//! all in one run.
//!
//! Run: `cargo bench --bench state_codec -- --warm-up-time 1 --measurement-time 2`
//! Filter with a group prefix, e.g. `-- open/` or `-- backend/`.
//! Each benchmark is one operation, so criterion's `thrpt` is ops/s. Token
//! sizes, CPU flags and RUSTFLAGS are printed first.
//!
//! `open/` (owned claims), `open_in/` (borrowed) and `floor/` (the primitive
//! alone on the same decoded envelope bytes and backend) are the target
//! comparison; the latest table is in the `crate::state` module docs
//! ("Speed"). `base64/` compares the token-text decoder with base64-simd.
//! The run ends with each codec's targets at 256 bytes (open ÷ floor,
//! rmcp ÷ open) and whether this run met them (`targets` below).

use std::hint::black_box;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use elicitkit::state::primitive::{AEAD_TAG_LEN, AeadKey, Blake3Keyed, HmacSha256};
use elicitkit::state::{Binding, Claims, CodecName, KeyRing, Sealer, SealerConfig};

const PAYLOADS: [usize; 4] = [64, 256, 1024, 4096];
const KEY: [u8; 32] = [0x42; 32];
const PRINCIPAL: &str = "user-7f3a9c";
const CLIENT: &str = "client-12";

fn now() -> u64 {
    elicitkit::state::now_ms()
}

fn claims(payload: usize) -> Claims {
    Claims {
        principal: PRINCIPAL.into(),
        client_id: Some(CLIENT.into()),
        request_digest: [0xd1; 32],
        issued_at: now(),
        expires_at: now() + 600_000,
        nonce: [0x17; 16],
        round: 1,
        payload: (0..payload).map(|i| (i * 31 % 251) as u8).collect(),
    }
}

fn sealer(codec: CodecName) -> Sealer {
    let ring = KeyRing::from_keys([(1, KEY.to_vec())]).expect("bench key");
    Sealer::new(&ring, codec, SealerConfig::default()).expect("bench sealer")
}

fn print_environment() {
    println!("== state_codec environment");
    #[cfg(target_arch = "x86_64")]
    {
        let mut flags = Vec::new();
        macro_rules! f {
            ($($n:tt),*) => {$( if std::arch::is_x86_feature_detected!($n) { flags.push($n) } )*};
        }
        f!(
            "aes",
            "pclmulqdq",
            "sha",
            "avx",
            "avx2",
            "avx512f",
            "vaes",
            "vpclmulqdq",
            "bmi2",
            "adx"
        );
        println!("cpu flags (runtime): {}", flags.join(" "));
        let mut ct = Vec::new();
        if cfg!(target_feature = "aes") {
            ct.push("aes");
        }
        if cfg!(target_feature = "avx2") {
            ct.push("avx2");
        }
        if cfg!(target_feature = "sha") {
            ct.push("sha");
        }
        println!(
            "target features (compile time, beyond baseline): [{}]",
            ct.join(" ")
        );
    }
    println!(
        "RUSTFLAGS={:?} CARGO_ENCODED_RUSTFLAGS={:?}",
        std::env::var("RUSTFLAGS").unwrap_or_default(),
        std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default()
    );
    println!("token sizes (characters):");
    println!(
        "{:<28} {:>6} {:>6} {:>6} {:>6}",
        "codec", 64, 256, 1024, 4096
    );
    for codec in CodecName::ALL {
        let s = sealer(codec);
        let sizes: Vec<String> = PAYLOADS
            .iter()
            .map(|p| format!("{:>6}", s.seal(&claims(*p)).map_or(0, |t| t.len())))
            .collect();
        println!("{:<28} {}", codec.as_str(), sizes.join(" "));
    }
    let comp = |name: &str, f: &dyn Fn(&Claims) -> String| {
        let sizes: Vec<String> = PAYLOADS
            .iter()
            .map(|p| format!("{:>6}", f(&claims(*p)).len()))
            .collect();
        println!("{name:<28} {}", sizes.join(" "));
    };
    let rmcp = Rmcp::new();
    comp("rmcp RequestStateCodec", &|c| rmcp.seal(c));
    let jwt = Jwt::new();
    comp("jsonwebtoken HS256", &|c| jwt.seal(c));
    let paseto = Paseto::new();
    comp("pasetors v4.local", &|c| paseto.seal(c));
    println!("==");
}

/// Our claims as rmcp's payload, bound to principal and digest by its
/// associated data, with its TTL.
struct Rmcp(rmcp::model::RequestStateCodec);

fn binding_ad(c: &Claims) -> Vec<u8> {
    let mut ad = c.principal.as_bytes().to_vec();
    ad.push(0);
    ad.extend_from_slice(&c.request_digest);
    ad
}

impl Rmcp {
    fn new() -> Self {
        Rmcp(rmcp::model::RequestStateCodec::try_new(KEY.to_vec()).expect("rmcp key"))
    }
    fn seal(&self, c: &Claims) -> String {
        let mut body = Vec::new();
        c.encode_into(&mut body).expect("encode");
        let ad = binding_ad(c);
        let opts = rmcp::model::SealOptions::new()
            .associated_data(&ad)
            .ttl(Duration::from_secs(600));
        self.0.seal_with(&body, &opts)
    }
    fn open(&self, t: &str, ad: &[u8]) -> Claims {
        let body = self.0.open_with(t, ad).expect("rmcp open");
        elicitkit::state::claims::decode(&body)
            .expect("rmcp claims")
            .to_claims()
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct JwtClaims {
    sub: String,
    cid: Option<String>,
    rd: String,
    iat: u64,
    exp: u64,
    jti: String,
    rnd: u32,
    pl: String,
}

struct Jwt {
    enc: jsonwebtoken::EncodingKey,
    dec: jsonwebtoken::DecodingKey,
    val: jsonwebtoken::Validation,
}

impl Jwt {
    fn new() -> Self {
        let mut val = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
        val.sub = Some(PRINCIPAL.into());
        Jwt {
            enc: jsonwebtoken::EncodingKey::from_secret(&KEY).expect("jwt key"),
            dec: jsonwebtoken::DecodingKey::from_secret(&KEY).expect("jwt key"),
            val,
        }
    }
    fn seal(&self, c: &Claims) -> String {
        let jc = JwtClaims {
            sub: c.principal.clone(),
            cid: c.client_id.clone(),
            rd: URL_SAFE_NO_PAD.encode(c.request_digest),
            iat: c.issued_at / 1000,
            exp: c.expires_at / 1000,
            jti: URL_SAFE_NO_PAD.encode(c.nonce),
            rnd: c.round,
            pl: URL_SAFE_NO_PAD.encode(&c.payload),
        };
        let h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        jsonwebtoken::encode(&h, &jc, &self.enc).expect("jwt encode")
    }
    fn open(&self, t: &str, rd: &str) -> JwtClaims {
        let d = jsonwebtoken::decode::<JwtClaims>(t, &self.dec, &self.val).expect("jwt decode");
        assert_eq!(d.claims.rd, rd);
        d.claims
    }
}

struct Paseto {
    key: pasetors::keys::SymmetricKey<pasetors::version4::V4>,
}

impl Paseto {
    fn new() -> Self {
        Paseto {
            key: pasetors::keys::SymmetricKey::from(&KEY).expect("paseto key"),
        }
    }
    fn seal(&self, c: &Claims) -> String {
        let mut pc = pasetors::claims::Claims::new_expires_in(&Duration::from_secs(600))
            .expect("paseto claims");
        pc.subject(&c.principal).expect("sub");
        pc.token_identifier(&URL_SAFE_NO_PAD.encode(c.nonce))
            .expect("jti");
        if let Some(cid) = &c.client_id {
            pc.add_additional("cid", cid.as_str()).expect("cid");
        }
        pc.add_additional("rd", URL_SAFE_NO_PAD.encode(c.request_digest))
            .expect("rd");
        pc.add_additional("rnd", c.round).expect("rnd");
        pc.add_additional("pl", URL_SAFE_NO_PAD.encode(&c.payload))
            .expect("pl");
        pasetors::local::encrypt(&self.key, &pc, None, None).expect("paseto encrypt")
    }
    fn open(&self, t: &str, rd: &str) -> pasetors::token::TrustedToken {
        let mut rules = pasetors::claims::ClaimsValidationRules::new();
        rules.validate_subject_with(PRINCIPAL);
        let ut =
            pasetors::token::UntrustedToken::<pasetors::Local, pasetors::version4::V4>::try_from(t)
                .expect("paseto parse");
        let tt =
            pasetors::local::decrypt(&self.key, &ut, &rules, None, None).expect("paseto decrypt");
        let rd_ok = tt
            .payload_claims()
            .and_then(|c| c.get_claim("rd"))
            .and_then(|v| v.as_str())
            == Some(rd);
        assert!(rd_ok);
        tt
    }
}

fn codecs(c: &mut Criterion) {
    print_environment();
    let digest = [0xd1u8; 32];
    let binding = Binding {
        principal: PRINCIPAL,
        request_digest: &digest,
    };
    for (op, name) in [(0, "seal"), (1, "open"), (2, "open_in"), (3, "floor")] {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(1));
        for codec in CodecName::ALL {
            let s = sealer(codec);
            for p in PAYLOADS {
                let cl = claims(p);
                let token = s.seal(&cl).expect("seal");
                let id = BenchmarkId::new(codec.as_str(), p);
                match op {
                    0 => {
                        g.bench_function(id, |b| b.iter(|| s.seal(black_box(&cl))));
                    }
                    1 => {
                        // The clock is read once per sample, not per open: a
                        // server reads it once per request, and the floor
                        // does not read it at all (a vDSO call is ~30 ns here).
                        g.bench_function(id, |b| {
                            let t = now();
                            b.iter(|| {
                                s.open(black_box(&token), &binding, black_box(t))
                                    .expect("open")
                            })
                        });
                    }
                    2 => {
                        let mut buf = Vec::new();
                        g.bench_function(id, |b| {
                            let t = now();
                            b.iter(|| {
                                s.open_in(
                                    black_box(token.as_bytes()),
                                    &binding,
                                    black_box(t),
                                    &mut buf,
                                )
                                .map(|c| c.round)
                                .expect("open_in")
                            })
                        });
                    }
                    _ => floor(&mut g, id, codec, &token),
                };
            }
        }
        g.finish();
    }
}

/// The primitive alone on the same envelope bytes: MAC over header+claims,
/// or AEAD open of the same ciphertext (copied into a scratch buffer, as
/// `open` decodes into one).
fn floor(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    codec: CodecName,
    token: &str,
) {
    // Same derived key as the codec uses, so the work is identical.
    let label = format!("elicitkit/request-state/v1/{}", codec.as_str());
    let sub = HmacSha256::new(&KEY).tag(&[label.as_bytes()]);
    let env = URL_SAFE_NO_PAD.decode(token).expect("token");
    match codec {
        CodecName::HmacSha256 => {
            let k = HmacSha256::new(&sub);
            let signed = &env[..env.len() - 32];
            g.bench_function(id, |b| b.iter(|| k.tag(&[black_box(signed)])));
        }
        CodecName::Blake3Keyed => {
            let k = Blake3Keyed::new(&sub);
            let signed = &env[..env.len() - 32];
            g.bench_function(id, |b| b.iter(|| k.tag(&[black_box(signed)])));
        }
        _ => {
            let alg = match codec {
                CodecName::Aes256Gcm => elicitkit::state::primitive::AeadAlg::Aes256Gcm,
                CodecName::Aes256GcmSiv => elicitkit::state::primitive::AeadAlg::Aes256GcmSiv,
                CodecName::ChaCha20Poly1305 => {
                    elicitkit::state::primitive::AeadAlg::ChaCha20Poly1305
                }
                _ => elicitkit::state::primitive::AeadAlg::XChaCha20Poly1305,
            };
            let k = AeadKey::new(alg, &sub);
            let nl = alg.nonce_len();
            let (head, rest) = env.split_at(6);
            let (nonce, rest) = rest.split_at(nl);
            let (ct, tag) = rest.split_at(rest.len() - AEAD_TAG_LEN);
            let mut buf = vec![0u8; ct.len()];
            g.bench_function(id, |b| {
                b.iter(|| {
                    buf.copy_from_slice(black_box(ct));
                    k.open_in_place(nonce, head, &mut buf, tag)
                        .expect("floor open")
                })
            });
        }
    }
}

fn competitors(c: &mut Criterion) {
    let rmcp = Rmcp::new();
    let jwt = Jwt::new();
    let paseto = Paseto::new();
    let rd = URL_SAFE_NO_PAD.encode([0xd1u8; 32]);
    for op in ["seal", "open"] {
        let mut g = c.benchmark_group(format!("competitor_{op}"));
        g.throughput(Throughput::Elements(1));
        for p in PAYLOADS {
            let cl = claims(p);
            let ad = binding_ad(&cl);
            let (tr, tj, tp) = (rmcp.seal(&cl), jwt.seal(&cl), paseto.seal(&cl));
            if op == "seal" {
                g.bench_function(BenchmarkId::new("rmcp", p), |b| {
                    b.iter(|| rmcp.seal(black_box(&cl)))
                });
                g.bench_function(BenchmarkId::new("jsonwebtoken-hs256", p), |b| {
                    b.iter(|| jwt.seal(black_box(&cl)))
                });
                g.bench_function(BenchmarkId::new("pasetors-v4-local", p), |b| {
                    b.iter(|| paseto.seal(black_box(&cl)))
                });
            } else {
                g.bench_function(BenchmarkId::new("rmcp", p), |b| {
                    b.iter(|| rmcp.open(black_box(&tr), &ad))
                });
                g.bench_function(BenchmarkId::new("jsonwebtoken-hs256", p), |b| {
                    b.iter(|| jwt.open(black_box(&tj), &rd))
                });
                g.bench_function(BenchmarkId::new("pasetors-v4-local", p), |b| {
                    b.iter(|| paseto.open(black_box(&tp), &rd))
                });
            }
        }
        g.finish();
    }
}

/// Backend candidates per primitive: verify/decrypt of a 352-byte record
/// (the claims of a 256-byte payload). Used to choose each backend.
fn backends(c: &mut Criterion) {
    const N: usize = 352;
    let key = KEY;
    let msg = vec![0x5au8; N];
    let aad = [1u8; 6];
    let mut g = c.benchmark_group("backend");
    g.throughput(Throughput::Elements(1));
    {
        let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
        g.bench_function("hmac-sha256/ring", |b| {
            b.iter(|| ring::hmac::sign(&k, black_box(&msg)))
        });
        let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &key);
        g.bench_function("hmac-sha256/aws-lc-rs", |b| {
            b.iter(|| aws_lc_rs::hmac::sign(&k, black_box(&msg)))
        });
        let k = HmacSha256::new(&key);
        g.bench_function("hmac-sha256/rustcrypto", |b| {
            b.iter(|| k.tag(&[black_box(&msg)]))
        });
    }
    macro_rules! ringlike {
        ($name:expr, $m:ident, $alg:expr) => {{
            use $m::aead::{Aad, LessSafeKey, Nonce, UnboundKey};
            let k = LessSafeKey::new(UnboundKey::new($alg, &key).expect("key"));
            let mut ct = msg.clone();
            let tag = k
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key([3; 12]),
                    Aad::from(&aad),
                    &mut ct,
                )
                .expect("seal");
            ct.extend_from_slice(tag.as_ref());
            let mut buf = ct.clone();
            g.bench_function($name, |b| {
                b.iter(|| {
                    buf.copy_from_slice(&ct);
                    k.open_in_place(
                        Nonce::assume_unique_for_key([3; 12]),
                        Aad::from(&aad),
                        &mut buf,
                    )
                    .map(|p| p.len())
                    .expect("open")
                })
            });
        }};
    }
    ringlike!("aes-256-gcm/ring", ring, &ring::aead::AES_256_GCM);
    ringlike!(
        "aes-256-gcm/aws-lc-rs",
        aws_lc_rs,
        &aws_lc_rs::aead::AES_256_GCM
    );
    ringlike!(
        "aes-256-gcm-siv/aws-lc-rs",
        aws_lc_rs,
        &aws_lc_rs::aead::AES_256_GCM_SIV
    );
    ringlike!(
        "chacha20-poly1305/ring",
        ring,
        &ring::aead::CHACHA20_POLY1305
    );
    ringlike!(
        "chacha20-poly1305/aws-lc-rs",
        aws_lc_rs,
        &aws_lc_rs::aead::CHACHA20_POLY1305
    );
    macro_rules! rc {
        ($name:expr, $ty:ty, $nl:expr) => {{
            use aes_gcm::aead::{AeadInPlace, KeyInit};
            let k = <$ty>::new_from_slice(&key).expect("key");
            let nonce = [3u8; $nl];
            let mut ct = msg.clone();
            let tag = k
                .encrypt_in_place_detached((&nonce).into(), &aad, &mut ct)
                .expect("seal");
            let mut buf = ct.clone();
            g.bench_function($name, |b| {
                b.iter(|| {
                    buf.copy_from_slice(&ct);
                    k.decrypt_in_place_detached((&nonce).into(), &aad, &mut buf, &tag)
                        .expect("open")
                })
            });
        }};
    }
    rc!("aes-256-gcm/rustcrypto", aes_gcm::Aes256Gcm, 12);
    rc!("aes-256-gcm-siv/rustcrypto", aes_gcm_siv::Aes256GcmSiv, 12);
    rc!(
        "chacha20-poly1305/rustcrypto",
        chacha20poly1305::ChaCha20Poly1305,
        12
    );
    rc!(
        "xchacha20-poly1305/rustcrypto",
        chacha20poly1305::XChaCha20Poly1305,
        24
    );
    {
        // Ours: HChaCha20 (RustCrypto) + ChaCha20-Poly1305 (ring).
        let alg = elicitkit::state::primitive::AeadAlg::XChaCha20Poly1305;
        let k = AeadKey::new(alg, &key);
        let nonce = [3u8; 24];
        let mut ct = msg.clone();
        let tag = k.seal_in_place(&nonce, &aad, &mut ct).expect("seal");
        let mut buf = ct.clone();
        g.bench_function("xchacha20-poly1305/hchacha+ring", |b| {
            b.iter(|| {
                buf.copy_from_slice(&ct);
                k.open_in_place(&nonce, &aad, &mut buf, &tag).expect("open")
            })
        });
    }
    let k = Blake3Keyed::new(&key);
    g.bench_function("blake3-keyed/blake3", |b| {
        b.iter(|| k.tag(&[black_box(&msg)]))
    });
    g.finish();
}

/// Token text: base64-simd (used before) against `state::base64url`'s
/// strict decoder and its encoder, on the HMAC token of a 256-byte payload.
fn base64_decode(c: &mut Criterion) {
    let token = sealer(CodecName::HmacSha256)
        .seal(&claims(256))
        .expect("seal");
    let mut g = c.benchmark_group("base64");
    g.throughput(Throughput::Elements(1));
    let mut buf = Vec::new();
    g.bench_function("base64-simd", |b| {
        b.iter(|| {
            let d = base64_simd::URL_SAFE_NO_PAD;
            let n = d.decoded_length(black_box(token.as_bytes())).expect("len");
            buf.clear();
            buf.resize(n, 0);
            d.decode(token.as_bytes(), base64_simd::Out::from_slice(&mut buf))
                .map(|o| o.len())
                .expect("decode")
        })
    });
    g.bench_function("elicitkit", |b| {
        b.iter(|| {
            elicitkit::state::base64url::decode_into(black_box(token.as_bytes()), &mut buf)
                .expect("decode")
        })
    });
    // Sealing's side: the same token's bytes back to text.
    let raw = URL_SAFE_NO_PAD
        .decode(token.as_bytes())
        .expect("token bytes");
    g.bench_function("encode/base64-simd", |b| {
        b.iter(|| base64_simd::URL_SAFE_NO_PAD.encode_to_string(black_box(&raw)))
    });
    g.bench_function("encode/elicitkit", |b| {
        b.iter(|| elicitkit::state::base64url::encode(black_box(&raw)))
    });
    g.finish();
}

criterion_group!(benches, codecs, competitors, backends, base64_decode);

/// The targets each codec is held to at a 256-byte payload, from this run's
/// medians: `open` within 1.2× its primitive (the floor), and at least 2.5×
/// faster than rmcp's codec, or, for a codec whose primitive alone is too
/// slow for that (rmcp ÷ floor under 3), within 1.2× of the best it could
/// be (rmcp ÷ floor ÷ 1.2). A row that misses says MISS, so a regression
/// shows in the bench's own output; rows this run did not measure (a
/// filter left them out) say so.
mod targets {
    use super::CodecName;
    use std::path::{Path, PathBuf};
    use std::time::SystemTime;

    const PAYLOAD: usize = 256;
    const OPEN_OVER_FLOOR: f64 = 1.2;
    const SPEEDUP_OVER_RMCP: f64 = 2.5;

    /// Where criterion writes its estimates (its own rule).
    fn home() -> PathBuf {
        if let Some(h) = std::env::var_os("CRITERION_HOME") {
            return h.into();
        }
        std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| PathBuf::from("target"), PathBuf::from)
            .join("criterion")
    }

    /// The median (ns) of `group/function/256`, if this run wrote it.
    fn median(home: &Path, since: SystemTime, group: &str, function: &str) -> Option<f64> {
        let f = home
            .join(group)
            .join(function)
            .join(PAYLOAD.to_string())
            .join("new/estimates.json");
        let fresh = std::fs::metadata(&f).and_then(|m| m.modified()).ok()? >= since;
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).ok()?).ok()?;
        fresh
            .then(|| v["median"]["point_estimate"].as_f64())
            .flatten()
    }

    /// Prints the table; `since` is when this run began.
    pub fn print(since: SystemTime) {
        let home = home();
        let rmcp = median(&home, since, "competitor_open", "rmcp");
        println!("\n== state_codec targets ({PAYLOAD}-byte payload, medians of this run)");
        println!(
            "{:<20} {:>8} {:>8} {:>10} {:>9} {:>12} {:>9}  verdict",
            "codec", "open ns", "floor ns", "open/floor", "rmcp ns", "rmcp/open", "target"
        );
        for codec in CodecName::ALL {
            let name = codec.as_str();
            let (open, floor) = (
                median(&home, since, "open", name),
                median(&home, since, "floor", name),
            );
            let (Some(open), Some(floor)) = (open, floor) else {
                println!("{name:<20} not measured in this run (open/ and floor/ at {PAYLOAD})");
                continue;
            };
            let over = open / floor;
            let mut verdict = if over <= OPEN_OVER_FLOOR {
                "ok"
            } else {
                "MISS"
            };
            let (rmcp_ns, speedup, target) = match rmcp {
                Some(r) => {
                    let target = SPEEDUP_OVER_RMCP.min(r / floor / OPEN_OVER_FLOOR);
                    if r / open < target {
                        verdict = "MISS";
                    }
                    (
                        format!("{r:.0}"),
                        format!("{:.2}", r / open),
                        format!(">= {target:.2}"),
                    )
                }
                None => ("-".into(), "-".into(), "not measured".into()),
            };
            println!(
                "{name:<20} {open:>8.0} {floor:>8.0} {over:>10.2} {rmcp_ns:>9} {speedup:>12} {target:>9}  {verdict}"
            );
        }
        println!(
            "targets: open/floor <= {OPEN_OVER_FLOOR}; rmcp/open >= {SPEEDUP_OVER_RMCP}, or \
             rmcp/floor/{OPEN_OVER_FLOOR} where the primitive alone is too slow for that"
        );
    }
}

fn main() {
    // A second back: file times are coarse on some filesystems.
    let since = std::time::SystemTime::now() - Duration::from_secs(1);
    benches();
    Criterion::default().configure_from_args().final_summary();
    targets::print(since);
}
