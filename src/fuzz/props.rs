//! The properties the fuzz targets check, one public function per target.
//!
//! Each function takes raw bytes (the fuzzer's input, or a committed corpus
//! file) and panics, with a message naming the property, exactly when a
//! property is violated. `fuzz/fuzz_targets/*.rs` are one-line shells over
//! these functions and `tests/it/fuzz/corpus_replay.rs` calls them on every
//! committed corpus and regression file on the stable toolchain, so a crash
//! found by the fuzzer stays a test forever.
//!
//! Structured inputs are decoded from the bytes here, with the
//! `#[derive(Arbitrary)]` shapes of [`super::shapes`] (so the targets keep
//! taking bytes, and a corpus file means the same thing to the fuzzer and
//! to `cargo test`). Parsers of raw text (JSON, tokens, header values, SSE
//! bodies) still get the raw bytes. Every byte string is a valid input.
//!
//! This module uses only `protocol`, `schema`, `state`, `store` and
//! `findings` (and `arbitrary`), so it compiles without the `net` feature.
//!
//! | target | function |
//! |---|---|
//! | `schema` | [`schema_target`] |
//! | `content` | [`content_target`] |
//! | `state_open` | [`state_open_target`] |
//! | `state_tamper` | [`state_tamper_target`] |
//! | `mrtr_message` | [`mrtr_message_target`] |
//! | `sse_stream` | [`sse_stream_target`] |
//! | `completions` | [`completions_target`] |
//! | `headers` | [`headers_target`] |

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use crate::findings::{Finding, has_must};
use crate::protocol::body::{Framing, decode_body};
use crate::protocol::elicitation::{ElicitRequestParams, ElicitResult};
use crate::protocol::headers::{self, HeaderValueError};
use crate::protocol::jsonrpc::{Message, ParseError, message_from_value, parse_message};
use crate::protocol::mrtr::{CallToolParams, InputRequiredResult, RequestMeta, ResultType};
use crate::protocol::sse::{SseError, SseEvent, SseParser, encode_event, parse_all};
use crate::protocol::{Generation, codes, validate};
use crate::schema::{
    InvalidKind, RequestedSchema, generate_invalid, generate_valid, parse_schema, random_schema,
    validate_content, validate_content_map,
};
use crate::state::envelope::{HEADER_LEN, VERSION};
use crate::state::{
    Binding, Claims, CodecName, KeyRing, MemoryReplayGuard, OpenedClaims, Sealer, SealerConfig,
    StateError, tamper,
};
use crate::store::model::{BackendKind, MAX_OPS, run};

use super::shapes::{
    ClaimsShape, CompletionsCase, ContentCase, HeaderCase, MessageShape, SchemaShape, SpliceWith,
    SseCase, Tamper, TamperCase, decode,
};

/// Names of the fuzz targets, as the directories under `fuzz/corpus/`.
pub const TARGETS: [&str; 8] = [
    "schema",
    "content",
    "state_open",
    "state_tamper",
    "mrtr_message",
    "sse_stream",
    "completions",
    "headers",
];

/// Whether an input is worth keeping in the fuzzer's corpus (maps onto
/// `libfuzzer_sys::Corpus`): `Reject` marks inputs the property ignored,
/// such as JSON that is not an object for the `schema` target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The input exercised the property.
    Keep,
    /// The input was ignored; keep it out of the corpus.
    Reject,
}

/// Runs the property of target `name` on `data`; `None` for an unknown name.
pub fn run_target(name: &str, data: &[u8]) -> Option<Verdict> {
    let f: fn(&[u8]) -> Verdict = match name {
        "schema" => schema_target,
        "content" => content_target,
        "state_open" => state_open_target,
        "state_tamper" => state_tamper_target,
        "mrtr_message" => mrtr_message_target,
        "sse_stream" => sse_stream_target,
        "completions" => completions_target,
        "headers" => headers_target,
        _ => return None,
    };
    Some(f(data))
}

/// FNV-1a over `data`: a stable seed for the generators.
pub fn seed_of(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// JSON equality that lets floats differ by a few ulps: `serde_json`
/// without `float_roundtrip` parses some decimal strings one ulp away from
/// the nearest double, so text round trips are compared with this.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(p), Some(q)) if x.is_f64() && y.is_f64() => {
                    p.to_bits().abs_diff(q.to_bits()) <= 4 || p == q
                }
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

// ---------------------------------------------------------------- schema

/// Sorted by name, so comparisons do not depend on `serde_json`'s key order.
fn sorted(mut s: RequestedSchema) -> RequestedSchema {
    s.properties.sort_by(|a, b| a.0.cmp(&b.0));
    s
}

/// Valid content validates cleanly and each invalid kind fails with exactly
/// that kind, for `schema` and seed `seed`.
fn check_generated_content(schema: &RequestedSchema, seed: u64) {
    let valid = generate_valid(schema, seed);
    let f = validate_content_map(schema, &valid);
    assert!(
        f.is_empty(),
        "generated valid content {valid:?} fails {f:?} for schema {}",
        schema.to_value()
    );
    for kind in InvalidKind::ALL {
        if let Some(bad) = generate_invalid(schema, kind, seed) {
            let f = validate_content_map(schema, &bad);
            assert!(
                !f.is_empty(),
                "generated {kind:?} content {bad:?} validates for schema {}",
                schema.to_value()
            );
            assert!(
                f.iter().all(|x| x.rule == kind.rule()),
                "generated {kind:?} content {bad:?} fails with other rules {f:?} for schema {}",
                schema.to_value()
            );
        }
    }
}

