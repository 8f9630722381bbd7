//! Mutations of one 2026-07-28 retry, shared by the in-process harness and
//! the network fuzzer: of its `requestState` (text changes through
//! [`crate::client::policy::Mutation`], splices with another flow's state,
//! wrong JSON types, oversize), of its `inputResponses` (decline, cancel,
//! wrong shapes and types, deep and wide values), of its headers (`Mcp-*`
//! including base64-encoded `Mcp-Name`, version, auth, framing) and of its
//! JSON text (depth, size, duplicate keys, invalid UTF-8, truncation, id
//! types). Every type derives `Arbitrary` (the harness decodes them from the
//! fuzzer's bytes, the network fuzzer from a seeded byte stream) and
//! `Serialize` (reproducers name them).

use arbitrary::Arbitrary;
use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::client::policy::Mutation;
use crate::client::raw::RawRequest;
use crate::protocol::headers::{self, METHOD, NAME, PROTOCOL_VERSION, SESSION_ID};

/// A JSON type to put where another is expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonKind {
    /// `null`.
    Null,
    /// `true`.
    Bool,
    /// `42`.
    Number,
    /// `"x"`.
    Text,
    /// `[]`.
    Array,
    /// `{}`.
    Object,
}

impl JsonKind {
    /// A value of this kind, carrying `inner` where the kind can.
    pub fn value(self, inner: &str) -> Value {
        match self {
            JsonKind::Null => Value::Null,
            JsonKind::Bool => Value::Bool(true),
            JsonKind::Number => Value::from(42),
            JsonKind::Text => Value::from(inner),
            JsonKind::Array => json!([inner]),
            JsonKind::Object => json!({ "state": inner }),
        }
    }
}

/// A change to the `requestState` of a retry.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StateMutation {
    /// One character replaced by the next base64url character.
    FlipChar {
        /// Position (wraps).
        index: u16,
    },
    /// One bit of the decoded bytes flipped.
    FlipDecodedBit {
        /// Bit (wraps).
        bit: u16,
    },
    /// The last `count` characters dropped (at least one).
    Truncate {
        /// How many.
        count: u8,
    },
    /// Characters appended.
    Extend {
        /// What (`"A"` when empty; at most 64 characters).
        suffix: String,
    },
    /// The same bytes re-encoded with `=` padding (an equivalent encoding).
    ReEncodePadded,
    /// The same bytes re-encoded as standard base64 (an equivalent encoding).
    ReEncodeStandard,
    /// The state's first `at` decoded bytes, then another flow's state.
    Splice {
        /// Split point.
        at: u16,
    },
    /// Another flow's state (other tool, arguments or principal) instead.
    Donor,
    /// Text that is no state at all.
    Garbage {
        /// The text (at most 64 characters).
        text: String,
    },
    /// The state as another JSON type.
    WrongType(JsonKind),
    /// `requestState` left out.
    Omit,
    /// The state followed by `kib` KiB of `A` (1..=256).
    Huge {
        /// Size in KiB.
        kib: u8,
    },
}

