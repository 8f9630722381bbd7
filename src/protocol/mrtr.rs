//! 2026-07-28 types: per-request `_meta`, `resultType`, `InputRequiredResult`,
//! `inputResponses`, `tools/call` params, and the data of `-32021` / `-32022`.

use super::capabilities::ClientCapabilities;
use super::legacy::Implementation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `_meta` key: protocol version (required).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: client capabilities (required).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: client info (optional; servers must not require it).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: log level (deprecated).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on results: server info.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `requestState` key: the opaque state an `InputRequiredResult` issues
/// and a retry's `params` echo.
pub const REQUEST_STATE: &str = "requestState";

/// `server/discover`.
pub const METHOD_DISCOVER: &str = "server/discover";
/// `tools/call`.
pub const METHOD_TOOLS_CALL: &str = "tools/call";
/// `tools/list`.
pub const METHOD_TOOLS_LIST: &str = "tools/list";
/// `prompts/get`.
pub const METHOD_PROMPTS_GET: &str = "prompts/get";
/// `resources/read`.
pub const METHOD_RESOURCES_READ: &str = "resources/read";
/// Methods that may answer `input_required` (rule S1).
pub const INPUT_REQUIRED_METHODS: [&str; 3] =
    [METHOD_TOOLS_CALL, METHOD_PROMPTS_GET, METHOD_RESOURCES_READ];
/// Methods allowed as `inputRequests` values (rule S2).
pub const INPUT_REQUEST_METHODS: [&str; 3] =
    ["elicitation/create", "sampling/createMessage", "roots/list"];