/// `schema`: arbitrary JSON (or, for non-JSON input, the JSON of a
/// [`SchemaShape`], on or off the spec) → model and validation never
/// panic; the model re-serializes to a clean schema that parses back to
/// itself; generated valid content validates and each generated invalid
/// content fails with exactly its kind.
pub fn schema_target(data: &[u8]) -> Verdict {
    let seed = seed_of(data);
    let parsed = serde_json::from_slice::<Value>(data)
        .ok()
        .or_else(|| decode::<SchemaShape>(data).map(|s| s.to_value()));
    let schema = match parsed {
        Some(v) => {
            let (model, findings) = parse_schema(&v);
            for f in &findings {
                assert!(
                    crate::schema::SCHEMA_RULES.contains(&f.rule.as_str()),
                    "unlisted schema rule {f:?}"
                );
            }
            let Some(model) = model else {
                assert!(
                    !v.is_object() || has_must(&findings),
                    "an object schema without a model must have a MUST finding: {findings:?}"
                );
                return Verdict::Reject;
            };
            model
        }
        None => random_schema(seed),
    };
    let written = schema.to_value();
    let (again, findings) = parse_schema(&written);
    assert!(
        !has_must(&findings),
        "the model of a schema writes back a schema with MUST findings: {written} {findings:?}"
    );
    let again = again.unwrap_or_else(|| panic!("the written model {written} does not parse"));
    assert_eq!(
        sorted(again),
        sorted(schema.clone()),
        "model → JSON → model changed the schema {written}"
    );
    check_generated_content(&schema, seed);
    check_generated_content(&schema, seed.rotate_left(17) ^ 0x5555);
    Verdict::Keep
}

// ---------------------------------------------------------------- content

fn check_content_findings(schema: &RequestedSchema, content: &Value) {
    let a = validate_content(schema, content);
    let b = validate_content(schema, content);
    assert_eq!(a, b, "content validation is not deterministic");
    let written = schema.to_value();
    if let (Some(re), _) = parse_schema(&written) {
        // Field order may differ (a parsed object yields sorted keys), so
        // compare the findings as sets.
        let key = |f: &Finding| (f.pointer.clone(), f.rule.clone(), f.message.clone());
        let mut x: Vec<_> = validate_content(&re, content).iter().map(key).collect();
        let mut y: Vec<_> = a.iter().map(key).collect();
        x.sort();
        y.sort();
        assert_eq!(x, y, "a re-parsed copy of the schema validates differently");
    }
    if let Some(map) = content.as_object() {
        assert_eq!(
            validate_content_map(schema, map),
            a,
            "validate_content and validate_content_map disagree"
        );
    }
    for f in &a {
        let kind = InvalidKind::from_rule(&f.rule)
            .unwrap_or_else(|| panic!("content finding with an unknown rule {f:?}"));
        assert_eq!(f.severity, kind.severity(), "severity of {f:?}");
        assert!(
            f.pointer.is_empty() || f.pointer.starts_with('/'),
            "not a JSON pointer: {f:?}"
        );
    }
    if !content.is_object() {
        assert!(
            a.iter().any(|f| f.rule == InvalidKind::WrongType.rule()),
            "non-object content must be a wrong type: {a:?}"
        );
    }
}

/// `content`: arbitrary schema + content → validation never panics, is
/// deterministic, agrees between its two entry points and with a re-parsed
/// copy of the schema, and reports only content rules.
///
/// Input: JSON `[schema, content]`; any other JSON value is content for a
/// random schema, also overlaid onto valid content under the schema's own
/// field names; non-JSON input is a [`ContentCase`]: a schema shape (a
/// random schema when it has no model) and values put over valid content.
pub fn content_target(data: &[u8]) -> Verdict {
    let seed = seed_of(data);
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Array(pair)) if pair.len() == 2 => {
            let (Some(schema), _) = parse_schema(&pair[0]) else {
                return Verdict::Reject;
            };
            check_content_findings(&schema, &pair[1]);
            let mut merged = generate_valid(&schema, seed);
            overlay(&schema, &mut merged, &pair[1]);
            check_content_findings(&schema, &Value::Object(merged));
        }
        Ok(v) => {
            let schema = random_schema(seed);
            check_content_findings(&schema, &v);
            let mut merged = generate_valid(&schema, seed);
            overlay(&schema, &mut merged, &v);
            check_content_findings(&schema, &Value::Object(merged));
        }
        Err(_) => {
            let Some(case) = decode::<ContentCase>(data) else {
                return Verdict::Reject;
            };
            let schema = parse_schema(&case.schema.to_value())
                .0
                .unwrap_or_else(|| random_schema(seed));
            let mut merged = generate_valid(&schema, seed);
            let n = schema.properties.len();
            for (i, v) in case.values.iter().take(16) {
                if n > 0 {
                    let name = schema.properties[usize::from(*i) % n].0.clone();
                    merged.insert(name, v.to_value(2));
                }
            }
            check_content_findings(&schema, &Value::Object(merged));
        }
    }
    Verdict::Keep
}

/// Puts each of `v`'s values (an object's, or an array's items) under one of
/// the schema's field names, chosen by a hash of the key.
fn overlay(schema: &RequestedSchema, into: &mut Map<String, Value>, v: &Value) {
    let n = schema.properties.len();
    if n == 0 {
        return;
    }
    let items: Vec<(String, &Value)> = match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        other => vec![(String::new(), other)],
    };
    for (k, v) in items {
        let i = (seed_of(k.as_bytes()) % n as u64) as usize;
        into.insert(schema.properties[i].0.clone(), v.clone());
    }
}

// ---------------------------------------------------------------- state

/// Fixed clock of the state targets (Unix ms).
const NOW_MS: u64 = 1_800_000_000_000;
/// Current key id of the fuzz key ring.
const KID_CURRENT: u32 = 7;
/// Older key id still in the ring.
const KID_OLD: u32 = 3;
/// Principal the states are bound to.
const PRINCIPAL: &str = "alice";