/// The `requestState` a mutated retry carries: `None` leaves it out.
impl StateMutation {
    /// Applies the mutation to `state`; `donor` is another flow's state.
    pub fn apply(&self, state: &str, donor: Option<&str>) -> Option<Value> {
        let text = |m: Mutation| Some(Value::from(m.apply(state)));
        match self {
            StateMutation::FlipChar { index } => text(Mutation::FlipChar {
                index: usize::from(*index),
            }),
            StateMutation::FlipDecodedBit { bit } => text(Mutation::FlipDecodedBit {
                bit: usize::from(*bit),
            }),
            StateMutation::Truncate { count } => text(Mutation::Truncate {
                count: usize::from(*count),
            }),
            StateMutation::Extend { suffix } => text(Mutation::Extend {
                suffix: suffix.chars().take(64).collect(),
            }),
            StateMutation::ReEncodePadded => text(Mutation::ReEncodePadded),
            StateMutation::ReEncodeStandard => text(Mutation::ReEncodeStandard),
            StateMutation::Splice { at } => text(Mutation::Splice {
                other: donor.unwrap_or("AAAAAAAA").to_owned(),
                at: usize::from(*at),
            }),
            StateMutation::Donor => match donor {
                Some(d) if d != state => Some(Value::from(d)),
                _ => text(Mutation::FlipChar { index: 0 }),
            },
            StateMutation::Garbage { text: g } => {
                let g: String = g.chars().take(64).collect();
                text(Mutation::Replace { with: g })
            }
            StateMutation::WrongType(k) => Some(k.value(state)),
            StateMutation::Omit => None,
            StateMutation::Huge { kib } => {
                let n = 1024 * usize::from((*kib).max(1));
                Some(Value::from(format!("{state}{}", "A".repeat(n))))
            }
        }
    }

    /// Whether a server that accepts the result accepts a *different* state:
    /// false for an equivalent encoding (same bytes under a lenient base64
    /// decoder, segment by segment) and for a left-out or wrong-typed state
    /// (no state at all, judged by the control instead).
    pub fn is_tamper(&self, original: &str, sent: Option<&Value>) -> bool {
        match (self, sent) {
            (StateMutation::Omit | StateMutation::WrongType(_), _) => false,
            (_, Some(Value::String(s))) => !equivalent(original, s),
            _ => false,
        }
    }

    /// Stable short name.
    pub fn name(&self) -> &'static str {
        match self {
            StateMutation::FlipChar { .. } => "flip_char",
            StateMutation::FlipDecodedBit { .. } => "flip_decoded_bit",
            StateMutation::Truncate { .. } => "truncate",
            StateMutation::Extend { .. } => "extend",
            StateMutation::ReEncodePadded => "re_encode_padded",
            StateMutation::ReEncodeStandard => "re_encode_standard",
            StateMutation::Splice { .. } => "splice",
            StateMutation::Donor => "donor",
            StateMutation::Garbage { .. } => "garbage",
            StateMutation::WrongType(_) => "wrong_type",
            StateMutation::Omit => "omit",
            StateMutation::Huge { .. } => "huge",
        }
    }
}

fn lenient_decode(s: &str) -> Option<Vec<u8>> {
    let cleaned: String = s
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(cleaned).ok()
}

/// Whether two state strings carry the same bytes: equal, or equal
/// segment by segment (split on `.`) under a lenient base64 decoder.
pub fn equivalent(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (x, y): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    x.len() == y.len()
        && x.iter().zip(&y).all(|(p, q)| {
            p == q || matches!((lenient_decode(p), lenient_decode(q)), (Some(m), Some(n)) if m == n)
        })
}

/// A change to the `inputResponses` of a retry.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnswerMutation {
    /// Every answer becomes `{"action": "decline"}`.
    Decline,
    /// Every answer becomes `{"action": "cancel"}`.
    Cancel,
    /// The answers left out (`{}`: the server should ask again).
    Empty,
    /// One answer dropped.
    DropOne,
    /// An answer under a key nobody asked for, beside the real ones.
    ExtraKey,
    /// `action` set to another text.
    WrongAction {
        /// The action (at most 32 characters).
        action: String,
    },
    /// `content` as another JSON type.
    ContentType(JsonKind),
    /// Each field of `content` as another JSON type.
    FieldType(JsonKind),
    /// An answer as another JSON type.
    AnswerType(JsonKind),
    /// `inputResponses` itself as another JSON type.
    ResponsesType(JsonKind),
    /// `content` nested `depth` arrays deep (1..=512).
    Deep {
        /// Depth.
        depth: u16,
    },
    /// `n * 16` extra keys (`n` in 1..=64: 16 to 1,024). Up to 4,096 before:
    /// those sessions were 8 % of the corpus and 29 % of its time, and a
    /// thousand answers already take the many-keys path any server has.
    Wide {
        /// Multiplier.
        n: u8,
    },
}

