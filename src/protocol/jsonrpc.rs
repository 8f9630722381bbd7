//! JSON-RPC 2.0 framing: ids, requests, notifications, responses and errors,
//! with a bounded parser that classifies any input without panicking.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;

/// Largest message body the parser accepts by default (4 MiB).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// A request id: a string or an integer (never `null`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` for null, floats and other types.
    pub fn from_value(v: &Value) -> Option<RequestId> {
        match v {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            _ => None,
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_str()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        RequestId::from_value(&v)
            .ok_or_else(|| D::Error::custom("a request id must be a string or an integer"))
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// Error code (see [`super::codes`]).
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// Optional structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// Builds an error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// A request: has a method and an id, expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// Parameters, if any.
    pub params: Option<Value>,
}

/// A notification: has a method, no id, expects nothing back.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// Parameters, if any.
    pub params: Option<Value>,
}

/// The outcome carried by a response.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `result`.
    Result(Value),
    /// `error`.
    Error(ErrorObject),
}

/// A response: the answer to a request (`id` may be absent only on errors).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers; `None` when the request id was unreadable.
    pub id: Option<RequestId>,
    /// Result or error.
    pub outcome: Outcome,
}

impl Response {
    /// A successful response.
    pub fn result(id: RequestId, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Outcome::Result(result),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Outcome::Error(error),
        }
    }

    /// The result value, if this is a success.
    pub fn result_value(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Result(v) => Some(v),
            Outcome::Error(_) => None,
        }
    }

    /// The error object, if this is an error.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match &self.outcome {
            Outcome::Error(e) => Some(e),
            Outcome::Result(_) => None,
        }
    }
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (result or error).
    Response(Response),
}

impl Message {
    /// The message as a JSON value, with `"jsonrpc": "2.0"`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Message::Request(r) => {
                m.insert("id".into(), r.id.to_value());
                m.insert("method".into(), Value::from(r.method.as_str()));
                if let Some(p) = &r.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Message::Notification(n) => {
                m.insert("method".into(), Value::from(n.method.as_str()));
                if let Some(p) = &n.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Message::Response(r) => {
                m.insert(
                    "id".into(),
                    r.id.as_ref().map_or(Value::Null, RequestId::to_value),
                );
                match &r.outcome {
                    Outcome::Result(v) => {
                        m.insert("result".into(), v.clone());
                    }
                    Outcome::Error(e) => {
                        m.insert(
                            "error".into(),
                            serde_json::to_value(e).unwrap_or(Value::Null),
                        );
                    }
                }
            }
        }
        Value::Object(m)
    }

    /// The message serialized as compact JSON.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

/// Why a body is not a usable JSON-RPC message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The body exceeds the size cap; nothing was decoded.
    #[error("message of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Body length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// Not JSON (or nested deeper than serde_json's recursion limit of 128).
    #[error("invalid JSON at line {line}, column {column}: {reason}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser said.
        reason: String,
    },
    /// JSON, but not a valid JSON-RPC 2.0 message. `id` is set when it could be read.
    #[error("invalid JSON-RPC message: {reason}")]
    Invalid {
        /// The id, when the message had a readable one.
        id: Option<RequestId>,
        /// What is wrong.
        reason: String,
    },
}

impl ParseError {
    /// The JSON-RPC error code a server answers this with.
    pub fn code(&self) -> i64 {
        match self {
            ParseError::Json { .. } => super::codes::PARSE_ERROR,
            ParseError::TooLarge { .. } | ParseError::Invalid { .. } => {
                super::codes::INVALID_REQUEST
            }
        }
    }

    /// The request id, when it was readable.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            ParseError::Invalid { id, .. } => id.as_ref(),
            _ => None,
        }
    }

    /// Whether the text is JSON that only serde_json's tree refuses: nested
    /// deeper than its recursion limit, or a number beyond `f64`. Both are
    /// JSON by RFC 8259 (which lets parsers set such limits), and
    /// [`peek_result`] does not apply them to the members it skips.
    pub fn is_tree_limit(&self) -> bool {
        matches!(self, ParseError::Json { reason, .. }
            if reason.starts_with("recursion limit exceeded")
                || reason.starts_with("number out of range"))
    }
}

/// Parses bytes as JSON with the default size cap.
pub fn parse_json(bytes: &[u8]) -> Result<Value, ParseError> {
    parse_json_capped(bytes, MAX_MESSAGE_BYTES)
}

