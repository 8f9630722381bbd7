//! The structured inputs of the property targets, decoded from the fuzzer's
//! bytes with `#[derive(Arbitrary)]`: schema shapes, JSON value shapes,
//! JSON-RPC message shapes, `requestState` tamper cases, SSE split cases and
//! header cases. Each shape is a description that [`props`](super::props)
//! turns into the real input (a JSON `requestedSchema`, a [`Message`], a
//! token...), so a shape may well describe something invalid: the parsers
//! are what is under test.
//!
//! Sizes are bounded where the input is built (depth, counts, lengths), not
//! by the decoder, so every byte string still decodes.

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Map, Number, Value, json};

use crate::protocol::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
use crate::protocol::mrtr::{InputRequiredResult, RequestMeta};
use crate::protocol::{ClientCapabilities, InputRequest};

/// Decodes a `T` from all of `data` (`arbitrary_take_rest`); `None` only
/// when the type cannot be built from so few bytes, which the derives here
/// never do (they fall back to zeros).
pub fn decode<'a, T: Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

// ------------------------------------------------------------------ text

/// Words that matter to the parsers (formats, field names, secret words,
/// sentinels) plus free text.
const WORDS: [&str; 24] = [
    "",
    "name",
    "email",
    "uri",
    "date",
    "date-time",
    "password",
    "API key",
    "a",
    "A",
    "é",
    "\u{0}",
    " ",
    "=?base64?YQ?=",
    "https://example.com/x",
    "2026-07-28",
    "true",
    "1",
    "-1",
    "1e400",
    "\"",
    "\\",
    "日本",
    "x\ny",
];

/// A short string: one of [`WORDS`], or free text (at most 64 chars).
#[derive(Debug, Clone, Arbitrary)]
pub enum TextShape {
    /// A word from the vocabulary.
    Word(u8),
    /// Free text.
    Free(String),
}

impl TextShape {
    /// The string.
    pub fn text(&self) -> String {
        match self {
            TextShape::Word(i) => WORDS[usize::from(*i) % WORDS.len()].to_owned(),
            TextShape::Free(s) => s.chars().take(64).collect(),
        }
    }
}

// ------------------------------------------------------------------ values

/// A JSON value; [`ValueShape::to_value`] caps depth and sizes.
#[derive(Debug, Clone, Arbitrary)]
pub enum ValueShape {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A small integer.
    Int(i16),
    /// A large unsigned integer.
    Big(u64),
    /// A negative large integer.
    Negative(i64),
    /// A finite float from 16 bits.
    Float(u16),
    /// A string.
    Text(TextShape),
    /// An array.
    Array(Vec<ValueShape>),
    /// An object (later duplicates overwrite earlier keys).
    Object(Vec<(TextShape, ValueShape)>),
}

impl ValueShape {
    /// The value, at most `depth` containers deep and 8 items per container.
    pub fn to_value(&self, depth: u8) -> Value {
        match self {
            ValueShape::Null => Value::Null,
            ValueShape::Bool(b) => Value::Bool(*b),
            ValueShape::Int(i) => Value::from(*i),
            ValueShape::Big(u) => Value::from(*u),
            ValueShape::Negative(i) => Value::from(*i),
            ValueShape::Float(f) => {
                Number::from_f64(f64::from(*f) / 7.0 - 1000.0).map_or(Value::Null, Value::Number)
            }
            ValueShape::Text(t) => Value::String(t.text()),
            ValueShape::Array(a) if depth > 0 => {
                Value::Array(a.iter().take(8).map(|v| v.to_value(depth - 1)).collect())
            }
            ValueShape::Object(o) if depth > 0 => Value::Object(
                o.iter()
                    .take(8)
                    .map(|(k, v)| (k.text(), v.to_value(depth - 1)))
                    .collect(),
            ),
            ValueShape::Array(_) | ValueShape::Object(_) => Value::Null,
        }
    }
}

// ------------------------------------------------------------------ schemas

/// A number as a schema keyword value.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum NumShape {
    /// A small integer.
    Int(i16),
    /// A fraction (`n / 4`).
    Quarter(i16),
    /// A large integer.
    Big(i64),
}