struct StateFixture {
    /// One sealer per codec, ring {7: K1 (current), 3: K2}.
    sealers: Vec<Sealer>,
    /// Same codec and kid 7, other key: tokens fail with `BadTag`.
    foreign: Vec<Sealer>,
    /// Same codec and key as `sealers`, kid 99 (not in the main ring).
    unknown_kid: Vec<Sealer>,
    digest: [u8; 32],
    other_digest: [u8; 32],
}

fn sealers_for(keys: &[(u32, Vec<u8>)]) -> Vec<Sealer> {
    let ring = KeyRing::from_keys(keys.iter().cloned()).unwrap_or_else(|e| panic!("{e}"));
    CodecName::ALL
        .into_iter()
        .map(|c| Sealer::new(&ring, c, SealerConfig::default()).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn state_fixture() -> &'static StateFixture {
    static F: OnceLock<StateFixture> = OnceLock::new();
    F.get_or_init(|| {
        let k1 = vec![0x11; 32];
        let k2 = vec![0x22; 48];
        let k3 = vec![0x33; 32];
        let digest = crate::state::request_digest("tools/call", "deploy", &json!({"env":"prod"}))
            .unwrap_or([1; 32]);
        let other_digest =
            crate::state::request_digest("tools/call", "deploy", &json!({"env":"dev"}))
                .unwrap_or([2; 32]);
        StateFixture {
            sealers: sealers_for(&[(KID_CURRENT, k1.clone()), (KID_OLD, k2)]),
            foreign: sealers_for(&[(KID_CURRENT, k3)]),
            unknown_kid: sealers_for(&[(99, k1)]),
            digest,
            other_digest,
        }
    })
}

/// Error kinds an unauthenticated token can produce: nothing past the tag.
const PRE_TAG: [&str; 5] = [
    "too_large",
    "malformed",
    "unsupported_version",
    "unknown_key",
    "bad_tag",
];

/// `state_open`: arbitrary bytes → `open()` for every codec never panics,
/// is never `Ok`, and fails only with a kind checked before or at the tag;
/// the SIMD token decoder accepts exactly what the `base64` crate's strict
/// engine accepts, with the same bytes.
pub fn state_open_target(data: &[u8]) -> Verdict {
    let mut decoded = Vec::new();
    let ours = crate::state::base64url::decode_into(data, &mut decoded).ok();
    assert_eq!(
        ours.map(|()| decoded),
        URL_SAFE_NO_PAD.decode(data).ok(),
        "base64url decoder disagrees with the base64 crate"
    );
    let fx = state_fixture();
    let binding = Binding {
        principal: PRINCIPAL,
        request_digest: &fx.digest,
    };
    for sealer in &fx.sealers {
        let got = sealer.open_bytes(data, &binding, NOW_MS);
        let e = match got {
            Ok(c) => panic!("{:?} opened arbitrary bytes: {c:?}", sealer.codec()),
            Err(e) => e,
        };
        assert!(PRE_TAG.contains(&e.kind()), "{:?}: {e:?}", sealer.codec());
        let mut buf = Vec::new();
        assert!(sealer.verify_in(data, NOW_MS, &mut buf).is_err());
        if let Ok(s) = std::str::from_utf8(data) {
            assert_eq!(sealer.open(s, &binding, NOW_MS).err(), Some(e));
        }
    }
    Verdict::Keep
}

/// The error opening `token` must give, given the decoded envelope of the
/// original token (`orig`) and of other valid tokens with their expected
/// results; `None` means `Ok`.
fn expected_open(
    sealer: &Sealer,
    token: &[u8],
    orig: &[u8],
    others: &[(Vec<u8>, Option<StateError>)],
) -> Result<Option<StateError>, &'static str> {
    let codec = sealer.codec();
    if token.len() > sealer.config().max_token_len {
        return Ok(Some(StateError::TooLarge));
    }
    let Ok(env) = URL_SAFE_NO_PAD.decode(token) else {
        return Err("malformed");
    };
    if env == orig {
        return Ok(None);
    }
    if let Some((_, want)) = others.iter().find(|(o, _)| *o == env) {
        return Ok(*want);
    }
    if env.len() < HEADER_LEN {
        return Err("malformed");
    }
    if env[0] != VERSION {
        return Ok(Some(StateError::UnsupportedVersion(env[0])));
    }
    if env[5] != codec.id() {
        return Err("malformed");
    }
    let kid = u32::from_be_bytes([env[1], env[2], env[3], env[4]]);
    if kid != KID_CURRENT && kid != KID_OLD {
        return Ok(Some(StateError::UnknownKey(kid)));
    }
    if env.len() < HEADER_LEN + codec.nonce_len() + codec.tag_len() {
        return Err("malformed");
    }
    Ok(Some(StateError::BadTag))
}

fn assert_open_as(
    sealer: &Sealer,
    token: &[u8],
    orig_token: &str,
    claims: &Claims,
    others: &[(Vec<u8>, Option<StateError>)],
    what: &str,
) {
    let fx = state_fixture();
    let binding = Binding {
        principal: PRINCIPAL,
        request_digest: &fx.digest,
    };
    let orig = URL_SAFE_NO_PAD.decode(orig_token).unwrap_or_default();
    let got = sealer.open_bytes(token, &binding, NOW_MS);
    let codec = sealer.codec();
    let shown = String::from_utf8_lossy(token);
    match expected_open(sealer, token, &orig, others) {
        Ok(None) => match got {
            Ok(c) => assert_eq!(&c, claims, "{codec:?} {what}: opened to other claims"),
            Err(e) => panic!("{codec:?} {what}: unchanged token {shown} refused: {e:?}"),
        },
        Ok(Some(want)) => assert_eq!(
            got.as_ref().err(),
            Some(&want),
            "{codec:?} {what}: token {shown} (original {orig_token})"
        ),
        Err(kind) => match got {
            Err(e) if e.kind() == kind => {}
            other => panic!("{codec:?} {what}: token {shown} gave {other:?}, want {kind}"),
        },
    }
    if token != orig_token.as_bytes() {
        assert!(
            !matches!(sealer.open_bytes(token, &binding, NOW_MS), Ok(ref c) if c == claims),
            "{codec:?} {what}: a changed token opened to the original claims"
        );
    }
}