impl AnswerMutation {
    /// Applies the mutation to the valid answers.
    pub fn apply(&self, answers: &Map<String, Value>) -> Value {
        let mut m = answers.clone();
        let each = |m: &mut Map<String, Value>, f: &dyn Fn(&mut Value)| {
            for v in m.values_mut() {
                f(v);
            }
        };
        match self {
            AnswerMutation::Decline => each(&mut m, &|v| *v = json!({"action": "decline"})),
            AnswerMutation::Cancel => each(&mut m, &|v| *v = json!({"action": "cancel"})),
            AnswerMutation::Empty => m.clear(),
            AnswerMutation::DropOne => {
                if let Some(k) = m.keys().next().cloned() {
                    m.remove(&k);
                }
            }
            AnswerMutation::ExtraKey => {
                m.insert(
                    "elicitkit-unexpected".into(),
                    json!({"action": "accept", "content": {"x": 1}}),
                );
            }
            AnswerMutation::WrongAction { action } => {
                let a: String = action.chars().take(32).collect();
                each(&mut m, &|v| set(v, "action", Value::from(a.clone())));
            }
            AnswerMutation::ContentType(k) => each(&mut m, &|v| set(v, "content", k.value("x"))),
            AnswerMutation::FieldType(k) => each(&mut m, &|v| {
                if let Some(c) = v.get_mut("content").and_then(Value::as_object_mut) {
                    for f in c.values_mut() {
                        *f = k.value("x");
                    }
                }
            }),
            AnswerMutation::AnswerType(k) => each(&mut m, &|v| *v = k.value("accept")),
            AnswerMutation::ResponsesType(k) => return k.value("accept"),
            AnswerMutation::Deep { depth } => {
                let mut deep = Value::from(1);
                for _ in 0..(*depth).clamp(1, 512) {
                    deep = Value::Array(vec![deep]);
                }
                each(&mut m, &|v| {
                    set(v, "content", json!({ "deep": deep.clone() }))
                });
            }
            AnswerMutation::Wide { n } => {
                for i in 0..usize::from((*n).clamp(1, 64)) * 16 {
                    m.insert(format!("k{i}"), json!({"action": "accept"}));
                }
            }
        }
        Value::Object(m)
    }

    /// Whether the body stays within common JSON parsers' limits (deep
    /// nesting past serde_json's 128 levels is a fair parse error).
    pub fn keeps_json(&self) -> bool {
        !matches!(self, AnswerMutation::Deep { depth } if *depth > 100)
    }

    /// Stable short name.
    pub fn name(&self) -> &'static str {
        match self {
            AnswerMutation::Decline => "decline",
            AnswerMutation::Cancel => "cancel",
            AnswerMutation::Empty => "empty",
            AnswerMutation::DropOne => "drop_one",
            AnswerMutation::ExtraKey => "extra_key",
            AnswerMutation::WrongAction { .. } => "wrong_action",
            AnswerMutation::ContentType(_) => "content_type",
            AnswerMutation::FieldType(_) => "field_type",
            AnswerMutation::AnswerType(_) => "answer_type",
            AnswerMutation::ResponsesType(_) => "responses_type",
            AnswerMutation::Deep { .. } => "deep",
            AnswerMutation::Wide { .. } => "wide",
        }
    }
}

/// Sets `key` of an answer that is an object (answers changed to another
/// JSON type by an earlier mutation stay as they are; indexing them would
/// panic).
fn set(v: &mut Value, key: &str, to: Value) {
    if let Some(o) = v.as_object_mut() {
        o.insert(key.to_owned(), to);
    }
}