/// Parses bytes as JSON, refusing bodies larger than `max` before decoding.
pub fn parse_json_capped(bytes: &[u8], max: usize) -> Result<Value, ParseError> {
    parse_seed_capped(bytes, max, std::marker::PhantomData::<Value>)
}

/// What [`parse_json_capped`] does, with `seed` building the result: the
/// same cap, the same trailing-text rule (`serde_json::from_slice`'s), the
/// same errors.
pub fn parse_seed_capped<'de, T: serde::de::DeserializeSeed<'de>>(
    bytes: &'de [u8],
    max: usize,
    seed: T,
) -> Result<T::Value, ParseError> {
    if bytes.len() > max {
        return Err(ParseError::TooLarge {
            len: bytes.len(),
            max,
        });
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| ParseError::Json {
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    })
}

/// Parses one JSON-RPC message from bytes (size-capped, never panics).
pub fn parse_message(bytes: &[u8]) -> Result<Message, ParseError> {
    let v = parse_json(bytes)?;
    message_from_value(v)
}

/// Classifies a JSON value as a JSON-RPC message.
///
/// Requests and notifications are told apart by the presence of `id`;
/// responses by the absence of `method`.
pub fn message_from_value(v: Value) -> Result<Message, ParseError> {
    let Value::Object(mut obj) = v else {
        return Err(invalid(None, "a message must be a JSON object"));
    };
    let id_raw = obj.remove("id");
    let id = id_raw.as_ref().and_then(RequestId::from_value);
    match obj.get("jsonrpc") {
        Some(Value::String(s)) if s == "2.0" => {}
        _ => return Err(invalid(id, "\"jsonrpc\" must be \"2.0\"")),
    }
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return Err(invalid(id, "\"method\" must be a string"));
        };
        let params = obj.remove("params");
        if let Some(p) = &params
            && !(p.is_object() || p.is_array())
        {
            return Err(invalid(id, "\"params\" must be an object or an array"));
        }
        return match id_raw {
            None => Ok(Message::Notification(Notification { method, params })),
            Some(raw) => match id {
                Some(id) => Ok(Message::Request(Request { id, method, params })),
                None => Err(invalid(
                    None,
                    format!("a request id must be a string or an integer, not {raw}"),
                )),
            },
        };
    }
    let result = obj.remove("result");
    let error = obj.remove("error");
    let outcome = match (result, error) {
        (Some(r), None) => Outcome::Result(r),
        (None, Some(e)) => match serde_json::from_value::<ErrorObject>(e) {
            Ok(e) => Outcome::Error(e),
            Err(err) => return Err(invalid(id, format!("malformed error object: {err}"))),
        },
        (Some(_), Some(_)) => {
            return Err(invalid(id, "a response has both \"result\" and \"error\""));
        }
        (None, None) => {
            return Err(invalid(
                id,
                "neither \"method\" nor \"result\"/\"error\": not a JSON-RPC message",
            ));
        }
    };
    if id.is_none() && matches!(outcome, Outcome::Result(_)) {
        return Err(invalid(
            None,
            "a result response needs a string or integer id",
        ));
    }
    Ok(Message::Response(Response { id, outcome }))
}

/// A single JSON-RPC result response read without building a tree: its
/// integer id and its `result` as `R` (e.g. `&RawValue` for the verbatim
/// text, or a struct of the few members the caller needs).
#[derive(Debug, Clone, Copy)]
pub struct ResultPeek<R> {
    /// The response id (only integer ids take this path).
    pub id: i64,
    /// The `result` member.
    pub result: R,
}