/// Methods removed in 2026-07-28 (a modern-only server answers 404 + `-32601`).
pub const REMOVED_METHODS: [&str; 6] = [
    "initialize",
    "notifications/initialized",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Per-request `_meta` of 2026-07-28.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`.
    pub client_info: Option<Implementation>,
    /// Every other `_meta` key (log level, progress token, trace context...).
    pub other: Map<String, Value>,
}

/// Why a request's `_meta` is unusable (answered with `-32602` and HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    /// `params` or `params._meta` is absent or not an object.
    #[error(
        "params._meta is missing: 2026-07-28 requests carry their version and capabilities in it"
    )]
    MissingMeta,
    /// A required key is missing.
    #[error("params._meta[\"{0}\"] is missing")]
    MissingKey(&'static str),
    /// A key has the wrong type.
    #[error("params._meta[\"{0}\"] has the wrong type")]
    WrongType(&'static str),
}

impl RequestMeta {
    /// elicitkit's `_meta` for the given capabilities.
    pub fn new(client_capabilities: ClientCapabilities) -> Self {
        RequestMeta {
            protocol_version: super::version::MODERN.into(),
            client_capabilities,
            client_info: Some(Implementation::elicitkit()),
            other: Map::new(),
        }
    }

    /// The `_meta` the checker, discovery and the fuzzer send for the
    /// given capabilities.
    pub fn checker(client_capabilities: ClientCapabilities) -> Self {
        RequestMeta {
            client_info: Some(Implementation::elicitkit_check()),
            ..Self::new(client_capabilities)
        }
    }

    /// Reads `_meta` from request params, requiring the two required keys.
    pub fn from_params(params: Option<&Value>) -> Result<Self, MetaError> {
        let meta = params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object)
            .ok_or(MetaError::MissingMeta)?;
        let protocol_version = match meta.get(META_PROTOCOL_VERSION) {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(MetaError::WrongType(META_PROTOCOL_VERSION)),
            None => return Err(MetaError::MissingKey(META_PROTOCOL_VERSION)),
        };
        let client_capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
            // Read from the borrowed tree: no copy of it first.
            Some(v @ Value::Object(_)) => ClientCapabilities::deserialize(v)
                .map_err(|_| MetaError::WrongType(META_CLIENT_CAPABILITIES))?,
            Some(_) => return Err(MetaError::WrongType(META_CLIENT_CAPABILITIES)),
            None => return Err(MetaError::MissingKey(META_CLIENT_CAPABILITIES)),
        };
        let client_info = meta
            .get(META_CLIENT_INFO)
            .and_then(|v| Implementation::deserialize(v).ok());
        let other = meta
            .iter()
            .filter(|(k, _)| {
                ![
                    META_PROTOCOL_VERSION,
                    META_CLIENT_CAPABILITIES,
                    META_CLIENT_INFO,
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info,
            other,
        })
    }

    /// As the JSON object that goes under `params._meta`.
    pub fn to_value(&self) -> Value {
        let mut m = self.other.clone();
        m.insert(
            META_PROTOCOL_VERSION.into(),
            self.protocol_version.clone().into(),
        );
        m.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.client_capabilities.to_value(),
        );
        if let Some(info) = &self.client_info {
            m.insert(
                META_CLIENT_INFO.into(),
                serde_json::to_value(info).unwrap_or(Value::Null),
            );
        }
        Value::Object(m)
    }
}

/// `resultType`: `complete`, `input_required`, or an extension value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// The request is done.
    Complete,
    /// The server needs input; retry with `inputResponses`.
    InputRequired,
    /// An extension value (e.g. `task`), invalid unless the client advertised it.
    Other(String),
}

impl ResultType {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }

    /// Reads `result.resultType` as declared; `None` when absent or not a
    /// string (an older server, or a defect).
    pub fn of(result: &Value) -> Option<Self> {
        result
            .get("resultType")
            .and_then(Value::as_str)
            .map(Self::parse)
    }

    /// How a result reads: its declared `resultType`, else its shape. A
    /// result without one that carries `inputRequests` or `requestState`
    /// asks for input all the same; any other reads as `complete`, as §4.4
    /// has clients read an older server. Whether the declaration is
    /// missing is [`ResultType::of`]'s question.
    pub fn read(result: &Value) -> Self {
        Self::of(result).unwrap_or_else(|| {
            let mrtr = result.get("inputRequests").is_some_and(Value::is_object)
                || result.get(REQUEST_STATE).is_some_and(Value::is_string);
            if mrtr {
                ResultType::InputRequired
            } else {
                ResultType::Complete
            }
        })
    }
}

/// True when a result asks for input: it says `input_required`, or says
/// nothing and has the shape of an `InputRequiredResult` ([`ResultType::read`]).
pub fn asks_for_input(result: &Value) -> bool {
    ResultType::read(result) == ResultType::InputRequired
}

/// The members of a result that decide a client's verdict — `resultType`
/// and whether `isError` is `true` — read from a JSON object in one pass
/// without building it. Fails (so the caller falls back to a full parse) on
/// anything unusual: not an object, a repeated or escaped member name, a
/// `resultType` that is not a plain string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultHead<'a> {
    /// `resultType`, if present and a string.
    pub result_type: Option<&'a str>,
    /// `isError` is the JSON value `true`.
    pub is_error: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for ResultHead<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Fields<'a> {
            type Value = ResultHead<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a result object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                use serde::de::Error as _;
                let mut result_type = None;
                let mut is_error = None;
                while let Some(key) = m.next_key::<&'de str>()? {
                    match key {
                        "resultType" if result_type.is_none() => {
                            result_type = Some(m.next_value::<Option<&'de str>>()?);
                        }
                        "isError" if is_error.is_none() => {
                            let raw = m.next_value::<&'de serde_json::value::RawValue>()?;
                            is_error = Some(raw.get() == "true");
                        }
                        "resultType" | "isError" => return Err(M::Error::duplicate_field("")),
                        _ => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(ResultHead {
                    result_type: result_type.flatten(),
                    is_error: is_error.unwrap_or(false),
                })
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData))
    }
}

/// One value of `inputRequests`: `{method, params}`, with no `jsonrpc` and no `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// The request params.
    #[serde(default)]
    pub params: Value,
}

/// `InputRequiredResult`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequiredResult {
    /// What the server asks, by server-chosen key.
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    /// Opaque state to echo byte for byte on the retry.
    pub request_state: Option<String>,
    /// Result `_meta`.
    pub meta: Option<Value>,
}