/// A change to the headers of a request.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HeaderMutation {
    /// No `Authorization`.
    DropAuth,
    /// No `Mcp-Method`.
    DropMethod,
    /// Another `Mcp-Method`.
    WrongMethod {
        /// The value (at most 32 characters).
        value: String,
    },
    /// No `Mcp-Name`.
    DropName,
    /// Another `Mcp-Name`.
    WrongName {
        /// The value (at most 32 characters).
        value: String,
    },
    /// `Mcp-Name` as the `=?base64?…?=` sentinel of its own value (valid).
    EncodedName,
    /// `Mcp-Name` as a sentinel that is not valid base64.
    BadSentinel,
    /// Another `MCP-Protocol-Version`.
    WrongVersion {
        /// The value (at most 16 characters).
        value: String,
    },
    /// No `MCP-Protocol-Version`.
    DropVersion,
    /// An `Mcp-Session-Id` (2026-07-28 must ignore it).
    SessionId {
        /// The value (at most 32 characters).
        value: String,
    },
    /// No `Accept`.
    DropAccept,
    /// `Content-Type: text/plain`.
    WrongContentType,
    /// A `kib` KiB `Mcp-Name` (1..=16).
    HugeName {
        /// Size in KiB.
        kib: u8,
    },
}

/// Header values must be visible ASCII; anything else is dropped.
fn printable(s: &str, max: usize) -> String {
    s.chars()
        .filter(|c| (' '..='~').contains(c))
        .take(max)
        .collect::<String>()
        .trim()
        .to_owned()
}

impl HeaderMutation {
    /// Applies the mutation to `req` (whose token is `req.token`).
    pub fn apply(&self, req: RawRequest) -> RawRequest {
        let name = req
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(NAME))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        match self {
            HeaderMutation::DropAuth => req.token(None),
            HeaderMutation::DropMethod => req.without_header(METHOD),
            HeaderMutation::WrongMethod { value } => req.header(METHOD, printable(value, 32)),
            HeaderMutation::DropName => req.without_header(NAME),
            HeaderMutation::WrongName { value } => req.header(NAME, printable(value, 32)),
            HeaderMutation::EncodedName => {
                let decoded = headers::decode_value(name.as_bytes()).unwrap_or(name);
                let b64 = base64::engine::general_purpose::STANDARD.encode(decoded);
                req.header(NAME, format!("=?base64?{b64}?="))
            }
            HeaderMutation::BadSentinel => req.header(NAME, "=?base64?@@@?="),
            HeaderMutation::WrongVersion { value } => {
                req.header(PROTOCOL_VERSION, printable(value, 16))
            }
            HeaderMutation::DropVersion => req.without_header(PROTOCOL_VERSION),
            HeaderMutation::SessionId { value } => {
                let v = printable(value, 32).replace(' ', "");
                req.header(SESSION_ID, if v.is_empty() { "s".into() } else { v })
            }
            HeaderMutation::DropAccept => req.without_header("Accept"),
            HeaderMutation::WrongContentType => req.header("Content-Type", "text/plain"),
            HeaderMutation::HugeName { kib } => {
                req.header(NAME, "n".repeat(1024 * usize::from((*kib).clamp(1, 16))))
            }
        }
    }

    /// Whether the mutation breaks the HTTP framing (`Accept`,
    /// `Content-Type`), so that a plain-text 4xx reply is fair.
    pub fn breaks_framing(&self) -> bool {
        matches!(
            self,
            HeaderMutation::DropAccept
                | HeaderMutation::WrongContentType
                | HeaderMutation::HugeName { .. }
        )
    }

    /// Stable short name.
    pub fn name(&self) -> &'static str {
        match self {
            HeaderMutation::DropAuth => "drop_auth",
            HeaderMutation::DropMethod => "drop_method",
            HeaderMutation::WrongMethod { .. } => "wrong_method",
            HeaderMutation::DropName => "drop_name",
            HeaderMutation::WrongName { .. } => "wrong_name",
            HeaderMutation::EncodedName => "encoded_name",
            HeaderMutation::BadSentinel => "bad_sentinel",
            HeaderMutation::WrongVersion { .. } => "wrong_version",
            HeaderMutation::DropVersion => "drop_version",
            HeaderMutation::SessionId { .. } => "session_id",
            HeaderMutation::DropAccept => "drop_accept",
            HeaderMutation::WrongContentType => "wrong_content_type",
            HeaderMutation::HugeName { .. } => "huge_name",
        }
    }
}