/// Claims as the server would seal them, with fuzz-chosen free fields.
fn fuzz_claims(c: &ClaimsShape, digest: [u8; 32]) -> Claims {
    Claims {
        principal: PRINCIPAL.into(),
        client_id: c.client_id.then(|| "client-a".into()),
        request_digest: digest,
        issued_at: NOW_MS - u64::from(c.issued_ago_s % 128) * 1000,
        expires_at: NOW_MS + 600_000,
        nonce: c.nonce,
        round: c.round,
        payload: c.payload.iter().take(255).copied().collect(),
    }
}

/// `state_tamper`: a valid sealed state and an arbitrary mutation (bit
/// flips in text or bytes, splices with other tokens, truncation,
/// extension, re-encoding, byte overwrites, changed claims, other keys,
/// replay) → `Ok` with the original claims only when the token is
/// unchanged, otherwise exactly the error kind the envelope layout implies.
///
/// Input: a [`TamperCase`] (codec, claims fields, the [`Tamper`]).
pub fn state_tamper_target(data: &[u8]) -> Verdict {
    let fx = state_fixture();
    let Some(case) = decode::<TamperCase>(data) else {
        return Verdict::Reject;
    };
    let ci = usize::from(case.codec) % CodecName::ALL.len();
    let sealer = &fx.sealers[ci];
    let claims = fuzz_claims(&case.claims, fx.digest);
    let Ok(token) = sealer.seal(&claims) else {
        panic!("sealing small claims failed")
    };
    let none: &[(Vec<u8>, Option<StateError>)] = &[];
    let check = |t: &[u8], what: &str, others: &[(Vec<u8>, Option<StateError>)]| {
        assert_open_as(sealer, t, &token, &claims, others, what);
    };
    match case.tamper {
        Tamper::Unchanged => check(token.as_bytes(), "unchanged", none),
        Tamper::FlipBit(at) => check(&tamper::flip_bit(&token, usize::from(at)), "flip_bit", none),
        Tamper::FlipDecodedBit(at) => {
            let t = tamper::flip_decoded_bit(&token, usize::from(at));
            let t = t.unwrap_or_else(|| panic!("a sealed token does not decode"));
            check(t.as_bytes(), "flip_decoded_bit", none);
        }
        Tamper::Truncate(n) => {
            let n = usize::from(n) % (token.len() + 2);
            check(tamper::truncate(&token, n).as_bytes(), "truncate", none);
        }
        Tamper::Extend(extra, long) => {
            let extra: Vec<u8> = extra.into_iter().take(255).collect();
            check(&tamper::extend(&token, &extra), "extend", none);
            let long = tamper::extend(&token, &vec![b'A'; usize::from(long)]);
            check(&long, "extend-long", none);
        }
        Tamper::Padding => {
            let t = tamper::with_padding(&token).unwrap_or_default();
            check(t.as_bytes(), "with_padding", none);
        }
        Tamper::StandardBase64 => {
            let t = tamper::to_standard_base64(&token).unwrap_or_default();
            check(t.as_bytes(), "to_standard_base64", none);
        }
        Tamper::Splice(which, at) => {
            // Splice with another token: same sealer and other binding,
            // another key under the same kid, or another codec.
            let at = usize::from(at) % (token.len() + 8);
            let mut other_claims = claims.clone();
            let (other, want) = match which {
                SpliceWith::OtherPrincipal => {
                    other_claims.principal = "mallory".into();
                    (sealer.seal(&other_claims), Some(StateError::WrongPrincipal))
                }
                SpliceWith::OtherRequest => {
                    other_claims.request_digest = fx.other_digest;
                    (sealer.seal(&other_claims), Some(StateError::WrongRequest))
                }
                SpliceWith::ForeignKey => (fx.foreign[ci].seal(&claims), Some(StateError::BadTag)),
                SpliceWith::OtherCodec(n) => {
                    let oc = (ci + 1 + usize::from(n) % 5) % CodecName::ALL.len();
                    (
                        fx.sealers[oc].seal(&claims),
                        Some(StateError::Malformed(
                            "algorithm differs from the configured codec",
                        )),
                    )
                }
            };
            let other = other.unwrap_or_else(|e| panic!("seal: {e}"));
            let oenv = URL_SAFE_NO_PAD.decode(&other).unwrap_or_default();
            let t = tamper::splice(&token, &other, at).unwrap_or_default();
            check(t.as_bytes(), "splice", &[(oenv.clone(), want)]);
            let t = tamper::splice(&other, &token, at).unwrap_or_default();
            check(t.as_bytes(), "splice-reverse", &[(oenv, want)]);
        }
        Tamper::SetDecodedByte(i, v) => {
            let i = usize::from(i);
            let t = tamper::set_decoded_byte(&token, i % (token.len() * 3 / 4 + 1), v);
            if let Some(t) = t {
                check(t.as_bytes(), "set_decoded_byte", none);
            }
        }
        Tamper::ChangedClaims {
            d_issued,
            d_expires,
            principal,
            request,
        } => changed_claims(sealer, &claims, (d_issued, d_expires, principal, request)),
        Tamper::Overwrite(writes) => {
            let mut t = token.clone().into_bytes();
            for (i, b) in writes.into_iter().take(8) {
                let i = usize::from(i) % t.len().max(1);
                if let Some(x) = t.get_mut(i) {
                    *x = b;
                }
            }
            check(&t, "overwrite", none);
        }
        Tamper::OpenOnce => {
            let guard = MemoryReplayGuard::new();
            let binding = Binding {
                principal: PRINCIPAL,
                request_digest: &fx.digest,
            };
            let first = sealer.open_once(&token, &binding, NOW_MS, &guard);
            assert_eq!(
                first.map(OpenedClaims::into_claims).ok(),
                Some(claims),
                "first open_once"
            );
            let second = sealer.open_once(&token, &binding, NOW_MS + 1, &guard);
            assert_eq!(second.err(), Some(StateError::Replayed), "second open_once");
        }
        Tamper::Insert(i, ins) => {
            let mut t = token.clone().into_bytes();
            let i = usize::from(i) % (t.len() + 1);
            let ins: Vec<u8> = ins.into_iter().take(15).collect();
            t.splice(i..i, ins);
            check(&t, "insert", none);
        }
        Tamper::OtherKeys => {
            // Same claims under a kid not in the ring, or a key not in it.
            let t = fx.unknown_kid[ci].seal(&claims).unwrap_or_default();
            check(t.as_bytes(), "unknown-kid", none);
            let t = fx.foreign[ci].seal(&claims).unwrap_or_default();
            let want = URL_SAFE_NO_PAD.decode(&t).unwrap_or_default();
            check(
                t.as_bytes(),
                "foreign-key",
                &[(want, Some(StateError::BadTag))],
            );
        }
    }
    Verdict::Keep
}