impl InputRequiredResult {
    /// The result object, with `resultType: "input_required"`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("resultType".into(), "input_required".into());
        if let Some(reqs) = &self.input_requests {
            m.insert(
                "inputRequests".into(),
                serde_json::to_value(reqs).unwrap_or(Value::Null),
            );
        }
        if let Some(s) = &self.request_state {
            m.insert(REQUEST_STATE.into(), s.clone().into());
        }
        if let Some(meta) = &self.meta {
            m.insert("_meta".into(), meta.clone());
        }
        Value::Object(m)
    }

    /// Reads the usable parts of a result tolerantly (the validator reports the rest).
    /// Input requests that are not `{method: string, ...}` objects are skipped.
    pub fn from_value(result: &Value) -> Option<Self> {
        let obj = result.as_object()?;
        let input_requests = obj
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| {
                        serde_json::from_value::<InputRequest>(v.clone())
                            .ok()
                            .map(|r| (k.clone(), r))
                    })
                    .collect()
            });
        let request_state = obj
            .get(REQUEST_STATE)
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(InputRequiredResult {
            input_requests,
            request_state,
            meta: obj.get("_meta").cloned(),
        })
    }
}

/// `tools/call` params, 2026-07-28 shape (also read for 2025-11-25, where the
/// MRTR fields are simply absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Answers to the previous round's `inputRequests`, by key. Values are
    /// opaque here: their type follows the method the server sent under that key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// The previous round's `requestState`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Per-request `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// `-32021` data: `requiredCapabilities` is a ClientCapabilities **object**.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingCapabilityData {
    /// The capabilities the request needs.
    pub required_capabilities: ClientCapabilities,
}

/// `-32022` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    /// Versions the server supports.
    pub supported: Vec<String>,
    /// The version the request asked for.
    pub requested: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_requires_version_and_capabilities_not_client_info() {
        let ok = json!({"_meta":{META_PROTOCOL_VERSION:"2026-07-28",META_CLIENT_CAPABILITIES:{}}});
        let m = RequestMeta::from_params(Some(&ok)).unwrap();
        assert!(m.client_info.is_none());
        assert_eq!(RequestMeta::from_params(None), Err(MetaError::MissingMeta));
        let no_caps = json!({"_meta":{META_PROTOCOL_VERSION:"2026-07-28"}});
        assert_eq!(
            RequestMeta::from_params(Some(&no_caps)),
            Err(MetaError::MissingKey(META_CLIENT_CAPABILITIES))
        );
        let bad = json!({"_meta":{META_PROTOCOL_VERSION:7,META_CLIENT_CAPABILITIES:{}}});
        assert_eq!(
            RequestMeta::from_params(Some(&bad)),
            Err(MetaError::WrongType(META_PROTOCOL_VERSION))
        );
    }

    #[test]
    fn meta_round_trips() {
        let m = RequestMeta::new(ClientCapabilities::with_modes(true, true));
        let params = json!({ "_meta": m.to_value() });
        assert_eq!(RequestMeta::from_params(Some(&params)).unwrap(), m);
    }

    #[test]
    fn input_required_round_trip_and_tolerance() {
        let v = json!({"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"message":"m"}}},"requestState":"abc"});
        let r = InputRequiredResult::from_value(&v).unwrap();
        assert_eq!(r.request_state.as_deref(), Some("abc"));
        assert_eq!(r.to_value(), v);
        assert_eq!(ResultType::of(&v), Some(ResultType::InputRequired));
        assert_eq!(ResultType::of(&json!({"content":[]})), None);
        assert_eq!(ResultType::parse("task"), ResultType::Other("task".into()));
    }

    #[test]
    fn a_result_without_result_type_reads_by_shape() {
        let asks = json!({"inputRequests":{"k":{"method":"elicitation/create","params":{}}}});
        assert_eq!(ResultType::of(&asks), None);
        assert!(asks_for_input(&asks));
        assert!(asks_for_input(&json!({"requestState":"s"})));
        assert!(!asks_for_input(&json!({"content":[]})));
        // A declaration wins over the shape (the validator reports the clash).
        let declared = json!({"resultType":"complete","inputRequests":{}});
        assert_eq!(ResultType::read(&declared), ResultType::Complete);
        assert!(asks_for_input(&json!({"resultType":"input_required"})));
    }

    #[test]
    fn call_tool_params_wire_names() {
        let p: CallToolParams = serde_json::from_value(json!({
            "name":"deploy","arguments":{"service":"api"},
            "inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},
            "requestState":"s","_meta":{}
        }))
        .unwrap();
        assert_eq!(p.request_state.as_deref(), Some("s"));
        assert!(p.input_responses.unwrap().contains_key("confirm"));
    }
}