impl NumShape {
    fn value(self) -> Value {
        match self {
            NumShape::Int(i) => Value::from(i),
            NumShape::Quarter(q) => {
                Number::from_f64(f64::from(q) / 4.0).map_or(Value::Null, Value::Number)
            }
            NumShape::Big(b) => Value::from(b),
        }
    }
}

/// `format` of a string field: the four allowed values or another one.
#[derive(Debug, Clone, Arbitrary)]
pub enum FormatShape {
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date`.
    Date,
    /// `date-time`.
    DateTime,
    /// Anything else.
    Other(TextShape),
}

impl FormatShape {
    fn text(&self) -> String {
        match self {
            FormatShape::Email => "email".into(),
            FormatShape::Uri => "uri".into(),
            FormatShape::Date => "date".into(),
            FormatShape::DateTime => "date-time".into(),
            FormatShape::Other(t) => t.text(),
        }
    }
}

/// A choice of a select field: value and title.
#[derive(Debug, Clone, Arbitrary)]
pub struct OptionShape {
    /// The `const` / `enum` value.
    pub value: TextShape,
    /// The title (`None`: left out, which titled shapes require).
    pub title: Option<TextShape>,
}

/// A `default` keyword: an index into the options, or a value of any type.
#[derive(Debug, Clone, Arbitrary)]
pub enum DefaultShape {
    /// No default.
    None,
    /// The option (or field type) it should be.
    Fitting(u8),
    /// Anything.
    Any(ValueShape),
}

/// The kind of a form field: the eight spec shapes and some that are not.
#[derive(Debug, Clone, Arbitrary)]
pub enum KindShape {
    /// `StringSchema`.
    String {
        /// `minLength`.
        min_length: Option<u8>,
        /// `maxLength`.
        max_length: Option<u8>,
        /// `format`.
        format: Option<FormatShape>,
        /// `default`.
        default: DefaultShape,
    },
    /// `NumberSchema`.
    Number {
        /// `integer` rather than `number`.
        integer: bool,
        /// `minimum`.
        minimum: Option<NumShape>,
        /// `maximum`.
        maximum: Option<NumShape>,
        /// `default`.
        default: DefaultShape,
    },
    /// `BooleanSchema`.
    Boolean {
        /// `default`.
        default: DefaultShape,
    },
    /// `UntitledSingleSelectEnumSchema` (`enum`).
    Enum {
        /// The values.
        options: Vec<OptionShape>,
        /// `default`.
        default: DefaultShape,
    },
    /// `TitledSingleSelectEnumSchema` (`oneOf` of `{const, title}`).
    OneOf {
        /// The choices.
        options: Vec<OptionShape>,
        /// `default`.
        default: DefaultShape,
    },
    /// `LegacyTitledEnumSchema` (`enum` + `enumNames`).
    EnumNames {
        /// The choices.
        options: Vec<OptionShape>,
        /// `default`.
        default: DefaultShape,
    },
    /// `UntitledMultiSelectEnumSchema` (`items.enum`).
    MultiEnum {
        /// The choices.
        options: Vec<OptionShape>,
        /// `minItems`.
        min_items: Option<u8>,
        /// `maxItems`.
        max_items: Option<u8>,
        /// `default`.
        default: DefaultShape,
    },
    /// `TitledMultiSelectEnumSchema` (`items.anyOf`).
    MultiAnyOf {
        /// The choices.
        options: Vec<OptionShape>,
        /// `minItems`.
        min_items: Option<u8>,
        /// `maxItems`.
        max_items: Option<u8>,
        /// `default`.
        default: DefaultShape,
    },
    /// Off the spec: a nested object.
    Nested(Box<FieldShape>),
    /// Off the spec: any `type` value with any extra keywords.
    Odd {
        /// `type`.
        ty: ValueShape,
        /// Extra keywords (`pattern`, `items`, unknown ones...).
        extra: Vec<(TextShape, ValueShape)>,
    },
}

/// One field of a form.
#[derive(Debug, Clone, Arbitrary)]
pub struct FieldShape {
    /// Property name.
    pub name: TextShape,
    /// In `required`.
    pub required: bool,
    /// `title`.
    pub title: Option<TextShape>,
    /// `description`.
    pub description: Option<TextShape>,
    /// Its kind.
    pub kind: KindShape,
}

/// A `requestedSchema` (possibly off the spec).
#[derive(Debug, Clone, Arbitrary)]
pub struct SchemaShape {
    /// A `$schema` keyword.
    pub dollar_schema: Option<TextShape>,
    /// `type`: `"object"` unless this says otherwise.
    pub not_object: Option<ValueShape>,
    /// The fields (at most 12 are used).
    pub fields: Vec<FieldShape>,
    /// Names in `required` that are not properties.
    pub stray_required: Vec<TextShape>,
}

fn options_of(options: &[OptionShape]) -> Vec<(String, Option<String>)> {
    options
        .iter()
        .take(10)
        .map(|o| (o.value.text(), o.title.as_ref().map(TextShape::text)))
        .collect()
}

fn default_of(d: &DefaultShape, fitting: impl Fn(u8) -> Value) -> Option<Value> {
    match d {
        DefaultShape::None => None,
        DefaultShape::Fitting(i) => Some(fitting(*i)),
        DefaultShape::Any(v) => Some(v.to_value(2)),
    }
}

fn pick(options: &[(String, Option<String>)], i: u8) -> Value {
    if options.is_empty() {
        Value::from("")
    } else {
        Value::from(options[usize::from(i) % options.len()].0.clone())
    }
}

fn titled(options: &[(String, Option<String>)]) -> Value {
    Value::Array(
        options
            .iter()
            .map(|(v, t)| match t {
                Some(t) => json!({"const": v, "title": t}),
                None => json!({"const": v}),
            })
            .collect(),
    )
}

fn values(options: &[(String, Option<String>)]) -> Value {
    Value::Array(
        options
            .iter()
            .map(|(v, _)| Value::from(v.clone()))
            .collect(),
    )
}

impl FieldShape {
    /// The field's JSON schema, nested at most `depth` deep.
    pub fn to_value(&self, depth: u8) -> Value {
        let mut m = Map::new();
        let put = |m: &mut Map<String, Value>, k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_owned(), v);
            }
        };
        match &self.kind {
            KindShape::String {
                min_length,
                max_length,
                format,
                default,
            } => {
                m.insert("type".into(), "string".into());
                put(&mut m, "minLength", min_length.map(Value::from));
                put(&mut m, "maxLength", max_length.map(Value::from));
                put(&mut m, "format", format.as_ref().map(|f| f.text().into()));
                put(
                    &mut m,
                    "default",
                    default_of(default, |i| Value::from("x".repeat(usize::from(i % 8)))),
                );
            }
            KindShape::Number {
                integer,
                minimum,
                maximum,
                default,
            } => {
                m.insert(
                    "type".into(),
                    if *integer { "integer" } else { "number" }.into(),
                );
                put(&mut m, "minimum", minimum.map(NumShape::value));
                put(&mut m, "maximum", maximum.map(NumShape::value));
                put(&mut m, "default", default_of(default, Value::from));
            }
            KindShape::Boolean { default } => {
                m.insert("type".into(), "boolean".into());
                put(
                    &mut m,
                    "default",
                    default_of(default, |i| (i & 1 == 1).into()),
                );
            }
            KindShape::Enum { options, default } => {
                let o = options_of(options);
                m.insert("type".into(), "string".into());
                m.insert("enum".into(), values(&o));
                put(&mut m, "default", default_of(default, |i| pick(&o, i)));
            }
            KindShape::OneOf { options, default } => {
                let o = options_of(options);
                m.insert("type".into(), "string".into());
                m.insert("oneOf".into(), titled(&o));
                put(&mut m, "default", default_of(default, |i| pick(&o, i)));
            }
            KindShape::EnumNames { options, default } => {
                let o = options_of(options);
                m.insert("type".into(), "string".into());
                m.insert("enum".into(), values(&o));
                m.insert(
                    "enumNames".into(),
                    Value::Array(
                        o.iter()
                            .map(|(v, t)| Value::from(t.clone().unwrap_or_else(|| v.clone())))
                            .collect(),
                    ),
                );
                put(&mut m, "default", default_of(default, |i| pick(&o, i)));
            }
            KindShape::MultiEnum {
                options,
                min_items,
                max_items,
                default,
            }
            | KindShape::MultiAnyOf {
                options,
                min_items,
                max_items,
                default,
            } => {
                let o = options_of(options);
                m.insert("type".into(), "array".into());
                let items = if matches!(self.kind, KindShape::MultiEnum { .. }) {
                    json!({"type": "string", "enum": values(&o)})
                } else {
                    json!({"anyOf": titled(&o)})
                };
                m.insert("items".into(), items);
                put(&mut m, "minItems", min_items.map(Value::from));
                put(&mut m, "maxItems", max_items.map(Value::from));
                put(
                    &mut m,
                    "default",
                    default_of(default, |i| {
                        Value::Array((0..i % 3).map(|k| pick(&o, i.wrapping_add(k))).collect())
                    }),
                );
            }
            KindShape::Nested(inner) => {
                m.insert("type".into(), "object".into());
                if depth > 0 {
                    let mut props = Map::new();
                    props.insert(inner.name.text(), inner.to_value(depth - 1));
                    m.insert("properties".into(), Value::Object(props));
                }
            }
            KindShape::Odd { ty, extra } => {
                m.insert("type".into(), ty.to_value(1));
                for (k, v) in extra.iter().take(6) {
                    m.insert(k.text(), v.to_value(2));
                }
            }
        }
        put(
            &mut m,
            "title",
            self.title.as_ref().map(|t| t.text().into()),
        );
        put(
            &mut m,
            "description",
            self.description.as_ref().map(|t| t.text().into()),
        );
        Value::Object(m)
    }
}

impl SchemaShape {
    /// The `requestedSchema` JSON this shape describes.
    pub fn to_value(&self) -> Value {
        let mut props = Map::new();
        let mut required = Vec::new();
        for f in self.fields.iter().take(12) {
            let name = f.name.text();
            if f.required && !required.contains(&Value::from(name.clone())) {
                required.push(Value::from(name.clone()));
            }
            props.insert(name, f.to_value(2));
        }
        for r in self.stray_required.iter().take(3) {
            required.push(Value::from(r.text()));
        }
        let mut m = Map::new();
        m.insert(
            "type".into(),
            self.not_object
                .as_ref()
                .map_or_else(|| "object".into(), |v| v.to_value(1)),
        );
        m.insert("properties".into(), Value::Object(props));
        if !required.is_empty() {
            m.insert("required".into(), Value::Array(required));
        }
        if let Some(d) = &self.dollar_schema {
            m.insert("$schema".into(), d.text().into());
        }
        Value::Object(m)
    }
}

/// `content` target input that is not JSON: a schema and values to put
/// over valid content (`(field index, value)`).
#[derive(Debug, Clone, Arbitrary)]
pub struct ContentCase {
    /// The form.
    pub schema: SchemaShape,
    /// Values placed under the field of that index (modulo the count).
    pub values: Vec<(u8, ValueShape)>,
}

// ------------------------------------------------------------------ messages

/// A JSON-RPC id.
#[derive(Debug, Clone, Arbitrary)]
pub enum IdShape {
    /// A number.
    Number(i64),
    /// A string.
    Text(TextShape),
}

impl IdShape {
    fn id(&self) -> RequestId {
        match self {
            IdShape::Number(n) => RequestId::Number(*n),
            IdShape::Text(t) => RequestId::String(t.text()),
        }
    }
}

const METHODS: [&str; 8] = [
    "tools/call",
    "elicitation/create",
    "notifications/elicitation/complete",
    "server/discover",
    "initialize",
    "notifications/cancelled",
    "prompts/get",
    "resources/read",
];

/// Params of a request or notification.
#[derive(Debug, Clone, Arbitrary)]
pub enum ParamsShape {
    /// No params.
    None,
    /// An object, with 2026-07-28 `_meta` for (form, url) when given.
    Object {
        /// Members.
        members: Vec<(TextShape, ValueShape)>,
        /// `_meta` with these elicitation modes.
        meta: Option<(bool, bool)>,
    },
    /// An array.
    Array(Vec<ValueShape>),
}

impl ParamsShape {
    fn params(&self) -> Option<Value> {
        match self {
            ParamsShape::None => None,
            ParamsShape::Object { members, meta } => {
                let mut m: Map<String, Value> = members
                    .iter()
                    .take(4)
                    .map(|(k, v)| (k.text(), v.to_value(3)))
                    .collect();
                if let Some((form, url)) = meta {
                    m.insert(
                        "_meta".into(),
                        RequestMeta::new(ClientCapabilities::with_modes(*form, *url)).to_value(),
                    );
                }
                Some(Value::Object(m))
            }
            ParamsShape::Array(a) => Some(Value::Array(
                a.iter().take(4).map(|v| v.to_value(3)).collect(),
            )),
        }
    }
}

/// A method name: a known one or any text.
#[derive(Debug, Clone, Arbitrary)]
pub enum MethodShape {
    /// One of the methods the readers know.
    Known(u8),
    /// Anything.
    Other(TextShape),
}

impl MethodShape {
    fn method(&self) -> String {
        match self {
            MethodShape::Known(i) => METHODS[usize::from(*i) % METHODS.len()].to_owned(),
            MethodShape::Other(t) => t.text(),
        }
    }
}

/// A JSON-RPC message of any kind, elicitation-shaped results included.
#[derive(Debug, Clone, Arbitrary)]
pub enum MessageShape {
    /// A request.
    Request(IdShape, MethodShape, ParamsShape),
    /// A notification.
    Notification(MethodShape, ParamsShape),
    /// An `input_required` result with form requests.
    InputRequired {
        /// Response id.
        id: IdShape,
        /// `(key, message, schema)` of each input request (at most 3).
        requests: Vec<(TextShape, TextShape, SchemaShape)>,
        /// Another method than `elicitation/create`.
        method: Option<MethodShape>,
        /// The `requestState`.
        state: Option<TextShape>,
    },
    /// Any result.
    Result(IdShape, ValueShape),
    /// An error (without an id when `null_id`).
    Error {
        /// Response id.
        id: IdShape,
        /// Send `id: null`.
        null_id: bool,
        /// `code`.
        code: i64,
        /// `message`.
        message: TextShape,
        /// `data`.
        data: Option<ValueShape>,
    },
}

impl MessageShape {
    /// The message.
    pub fn message(&self) -> Message {
        match self {
            MessageShape::Request(id, m, p) => Message::Request(Request {
                id: id.id(),
                method: m.method(),
                params: p.params(),
            }),
            MessageShape::Notification(m, p) => Message::Notification(Notification {
                method: m.method(),
                params: p.params(),
            }),
            MessageShape::InputRequired {
                id,
                requests,
                method,
                state,
            } => {
                let method = method
                    .as_ref()
                    .map_or_else(|| "elicitation/create".to_owned(), MethodShape::method);
                let ir = InputRequiredResult {
                    input_requests: Some(
                        requests
                            .iter()
                            .take(3)
                            .map(|(k, msg, schema)| {
                                (
                                    k.text(),
                                    InputRequest {
                                        method: method.clone(),
                                        params: json!({"mode": "form", "message": msg.text(),
                                            "requestedSchema": schema.to_value()}),
                                    },
                                )
                            })
                            .collect(),
                    ),
                    request_state: state.as_ref().map(TextShape::text),
                    meta: None,
                };
                Message::Response(Response::result(id.id(), ir.to_value()))
            }
            MessageShape::Result(id, v) => {
                Message::Response(Response::result(id.id(), v.to_value(3)))
            }
            MessageShape::Error {
                id,
                null_id,
                code,
                message,
                data,
            } => {
                let mut e = ErrorObject::new(*code, message.text());
                if let Some(d) = data {
                    let d = d.to_value(2);
                    if !d.is_null() {
                        e = e.with_data(d);
                    }
                }
                Message::Response(Response::error((!null_id).then(|| id.id()), e))
            }
        }
    }
}

// ------------------------------------------------------------------ SSE

/// `sse_stream` input: an event size cap, split points, then the stream.
#[derive(Debug, Clone, Arbitrary)]
pub struct SseCase<'a> {
    /// The small cap is `1 + cap`.
    pub cap: u8,
    /// Split points (modulo the body length + 1; at most 8 used).
    pub cuts: Vec<u16>,
    /// The stream bytes.
    pub body: &'a [u8],
}

// ------------------------------------------------------------------ headers

/// The method of a header case.
#[derive(Debug, Clone, Arbitrary)]
pub enum HeaderMethod {
    /// `tools/call`.
    ToolsCall,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/read`.
    ResourcesRead,
    /// Any other.
    Other(String),
}