/// Re-seals claims with changed time window or binding; the open result
/// must follow the documented check order.
fn changed_claims(sealer: &Sealer, base: &Claims, change: (i32, i32, bool, bool)) {
    let fx = state_fixture();
    let skew = u64::try_from(sealer.config().clock_skew.as_millis()).unwrap_or(u64::MAX);
    let mut c = base.clone();
    let (d_issued, d_expires, principal, request) = change;
    let (d_issued, d_expires) = (i64::from(d_issued), i64::from(d_expires));
    c.issued_at = NOW_MS.saturating_add_signed(d_issued);
    c.expires_at = NOW_MS.saturating_add_signed(d_expires);
    if principal {
        c.principal = "bob".into();
    }
    if request {
        c.request_digest = fx.other_digest;
    }
    let token = sealer.seal(&c).unwrap_or_else(|e| panic!("seal: {e}"));
    let want = if c.issued_at > NOW_MS + skew {
        Some(StateError::NotYetValid)
    } else if NOW_MS >= c.expires_at {
        Some(StateError::Expired)
    } else if c.principal != PRINCIPAL {
        Some(StateError::WrongPrincipal)
    } else if c.request_digest != fx.digest {
        Some(StateError::WrongRequest)
    } else {
        None
    };
    let binding = Binding {
        principal: PRINCIPAL,
        request_digest: &fx.digest,
    };
    let got = sealer.open(&token, &binding, NOW_MS);
    match want {
        None => assert_eq!(
            got.ok().map(OpenedClaims::into_claims),
            Some(c),
            "{:?}: fresh valid claims",
            sealer.codec()
        ),
        Some(e) => assert_eq!(
            got.err(),
            Some(e),
            "{:?}: changed claims {c:?}",
            sealer.codec()
        ),
    }
}

// ---------------------------------------------------------------- mrtr_message

fn message_eq(a: &Message, b: &Message) -> bool {
    json_eq(&a.to_value(), &b.to_value())
}

/// Parse → serialize → parse: the second parse succeeds and matches.
fn check_message_round_trip(m: &Message, what: &str) {
    let text = m.to_json();
    let again = parse_message(text.as_bytes())
        .unwrap_or_else(|e| panic!("{what}: serialized message {text} does not parse: {e}"));
    assert!(
        message_eq(m, &again),
        "{what}: {text} parses back as {again:?}, not {m:?}"
    );
    let text2 = again.to_json();
    let third = parse_message(text2.as_bytes())
        .unwrap_or_else(|e| panic!("{what}: {text2} does not parse: {e}"));
    assert!(
        message_eq(&again, &third),
        "{what}: second round trip differs"
    );
    let direct = message_from_value(m.to_value())
        .unwrap_or_else(|e| panic!("{what}: to_value of {m:?} does not classify: {e}"));
    assert_eq!(
        &direct, m,
        "{what}: to_value → message_from_value changed it"
    );
}

/// The MRTR and elicitation views of one JSON value: parsing never panics
/// and every typed view round-trips through its own serialization.
fn check_typed_views(v: &Value) {
    if let Ok(meta) = RequestMeta::from_params(Some(v)) {
        let again = RequestMeta::from_params(Some(&json!({ "_meta": meta.to_value() })));
        assert_eq!(again.as_ref(), Ok(&meta), "RequestMeta round trip");
    }
    if let Some(r) = InputRequiredResult::from_value(v) {
        let again = InputRequiredResult::from_value(&r.to_value());
        assert_eq!(again.as_ref(), Some(&r), "InputRequiredResult round trip");
        assert_eq!(
            ResultType::of(&r.to_value()),
            Some(ResultType::InputRequired)
        );
        for req in r.input_requests.iter().flat_map(|m| m.values()) {
            check_elicit_params(&req.params);
        }
    }
    if let Some(rt) = ResultType::of(v) {
        assert_eq!(ResultType::parse(rt.as_str()), rt, "ResultType round trip");
    }
    check_elicit_params(v);
    if let Ok(er) = serde_json::from_value::<ElicitResult>(v.clone()) {
        let again = serde_json::from_value::<ElicitResult>(er.to_value());
        assert_eq!(again.ok().as_ref(), Some(&er), "ElicitResult round trip");
    }
    if let Ok(p) = serde_json::from_value::<CallToolParams>(v.clone()) {
        let again = serde_json::to_value(&p)
            .ok()
            .and_then(|w| serde_json::from_value::<CallToolParams>(w).ok());
        assert_eq!(again.as_ref(), Some(&p), "CallToolParams round trip");
    }
}