/// Reads `bytes` as a plain result response (`jsonrpc` "2.0", an integer id,
/// a non-null `result` that reads as `R`, no `method`, no `error`, no
/// duplicate members) in one pass that validates the whole text as UTF-8
/// JSON and allocates only what `R` does. Anything else gives `None`: parse
/// it with [`parse_message`], which explains what is wrong. Wherever it
/// answers, [`parse_message`] reads the same id and result, or refuses the
/// text only for a tree limit ([`ParseError::is_tree_limit`]) inside a member
/// this skips or hands over verbatim (a unit test and the `mrtr_message`
/// fuzz target hold them to it).
pub fn peek_result<'a, R: Deserialize<'a>>(bytes: &'a [u8]) -> Option<ResultPeek<R>> {
    /// Set when the member is present, whatever its value (even `null`).
    #[derive(Default)]
    struct Present(bool);
    impl<'de> Deserialize<'de> for Present {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
        }
    }
    #[derive(Deserialize)]
    #[serde(bound(deserialize = "R: Deserialize<'de>"))]
    struct Peek<'a, R> {
        #[serde(borrow)]
        jsonrpc: Option<&'a str>,
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        #[serde(default)]
        method: Present,
        result: Option<R>,
        #[serde(default)]
        error: Present,
    }
    if bytes.len() > MAX_MESSAGE_BYTES {
        return None;
    }
    // serde_json skips the members it ignores without checking their UTF-8,
    // or the surrogate pairs of their `\u` escapes (a lone `\udc00` passes):
    // one validation pass up front makes the whole text count, and a text
    // that escapes a surrogate goes to the full parser, which checks them.
    let text = std::str::from_utf8(bytes).ok()?;
    if escapes_a_surrogate(bytes) {
        return None;
    }
    let p: Peek<'a, R> = serde_json::from_str(text).ok()?;
    if p.jsonrpc != Some("2.0") || p.method.0 || p.error.0 {
        return None;
    }
    let id = p.id?.get();
    if id.starts_with("-0") {
        // `-0` parses as an integer here but is a float (-0.0) in the tree,
        // which is not a valid result id.
        return None;
    }
    Some(ResultPeek {
        id: id.parse().ok()?,
        result: p.result?,
    })
}

/// Whether `bytes` hold a `\uD800`–`\uDFFF` escape (or what looks like one
/// after an escaped backslash: a false alarm only costs the full parse).
fn escapes_a_surrogate(bytes: &[u8]) -> bool {
    memchr::memmem::find_iter(bytes, b"\\u").any(|i| {
        matches!(
            bytes.get(i + 2..i + 4),
            Some([b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'])
        )
    })
}

fn invalid(id: Option<RequestId>, reason: impl Into<String>) -> ParseError {
    ParseError::Invalid {
        id,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_four_shapes() {
        let req = parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        assert!(matches!(
            req,
            Message::Request(Request {
                id: RequestId::Number(1),
                ..
            })
        ));
        let note =
            parse_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Message::Notification(_)));
        let ok = parse_message(br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#).unwrap();
        assert!(matches!(
            ok,
            Message::Response(Response {
                outcome: Outcome::Result(_),
                ..
            })
        ));
        let err =
            parse_message(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
                .unwrap();
        match err {
            Message::Response(r) => {
                assert_eq!(r.id, None);
                assert_eq!(r.error_object().unwrap().code, -32700);
            }
            other => panic!("expected response, got {other:?}"),
        }
    }

    #[test]
    fn rejects_bad_messages_with_reasons() {
        let e = parse_message(b"{\"jsonrpc\":\"2.0\",\n \"id\": 1,").unwrap_err();
        assert!(matches!(e, ParseError::Json { line: 2, .. }), "{e:?}");
        assert_eq!(e.code(), -32700);
        let e = parse_message(br#"{"jsonrpc":"1.0","id":5,"method":"x"}"#).unwrap_err();
        assert_eq!(e.id(), Some(&RequestId::Number(5)));
        assert_eq!(e.code(), -32600);
        let e = parse_message(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err();
        assert!(matches!(e, ParseError::Invalid { id: None, .. }));
        let e = parse_message(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).unwrap_err();
        assert!(matches!(e, ParseError::Invalid { .. }));
        let e = parse_message(br#"[1,2]"#).unwrap_err();
        assert!(matches!(e, ParseError::Invalid { .. }));
        let e = parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#).unwrap_err();
        assert!(e.to_string().contains("params"));
    }

    #[test]
    fn size_and_depth_are_bounded() {
        let big = vec![b' '; MAX_MESSAGE_BYTES + 1];
        assert!(matches!(
            parse_message(&big),
            Err(ParseError::TooLarge { .. })
        ));
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(
            parse_message(deep.as_bytes()),
            Err(ParseError::Json { .. })
        ));
    }

    #[test]
    fn serialize_then_parse_is_stable() {
        for raw in [
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"n","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":{}}}}"#,
        ] {
            let m = parse_message(raw.as_bytes()).unwrap();
            let again = parse_message(m.to_json().as_bytes()).unwrap();
            assert_eq!(m, again);
        }
    }
}