/// `headers` target, second part: a request whose headers are built and
/// checked against itself.
#[derive(Debug, Clone, Arbitrary)]
pub struct HeaderCase {
    /// `Mcp-Method`.
    pub method: HeaderMethod,
    /// The name (and URI) in the params.
    pub name: String,
    /// `MCP-Protocol-Version`.
    pub version: String,
}

impl HeaderCase {
    /// The method name.
    pub fn method(&self) -> String {
        match &self.method {
            HeaderMethod::ToolsCall => "tools/call".into(),
            HeaderMethod::PromptsGet => "prompts/get".into(),
            HeaderMethod::ResourcesRead => "resources/read".into(),
            HeaderMethod::Other(s) => s.clone(),
        }
    }
}

// ------------------------------------------------------------------ state

/// The free fields of the claims a tamper case seals.
#[derive(Debug, Clone, Arbitrary)]
pub struct ClaimsShape {
    /// With a `client_id`.
    pub client_id: bool,
    /// Issued this many seconds ago (0..=127).
    pub issued_ago_s: u8,
    /// Nonce.
    pub nonce: [u8; 16],
    /// Round counter.
    pub round: u32,
    /// Payload bytes (at most 255 used).
    pub payload: Vec<u8>,
}

/// What to splice a state with.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum SpliceWith {
    /// The same claims for another principal (same sealer).
    OtherPrincipal,
    /// The same claims for another request (same sealer).
    OtherRequest,
    /// Another key under the same key id.
    ForeignKey,
    /// Another codec (`1 + n % 5` codecs further on).
    OtherCodec(u8),
}