fn check_elicit_params(v: &Value) {
    let Ok(p) = ElicitRequestParams::from_value(v) else {
        return;
    };
    for generation in [Generation::Legacy, Generation::Modern] {
        let again = ElicitRequestParams::from_value(&p.to_value(generation))
            .unwrap_or_else(|e| panic!("written elicitation params do not read back: {e}"));
        assert_eq!(again.mode(), p.mode());
        assert_eq!(again.message(), p.message());
        let third = ElicitRequestParams::from_value(&again.to_value(generation));
        assert_eq!(third.as_ref(), Ok(&again), "elicitation params not stable");
    }
}

/// The message validators on raw bytes: never panic, agree with the JSON
/// parser on what is JSON, are deterministic, point with JSON Pointers, and
/// agree with [`validate::validate_value`] apart from duplicate keys (which
/// only the raw text shows); the duplicate-noting parse builds serde_json's
/// tree; re-serialized JSON has no duplicate keys.
fn check_validators(data: &[u8]) {
    let parsed = serde_json::from_slice::<Value>(data).ok();
    let schema = parsed
        .as_ref()
        .and_then(|v| v.pointer("/params/requestedSchema"))
        .cloned()
        .or_else(|| Some(random_schema(seed_of(data)).to_value()));
    let runs = [
        (None, schema),
        (None, None),
        (Some(Generation::Legacy), None),
        (Some(Generation::Modern), None),
    ];
    for (i, (generation, schema)) in runs.into_iter().enumerate() {
        let opts = validate::Options { generation, schema };
        let a = validate::validate_document(data, &opts);
        assert_eq!(
            a.is_ok(),
            parsed.is_some() && data.len() <= crate::protocol::jsonrpc::MAX_MESSAGE_BYTES,
            "validate_document and the JSON parser disagree on {:?}",
            String::from_utf8_lossy(data)
        );
        if i == 0 {
            assert_eq!(
                validate::validate_document(data, &opts),
                a,
                "validation is not deterministic"
            );
        }
        let (Ok(report), Some(v)) = (a, parsed.as_ref()) else {
            continue;
        };
        for f in &report.findings {
            assert!(
                f.pointer.is_empty() || f.pointer.starts_with('/'),
                "not a JSON pointer: {f:?}"
            );
        }
        let mut direct = Vec::new();
        let (kind, g) = validate::validate_value(v, &opts, &mut direct);
        assert_eq!((kind, g), (report.kind, report.generation));
        let without_dups: Vec<Finding> = report
            .findings
            .into_iter()
            .filter(|f| f.rule != "json-duplicate-key")
            .collect();
        assert_eq!(direct, without_dups, "validate_value vs validate_document");
    }
    if let Some(v) = parsed {
        if data.len() <= crate::protocol::jsonrpc::MAX_MESSAGE_BYTES {
            let (tree, _) = validate::parse_noting_duplicates(data).expect("parsed above");
            assert_eq!(tree, v, "the duplicate-noting parse builds another tree");
        }
        let text = v.to_string();
        assert_eq!(
            validate::parse_noting_duplicates(text.as_bytes()).map(|(_, d)| d),
            Ok(Vec::new()),
            "a serialized value reports duplicate keys"
        );
    }
}

/// `mrtr_message`: arbitrary bytes → the JSON-RPC parser, the body decoder
/// and the MRTR / elicitation readers never panic; a parsed message
/// serializes and parses back to itself (floats within a few ulps); typed
/// views round-trip. Non-JSON input also builds a structured message (a
/// [`MessageShape`]) from
/// the bytes and checks its round trip.
pub fn mrtr_message_target(data: &[u8]) -> Verdict {
    check_peek_agrees(data);
    match parse_message(data) {
        Ok(m) => {
            check_message_round_trip(&m, "parsed message");
            let (params, result) = match &m {
                Message::Request(r) => (r.params.as_ref(), None),
                Message::Notification(n) => (n.params.as_ref(), None),
                Message::Response(r) => (None, r.result_value()),
            };
            if let Some(p) = params {
                check_typed_views(p);
            }
            if let Some(v) = result {
                check_typed_views(v);
            }
            let body = decode_body(Some("application/json"), data)
                .unwrap_or_else(|e| panic!("a parsed message fails decode_body: {e}"));
            assert_eq!(body.framing, Framing::Json);
            assert_eq!(body.messages.len(), 1);
            assert!(message_eq(&body.messages[0], &m));
        }
        Err(e) => {
            assert!(
                [codes::PARSE_ERROR, codes::INVALID_REQUEST].contains(&e.code()),
                "parse error code {}",
                e.code()
            );
            if let Ok(v) = serde_json::from_slice::<Value>(data) {
                assert!(
                    matches!(e, ParseError::Invalid { .. }),
                    "valid JSON reported as {e:?}"
                );
                check_typed_views(&v);
            } else if let Some(shape) = decode::<MessageShape>(data) {
                let m = shape.message();
                check_message_round_trip(&m, "built message");
                check_validators(m.to_json().as_bytes());
            }
        }
    }
    let _ = decode_body(Some("text/event-stream"), data);
    let _ = decode_body(None, data);
    check_validators(data);
    Verdict::Keep
}