/// A change to the JSON text of a request body.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BodyMutation {
    /// `arguments` wrapped in `depth` arrays (1..=4096).
    Deep {
        /// Depth.
        depth: u16,
    },
    /// An extra `kib` KiB string argument (1..=255).
    Large {
        /// Size in KiB.
        kib: u8,
    },
    /// `"params"` given twice in the text, the first time as `{}`.
    DuplicateParams,
    /// `"id"` given twice in the text.
    DuplicateId,
    /// An invalid UTF-8 byte inside a string.
    InvalidUtf8,
    /// The text cut after `at` bytes (modulo its length).
    Truncated {
        /// Where.
        at: u16,
    },
    /// The id as another JSON type.
    IdType(JsonKind),
    /// No `"jsonrpc": "2.0"`.
    NoVersion,
}

impl BodyMutation {
    /// Applies the mutation to `req`'s JSON body.
    pub fn apply(&self, mut req: RawRequest) -> RawRequest {
        let Ok(mut v) = serde_json::from_slice::<Value>(&req.body) else {
            return req;
        };
        let text = |v: &Value| v.to_string().into_bytes();
        req.body = match self {
            BodyMutation::Deep { depth } => {
                let mut deep = v["params"]["arguments"].take();
                for _ in 0..(*depth).clamp(1, 4096) {
                    deep = Value::Array(vec![deep]);
                }
                // serde_json's writer is not recursive-safe past its limit;
                // write the nesting by hand.
                v["params"]["arguments"] = Value::Null;
                let inner = v.to_string();
                let nested = deep_text(&deep);
                inner
                    .replacen("\"arguments\":null", &format!("\"arguments\":{nested}"), 1)
                    .into_bytes()
            }
            BodyMutation::Large { kib } => {
                let n = 1024 * usize::from((*kib).max(1));
                if let Some(a) = v["params"]["arguments"].as_object_mut() {
                    a.insert("elicitkit_large".into(), Value::from("x".repeat(n)));
                }
                text(&v)
            }
            BodyMutation::DuplicateParams => {
                let t = v.to_string();
                t.replacen("\"params\":", "\"params\":{},\"params\":", 1)
                    .into_bytes()
            }
            BodyMutation::DuplicateId => {
                let t = v.to_string();
                t.replacen("\"id\":", "\"id\":\"first\",\"id\":", 1)
                    .into_bytes()
            }
            BodyMutation::InvalidUtf8 => {
                let t = v.to_string();
                let mut b = t
                    .replacen("\"tools/call\"", "\"tools/call\u{1}\"", 1)
                    .into_bytes();
                if let Some(i) = b.iter().position(|&c| c == 1) {
                    b[i] = 0xff;
                }
                b
            }
            BodyMutation::Truncated { at } => {
                let t = text(&v);
                let n = usize::from(*at) % t.len().max(1);
                t[..n].to_vec()
            }
            BodyMutation::IdType(k) => {
                v["id"] = k.value("id");
                text(&v)
            }
            BodyMutation::NoVersion => {
                if let Some(o) = v.as_object_mut() {
                    o.remove("jsonrpc");
                }
                text(&v)
            }
        };
        req
    }

    /// Whether the body is still one JSON-RPC request the server can answer
    /// with its id (otherwise a reply with `id: null` is fair).
    pub fn keeps_id(&self) -> bool {
        // Deep nesting passes common parsers' depth limits and duplicate
        // keys are refused by strict ones: both are fair parse errors.
        matches!(self, BodyMutation::Large { .. })
    }