/// One mutation of a sealed token, as `state_tamper` applies it.
#[derive(Debug, Clone, Arbitrary)]
pub enum Tamper {
    /// Leave it alone.
    Unchanged,
    /// Flip one bit of the token text.
    FlipBit(u16),
    /// Flip one bit of the decoded bytes.
    FlipDecodedBit(u16),
    /// Keep only this many characters (modulo length + 2).
    Truncate(u16),
    /// Append bytes, then (separately) this many `A`s.
    Extend(Vec<u8>, u16),
    /// Re-encode with `=` padding.
    Padding,
    /// Re-encode as standard base64.
    StandardBase64,
    /// Splice with another token at a decoded position, both ways round.
    Splice(SpliceWith, u16),
    /// Set one decoded byte.
    SetDecodedByte(u16, u8),
    /// Re-seal with a changed time window and binding.
    ChangedClaims {
        /// Issue time offset (ms).
        d_issued: i32,
        /// Expiry offset (ms).
        d_expires: i32,
        /// Another principal.
        principal: bool,
        /// Another request.
        request: bool,
    },
    /// Overwrite bytes of the token text (at most 8).
    Overwrite(Vec<(u16, u8)>),
    /// Open once, then again through the replay guard.
    OpenOnce,
    /// Insert bytes (at most 15) into the token text.
    Insert(u16, Vec<u8>),
    /// The same claims under an unknown key id, and under a foreign key.
    OtherKeys,
}

/// `state_tamper` input.
#[derive(Debug, Clone, Arbitrary)]
pub struct TamperCase {
    /// Codec index (modulo the number of codecs).
    pub codec: u8,
    /// The claims sealed.
    pub claims: ClaimsShape,
    /// What is done to the token.
    pub tamper: Tamper,
}

/// `completions` input: backends (`% 3`: memory, SQLite, both) and the
/// operations (at most [`crate::store::model::MAX_OPS`] used).
#[derive(Debug, Clone, Arbitrary)]
pub struct CompletionsCase {
    /// Which backends.
    pub backends: u8,
    /// The sequence.
    pub ops: Vec<crate::store::model::Op>,
}