/// The load client's fast reader, [`crate::protocol::jsonrpc::peek_result`],
/// answers only where the full parser reads the same integer-id result, or
/// refuses the text for a tree limit alone. Returns whether it answered.
pub fn check_peek_agrees(data: &[u8]) -> bool {
    let Some(p) = crate::protocol::jsonrpc::peek_result::<&serde_json::value::RawValue>(data)
    else {
        return false;
    };
    let text = String::from_utf8_lossy(data);
    match parse_message(data) {
        Ok(Message::Response(r)) => {
            assert_eq!(
                r.id,
                Some(crate::protocol::jsonrpc::RequestId::Number(p.id)),
                "{text}"
            );
            let peeked: Value = serde_json::from_str(p.result.get())
                .unwrap_or_else(|e| panic!("peeked result does not parse: {e}: {text}"));
            assert!(
                r.result_value().is_some_and(|v| json_eq(v, &peeked)),
                "peeked result differs from the parsed one: {text}"
            );
        }
        Err(e) if e.is_tree_limit() => {}
        other => panic!("peek_result answered where parse_message says {other:?}: {text}"),
    }
    true
}

// ---------------------------------------------------------------- sse_stream

fn parse_chunked(
    body: &[u8],
    cuts: &[usize],
    limit: usize,
) -> (Vec<SseEvent>, Result<bool, SseError>) {
    let mut p = SseParser::with_limit(limit);
    let mut out = Vec::new();
    let mut at = 0;
    for &c in cuts.iter().chain(std::iter::once(&body.len())) {
        if let Err(e) = p.push(&body[at..c], &mut out) {
            return (out, Err(e));
        }
        at = c;
    }
    let partial = p.finish();
    (out, Ok(partial))
}

/// `sse_stream`: the SSE parser yields the same events (and the same
/// "partial event" flag, and the same size error at the same event) however
/// the bytes are split; events re-encode and parse back to the same id and
/// data.
///
/// Input: an [`SseCase`]: an event size cap, cut positions, then the
/// stream bytes.
pub fn sse_stream_target(data: &[u8]) -> Verdict {
    let Some(case) = decode::<SseCase<'_>>(data) else {
        return Verdict::Reject;
    };
    let cap = 1 + usize::from(case.cap);
    let body = case.body;
    let mut cuts: Vec<usize> = case
        .cuts
        .iter()
        .take(8)
        .map(|c| usize::from(*c) % (body.len() + 1))
        .collect();
    cuts.sort_unstable();

    let whole = parse_chunked(body, &[], crate::protocol::sse::MAX_EVENT_BYTES);
    let (events, partial) = match &whole {
        (ev, Ok(p)) => (ev.clone(), *p),
        (_, Err(e)) => panic!("default cap hit by a {}-byte body: {e}", body.len()),
    };
    assert_eq!(parse_all(body).ok(), Some((events.clone(), partial)));
    let split = parse_chunked(body, &cuts, crate::protocol::sse::MAX_EVENT_BYTES);
    assert_eq!(split, whole, "events differ when split at {cuts:?}");
    let every: Vec<usize> = (1..body.len()).collect();
    if body.len() <= 4096 {
        let bytewise = parse_chunked(body, &every, crate::protocol::sse::MAX_EVENT_BYTES);
        assert_eq!(bytewise, whole, "events differ when fed byte by byte");
    }

    // With a small cap, the outcome must not depend on the split either.
    let capped = parse_chunked(body, &[], cap);
    let capped_split = parse_chunked(body, &cuts, cap);
    assert_eq!(
        capped_split, capped,
        "cap {cap}: outcome differs when split at {cuts:?}"
    );

    // Re-encoding keeps id and data.
    let mut re = String::new();
    for ev in &events {
        re.push_str(&encode_event(ev.id.as_deref(), &ev.data));
    }
    let (again, again_partial) =
        parse_all(re.as_bytes()).unwrap_or_else(|e| panic!("re-encoded stream: {e}"));
    assert!(!again_partial, "re-encoded stream ends mid-event");
    let key = |e: &SseEvent| (e.id.clone(), e.data.clone());
    assert_eq!(
        again.iter().map(key).collect::<Vec<_>>(),
        events.iter().map(key).collect::<Vec<_>>(),
        "re-encoded events differ"
    );
    let _ = decode_body(Some("text/event-stream"), body);
    Verdict::Keep
}

// ---------------------------------------------------------------- completions

static DB_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh database path on tmpfs when there is one (fast fsync).
fn scratch_db_path() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let dir = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let n = DB_COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("elicitkit-fuzz-{}-{n}.sqlite", std::process::id()))
}