    /// Stable short name.
    pub fn name(&self) -> &'static str {
        match self {
            BodyMutation::Deep { .. } => "deep",
            BodyMutation::Large { .. } => "large",
            BodyMutation::DuplicateParams => "duplicate_params",
            BodyMutation::DuplicateId => "duplicate_id",
            BodyMutation::InvalidUtf8 => "invalid_utf8",
            BodyMutation::Truncated { .. } => "truncated",
            BodyMutation::IdType(_) => "id_type",
            BodyMutation::NoVersion => "no_version",
        }
    }
}

/// The JSON text of nested arrays without recursion.
fn deep_text(v: &Value) -> String {
    let mut depth = 0;
    let mut cur = v;
    while let Value::Array(a) = cur {
        if a.len() != 1 {
            break;
        }
        depth += 1;
        cur = &a[0];
    }
    format!("{}{}{}", "[".repeat(depth), cur, "]".repeat(depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equivalence_is_byte_level() {
        assert!(equivalent("AQ", "AQ=="));
        assert!(equivalent("-_8", "+/8="));
        assert!(equivalent("rs1.AQ.AQID", "rs1.AQ==.AQID"));
        // Trailing bits past the last byte carry nothing: the same bytes.
        assert!(equivalent("AQ", "AR"));
        assert!(!equivalent("AQ", "Ag"));
        assert!(!equivalent("rs1.AQ.AQID", "rs1.AQ"));
        let m = StateMutation::ReEncodePadded;
        assert!(!m.is_tamper("AQ", m.apply("AQ", None).as_ref()));
        let m = StateMutation::FlipChar { index: 0 };
        assert!(m.is_tamper("AQID", m.apply("AQID", None).as_ref()));
        assert!(!StateMutation::Omit.is_tamper("AQID", None));
    }

    #[test]
    fn answer_and_body_mutations_keep_json() {
        let a: Map<String, Value> =
            serde_json::from_value(json!({"k": {"action": "accept", "content": {"x": 1}}}))
                .unwrap();
        assert_eq!(AnswerMutation::Decline.apply(&a)["k"]["action"], "decline");
        assert_eq!(
            AnswerMutation::ResponsesType(JsonKind::Number).apply(&a),
            json!(42)
        );
        // Mutations compose: one after an answer became an array.
        let arr: Map<String, Value> = AnswerMutation::AnswerType(JsonKind::Array)
            .apply(&a)
            .as_object()
            .cloned()
            .unwrap();
        for m in [
            AnswerMutation::ContentType(JsonKind::Null),
            AnswerMutation::WrongAction { action: "x".into() },
            AnswerMutation::Deep { depth: 3 },
            AnswerMutation::FieldType(JsonKind::Bool),
        ] {
            assert_eq!(m.apply(&arr)["k"], json!(["accept"]), "{m:?}");
        }
        let req = crate::client::raw::modern_post(
            "t",
            "http://127.0.0.1:1/mcp",
            1,
            "tools/call",
            Some(json!({"name": "x", "arguments": {"a": 1}})),
        );
        let deep = BodyMutation::Deep { depth: 3000 }.apply(req.clone());
        let text = String::from_utf8(deep.body).unwrap();
        assert!(text.contains(&"[".repeat(3000)), "{}", &text[..80]);
        let dup = BodyMutation::DuplicateId.apply(req.clone());
        assert!(
            String::from_utf8_lossy(&dup.body).contains("\"id\":\"first\",\"id\":1"),
            "{}",
            String::from_utf8_lossy(&dup.body)
        );
        let bad = BodyMutation::InvalidUtf8.apply(req.clone());
        assert!(std::str::from_utf8(&bad.body).is_err());
        let enc = HeaderMutation::EncodedName.apply(req);
        let name = enc.headers.iter().find(|(k, _)| k == NAME).unwrap();
        assert_eq!(name.1, "=?base64?eA==?=");
    }
}