fn remove_db(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// `completions`: an operation sequence decoded from the bytes (create,
/// complete, duplicate and concurrent complete, expire, cancel, complete by
/// another principal, restart, side-effect claims) applied to the store and
/// to the reference model: no divergence (side effects exactly once, no
/// completion after expiry or by another principal, legal transitions only).
///
/// Input: a [`CompletionsCase`]: the backends (`% 3`: memory, SQLite,
/// both), then the operations (derived `Arbitrary` on
/// [`crate::store::model::Op`], at most [`MAX_OPS`]). SQLite runs on a
/// fresh file on tmpfs when there is one, removed afterwards.
pub fn completions_target(data: &[u8]) -> Verdict {
    let Some(case) = decode::<CompletionsCase>(data) else {
        return Verdict::Reject;
    };
    let backends = case.backends % 3;
    let mut ops = case.ops;
    ops.truncate(MAX_OPS);
    if backends != 1
        && let Err(v) = run(&ops, BackendKind::Memory)
    {
        panic!("memory store: {v}\nops: {ops:?}");
    }
    if backends != 0 {
        let path = scratch_db_path();
        remove_db(&path);
        let res = run(&ops, BackendKind::Sqlite(path.clone()));
        remove_db(&path);
        if let Err(v) = res {
            panic!("sqlite store: {v}\nops: {ops:?}");
        }
    }
    Verdict::Keep
}

// ---------------------------------------------------------------- headers

/// `headers`: the `=?base64?…?=` codec. Any string encodes to printable
/// ASCII without surrounding spaces and decodes back; decoding any bytes
/// never panics, accepts a plain value only as itself, rejects what is
/// neither plain nor a valid sentinel, and what it accepts re-encodes to
/// something that decodes to the same value; the header check accepts the
/// headers built for any method and name.
pub fn headers_target(data: &[u8]) -> Verdict {
    let s = String::from_utf8_lossy(data);
    let enc = headers::encode_value(&s);
    assert!(
        enc.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "encoded value {enc:?} has bytes outside printable ASCII"
    );
    assert!(
        !enc.starts_with(' ') && !enc.ends_with(' '),
        "encoded value {enc:?} has surrounding spaces"
    );
    assert_eq!(
        headers::decode_value(enc.as_bytes()).as_deref(),
        Ok(&*s),
        "encode → decode of {s:?} via {enc:?}"
    );

    // What the codec treats as a sentinel: UTF-8 text `=?base64?…?=`
    // (non-UTF-8 bytes are refused as invalid characters first).
    let sentinel = std::str::from_utf8(data).is_ok()
        && data.starts_with(b"=?base64?")
        && data.ends_with(b"?=")
        && data.len() >= 11;
    match headers::decode_value(data) {
        Ok(v) => {
            if !sentinel {
                assert_eq!(
                    v.as_bytes(),
                    data,
                    "a plain value decoded to something else"
                );
                assert!(data.iter().all(|b| (0x20..=0x7e).contains(b)));
                assert!(!data.starts_with(b" ") && !data.ends_with(b" "));
            }
            let again = headers::encode_value(&v);
            assert_eq!(
                headers::decode_value(again.as_bytes()).as_deref(),
                Ok(v.as_str()),
                "decoded value {v:?} does not survive re-encoding"
            );
        }
        Err(e) => {
            if !sentinel {
                assert_eq!(e, HeaderValueError::InvalidCharacters, "plain value error");
                let plain_ok = std::str::from_utf8(data)
                    .is_ok_and(|t| t.bytes().all(|b| (0x20..=0x7e).contains(&b)) && t.trim() == t);
                assert!(!plain_ok, "a printable trimmed value was rejected");
            } else {
                assert!(
                    matches!(e, HeaderValueError::BadBase64 | HeaderValueError::NotUtf8),
                    "sentinel error {e:?}"
                );
            }
        }
    }

    // Headers built for a request (a [`HeaderCase`] read from the same
    // bytes) pass the check against the same body.
    let Some(case) = decode::<HeaderCase>(data) else {
        return Verdict::Keep;
    };
    let method = case.method();
    let name = case.name.clone();
    let params = json!({ "name": name, "uri": name });
    let version = case.version.clone();
    let hs = headers::request_headers(&method, Some(&params), &version);
    let get = |n: &str| {
        hs.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.as_bytes())
    };
    let checked = headers::check_request_headers(get, &method, Some(&params), &version);
    assert_eq!(
        checked,
        Ok(()),
        "headers {hs:?} built for {method:?} {name:?} fail their own check"
    );
    Verdict::Keep
}

#[cfg(test)]
mod tests {
    use super::check_peek_agrees as peek_agrees;
    use crate::protocol::jsonrpc::parse_message;

    #[test]
    fn peek_takes_plain_results_and_leaves_the_rest() {
        for ok in [
            &br#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","isError":false}}"#[..],
            br#" {"result":[1,{"a":"\u00e9"}],"id":-3,"jsonrpc":"2.0","extra":null} "#,
            br#"{"jsonrpc":"2.0","id":0,"result":"text"}"#,
            br#"{"jsonrpc":"2.0","id":0,"result":"\ud7ff \ue000"}"#,
        ] {
            assert!(peek_agrees(ok), "{}", String::from_utf8_lossy(ok));
        }
        for other in [
            &br#"{"jsonrpc":"2.0","id":"s","result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{},"method":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"error":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            br#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1.0,"result":{}}"#,
            br#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2\u002e0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            // found by the mrtr_message target: -0 is a float in the tree,
            // and serde_json skips ignored members without checking UTF-8
            br#"{"jsonrpc":"2.0","id":-0,"result":{}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"x\":\"\xff\"}",
            // found by the mrtr_message target: nor the surrogates of the
            // escapes it skips (a lone low surrogate, in the result and out)
            br#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"inp\ud41d\ude00d"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":{},"x":"\uDC00"}"#,
            // (a valid pair too: the full parser reads it)
            br#"{"jsonrpc":"2.0","id":3,"result":"\ud83d\ude00"}"#,
        ] {
            assert!(!peek_agrees(other), "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn peek_skips_members_past_the_trees_limits_and_says_so() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{}},"x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for limit in [
            deep.as_bytes(),
            br#"{"jsonrpc":"2.0","id":1,"result":{},"x":1e999}"#,
        ] {
            let e = parse_message(limit).unwrap_err();
            assert!(e.is_tree_limit(), "{e}");
            assert!(peek_agrees(limit), "{}", String::from_utf8_lossy(limit));
        }
        let e = parse_message(br#"{"jsonrpc":"2.0","id":1,"result":{},"x":tru}"#).unwrap_err();
        assert!(!e.is_tree_limit(), "{e}");
    }
}
