//! Validators: every deviation from the spec in an elicitation message becomes
//! a [`Finding`], never a silent drop. Used by `elicitkit validate`, the client
//! (to flag protocol violations) and the conformance checker.

use super::codes;
use super::jsonrpc::{MAX_MESSAGE_BYTES, ParseError, parse_seed_capped};
use super::mrtr::{INPUT_REQUEST_METHODS, REQUEST_STATE};
use super::version::Generation;
use crate::findings::{Finding, Severity, pointer_push};
use crate::schema;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// What a validated document turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DocumentKind {
    /// A JSON-RPC `elicitation/create` request (2025-11-25 push).
    LegacyElicitRequest,
    /// A `{method, params}` input request without JSON-RPC framing (2026-07-28).
    ModernInputRequest,
    /// Bare `elicitation/create` params.
    ElicitParams,
    /// An `InputRequiredResult` (bare, or inside a JSON-RPC response).
    InputRequiredResult,
    /// An `ElicitResult` (bare, or inside a JSON-RPC response).
    ElicitResult,
    /// A completed result (checked for `resultType`).
    CompleteResult,
    /// A JSON-RPC error response.
    ErrorResponse,
    /// A `notifications/elicitation/complete` (2025-11-25 only).
    CompleteNotification,
    /// Something else: nothing elicitation-specific to check.
    Unknown,
}

impl fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        f.write_str(&s)
    }
}

/// The outcome of validating one document.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    /// What the document is.
    pub kind: DocumentKind,
    /// The generation it was judged against.
    pub generation: Option<Generation>,
    /// Every finding, in document order.
    pub findings: Vec<Finding>,
}

/// Options for [`validate_document`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Judge against this generation; inferred from the document when `None`.
    pub generation: Option<Generation>,
    /// The `requestedSchema` an `ElicitResult` answers (content is checked against it).
    pub schema: Option<Value>,
}

/// Parses and validates one raw JSON document.
pub fn validate_document(raw: &[u8], opts: &Options) -> Result<Report, ParseError> {
    let (v, dups) = parse_noting_duplicates(raw)?;
    let mut findings: Vec<Finding> = dups
        .into_iter()
        .map(|p| {
            Finding::new(
                Severity::Must,
                p,
                "json-duplicate-key",
                "object key appears twice; keys must be unique (S2)",
            )
        })
        .collect();
    let (kind, generation) = validate_value(&v, opts, &mut findings);
    Ok(Report {
        kind,
        generation,
        findings,
    })
}

/// Validates an already parsed document (no duplicate-key check: that needs the raw text).
pub fn validate_value(
    v: &Value,
    opts: &Options,
    out: &mut Vec<Finding>,
) -> (DocumentKind, Option<Generation>) {
    let Some(obj) = v.as_object() else {
        out.push(must(
            "",
            "not-an-object",
            "the document must be a JSON object",
        ));
        return (DocumentKind::Unknown, opts.generation);
    };
    if obj.contains_key("jsonrpc") {
        return validate_framed(obj, opts, out);
    }
    if let Some(method) = obj.get("method") {
        let generation = opts.generation.or(Some(Generation::Modern));
        if method.as_str() == Some(super::elicitation::METHOD_CREATE) {
            if obj.contains_key("id") {
                out.push(must(
                    "/id",
                    "input-request-has-jsonrpc-framing",
                    "an input request carries no id (it is not a JSON-RPC request)",
                ));
            }
            match obj.get("params") {
                Some(p) => validate_elicit_params(p, Generation::Modern, "/params", out),
                None => out.push(must(
                    "/params",
                    "input-request-params",
                    "params are missing",
                )),
            }
            return (DocumentKind::ModernInputRequest, generation);
        }
        return (DocumentKind::Unknown, generation);
    }
    if obj.contains_key("resultType")
        || obj.contains_key("inputRequests")
        || obj.contains_key(REQUEST_STATE)
    {
        if ResultTypeSeen::of(obj) == ResultTypeSeen::InputRequired
            || obj.contains_key("inputRequests")
            || obj.contains_key(REQUEST_STATE)
        {
            validate_input_required(obj, "", out);
            return (DocumentKind::InputRequiredResult, Some(Generation::Modern));
        }
        validate_complete_result(obj, Some(Generation::Modern), "", out);
        return (DocumentKind::CompleteResult, Some(Generation::Modern));
    }
    if obj.contains_key("action") {
        validate_elicit_result(v, opts.schema.as_ref(), "", out);
        return (DocumentKind::ElicitResult, opts.generation);
    }
    if obj.contains_key("message")
        || obj.contains_key("requestedSchema")
        || obj.contains_key("mode")
    {
        let generation = opts.generation.unwrap_or(Generation::Modern);
        validate_elicit_params(v, generation, "", out);
        return (DocumentKind::ElicitParams, Some(generation));
    }
    out.push(Finding::new(
        Severity::Info,
        "",
        "not-elicitation",
        "not an elicitation message: nothing elicitation-specific to check",
    ));
    (DocumentKind::Unknown, opts.generation)
}

fn validate_framed(
    obj: &Map<String, Value>,
    opts: &Options,
    out: &mut Vec<Finding>,
) -> (DocumentKind, Option<Generation>) {
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        out.push(must(
            "/jsonrpc",
            "jsonrpc-version",
            "\"jsonrpc\" must be \"2.0\"",
        ));
    }
    if let Some(method) = obj.get("method") {
        if method.as_str() == Some(super::elicitation::METHOD_CREATE) {
            let generation = opts.generation.unwrap_or(Generation::Legacy);
            if generation == Generation::Modern {
                out.push(must(
                    "",
                    "modern-server-request",
                    "2026-07-28 servers send no JSON-RPC requests: elicit with an input_required result",
                ));
            }
            match obj.get("id") {
                None => out.push(must(
                    "/id",
                    "request-id-missing",
                    "elicitation/create is a request and needs an id",
                )),
                Some(Value::Null) => out.push(must(
                    "/id",
                    "request-id-null",
                    "a request id must not be null",
                )),
                Some(Value::String(_)) => {}
                Some(Value::Number(n)) if n.is_i64() => {}
                Some(_) => out.push(must(
                    "/id",
                    "request-id-type",
                    "a request id must be a string or an integer",
                )),
            }
            match obj.get("params") {
                Some(p) => validate_elicit_params(p, generation, "/params", out),
                None => out.push(must(
                    "/params",
                    "elicit-params-missing",
                    "params are missing",
                )),
            }
            return (DocumentKind::LegacyElicitRequest, Some(generation));
        }
        if method.as_str() == Some(super::elicitation::METHOD_COMPLETE) {
            let generation = opts.generation.unwrap_or(Generation::Legacy);
            if generation == Generation::Modern {
                out.push(must(
                    "/method",
                    "retired-elicitation-complete",
                    "notifications/elicitation/complete was removed in 2026-07-28",
                ));
            } else if obj
                .get("params")
                .and_then(|p| p.get("elicitationId"))
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                out.push(must(
                    "/params/elicitationId",
                    "elicitation-complete-id",
                    "the completion notification must carry the original elicitationId",
                ));
            }
            return (DocumentKind::CompleteNotification, Some(generation));
        }
        return (DocumentKind::Unknown, opts.generation);
    }
    if let Some(e) = obj.get("error") {
        validate_error(e, opts.generation, "/error", out);
        return (DocumentKind::ErrorResponse, opts.generation);
    }
    let Some(result) = obj.get("result") else {
        out.push(must(
            "",
            "jsonrpc-shape",
            "neither method, result nor error",
        ));
        return (DocumentKind::Unknown, opts.generation);
    };
    let Some(r) = result.as_object() else {
        out.push(must(
            "/result",
            "result-not-object",
            "a result must be an object",
        ));
        return (DocumentKind::Unknown, opts.generation);
    };
    if r.contains_key("action") {
        validate_elicit_result(result, opts.schema.as_ref(), "/result", out);
        return (DocumentKind::ElicitResult, Some(Generation::Legacy));
    }
    if ResultTypeSeen::of(r) == ResultTypeSeen::InputRequired
        || r.contains_key("inputRequests")
        || r.contains_key(REQUEST_STATE)
    {
        validate_input_required(r, "/result", out);
        return (DocumentKind::InputRequiredResult, Some(Generation::Modern));
    }
    validate_complete_result(r, opts.generation, "/result", out);
    (DocumentKind::CompleteResult, opts.generation)
}

#[derive(PartialEq, Eq)]
enum ResultTypeSeen {
    Missing,
    Complete,
    InputRequired,
    Other,
}

impl ResultTypeSeen {
    fn of(obj: &Map<String, Value>) -> Self {
        match obj.get("resultType").map(Value::as_str) {
            None => ResultTypeSeen::Missing,
            Some(Some("complete")) => ResultTypeSeen::Complete,
            Some(Some("input_required")) => ResultTypeSeen::InputRequired,
            Some(_) => ResultTypeSeen::Other,
        }
    }
}

/// Checks `resultType` on a non-input-required result.
pub fn validate_complete_result(
    r: &Map<String, Value>,
    generation: Option<Generation>,
    ptr: &str,
    out: &mut Vec<Finding>,
) {
    let at = pointer_push(ptr, "resultType");
    match ResultTypeSeen::of(r) {
        ResultTypeSeen::Complete => {}
        ResultTypeSeen::InputRequired => {}
        ResultTypeSeen::Missing => match generation {
            Some(Generation::Modern) => out.push(must(
                at,
                "result-type-missing",
                "2026-07-28 results must carry resultType",
            )),
            Some(Generation::Legacy) => {}
            None => out.push(Finding::new(
                Severity::Info,
                at,
                "result-type-missing",
                "no resultType: fine from a 2025-11-25 server, a MUST violation from a 2026-07-28 one",
            )),
        },
        ResultTypeSeen::Other => out.push(Finding::new(
            Severity::Should,
            at,
            "result-type-unknown",
            "resultType is neither complete nor input_required: valid only for an extension the client advertised",
        )),
    }
}

/// Checks an `InputRequiredResult` object (S2, S4 and the elicitation params inside).
pub fn validate_input_required(r: &Map<String, Value>, ptr: &str, out: &mut Vec<Finding>) {
    match ResultTypeSeen::of(r) {
        ResultTypeSeen::InputRequired => {}
        ResultTypeSeen::Missing => out.push(must(
            pointer_push(ptr, "resultType"),
            "result-type-missing",
            "an InputRequiredResult must say resultType: \"input_required\"",
        )),
        _ => out.push(must(
            pointer_push(ptr, "resultType"),
            "result-type-mismatch",
            "inputRequests/requestState on a result whose resultType is not input_required",
        )),
    }
    let reqs = r.get("inputRequests");
    let state = r.get(REQUEST_STATE);
    if reqs.is_none() && state.is_none() {
        out.push(must(
            ptr,
            "input-required-empty",
            "an InputRequiredResult needs inputRequests or requestState (S4)",
        ));
    }
    if let Some(s) = state
        && !s.is_string()
    {
        out.push(must(
            pointer_push(ptr, REQUEST_STATE),
            "request-state-type",
            "requestState must be a string",
        ));
    }
    let Some(reqs) = reqs else { return };
    let reqs_ptr = pointer_push(ptr, "inputRequests");
    let Some(map) = reqs.as_object() else {
        out.push(must(
            &reqs_ptr,
            "input-requests-type",
            "inputRequests must be an object keyed by server-chosen names",
        ));
        return;
    };
    if map.is_empty() && state.is_none() {
        out.push(must(
            &reqs_ptr,
            "input-required-empty",
            "inputRequests is empty and there is no requestState (S4)",
        ));
    }
    for (key, req) in map {
        let at = pointer_push(&reqs_ptr, key);
        let Some(req) = req.as_object() else {
            out.push(must(
                &at,
                "input-request-type",
                "an input request must be an object {method, params}",
            ));
            continue;
        };
        for framing in ["jsonrpc", "id"] {
            if req.contains_key(framing) {
                out.push(must(
                    pointer_push(&at, framing),
                    "input-request-has-jsonrpc-framing",
                    "input requests carry only method and params, no jsonrpc or id",
                ));
            }
        }
        let method = req.get("method").and_then(Value::as_str);
        match method {
            Some(m) if INPUT_REQUEST_METHODS.contains(&m) => {}
            Some(m) => out.push(must(
                pointer_push(&at, "method"),
                "input-request-method",
                format!("{m:?} is not an input request method (elicitation/create, sampling/createMessage, roots/list)"),
            )),
            None => out.push(must(pointer_push(&at, "method"), "input-request-method", "method is missing")),
        }
        match req.get("params") {
            Some(p) if method == Some(super::elicitation::METHOD_CREATE) => {
                validate_elicit_params(p, Generation::Modern, &pointer_push(&at, "params"), out)
            }
            Some(_) => {}
            None if method == Some("roots/list") => {}
            None => out.push(must(
                pointer_push(&at, "params"),
                "input-request-params",
                "params are missing",
            )),
        }
    }
}

/// Checks `elicitation/create` params for one generation: shape, schema, secrets, URL safety.
pub fn validate_elicit_params(
    v: &Value,
    generation: Generation,
    ptr: &str,
    out: &mut Vec<Finding>,
) {
    let Some(p) = v.as_object() else {
        out.push(must(
            ptr,
            "elicit-params-type",
            "elicitation params must be an object",
        ));
        return;
    };
    match p.get("message") {
        Some(Value::String(_)) => {}
        Some(_) => out.push(must(
            pointer_push(ptr, "message"),
            "elicit-message-type",
            "message must be a string",
        )),
        None => out.push(must(
            pointer_push(ptr, "message"),
            "elicit-message-missing",
            "message is required",
        )),
    }
    let mode = match p.get("mode") {
        None => {
            out.push(Finding::new(
                Severity::Info,
                pointer_push(ptr, "mode"),
                "elicit-mode-omitted",
                "mode omitted: clients treat this as form mode",
            ));
            "form"
        }
        Some(Value::String(m)) if m == "form" || m == "url" => m.as_str(),
        Some(other) => {
            out.push(must(
                pointer_push(ptr, "mode"),
                "elicit-mode-unknown",
                format!("mode {other} is neither \"form\" nor \"url\""),
            ));
            return;
        }
    };
    if mode == "form" {
        let Some(schema_v) = p.get("requestedSchema") else {
            out.push(must(
                pointer_push(ptr, "requestedSchema"),
                "form-schema-missing",
                "form mode needs requestedSchema",
            ));
            return;
        };
        let sptr = pointer_push(ptr, "requestedSchema");
        for f in schema::validate_schema(schema_v) {
            out.push(prefixed(&sptr, f));
        }
        for f in schema::form_request_findings(v) {
            out.push(prefixed(ptr, f));
        }
        if p.contains_key("url") {
            out.push(Finding::new(
                Severity::Should,
                pointer_push(ptr, "url"),
                "form-has-url-field",
                "a form-mode request carries a url; did you mean mode: \"url\"?",
            ));
        }
        return;
    }
    match p.get("url") {
        Some(Value::String(u)) => {
            let uptr = pointer_push(ptr, "url");
            for f in schema::url_findings(u) {
                out.push(prefixed(&uptr, f));
            }
        }
        Some(_) => out.push(must(
            pointer_push(ptr, "url"),
            "url-type",
            "url must be a string",
        )),
        None => out.push(must(
            pointer_push(ptr, "url"),
            "url-missing",
            "URL mode needs a url",
        )),
    }
    let id_ptr = pointer_push(ptr, "elicitationId");
    match (generation, p.get("elicitationId")) {
        (Generation::Legacy, Some(Value::String(s))) if !s.is_empty() => {}
        (Generation::Legacy, Some(Value::String(_))) => out.push(must(
            id_ptr,
            "legacy-url-elicitation-id",
            "elicitationId must be a non-empty string",
        )),
        (Generation::Legacy, _) => out.push(must(
            id_ptr,
            "legacy-url-elicitation-id",
            "2025-11-25 URL mode requires a string elicitationId",
        )),
        (Generation::Modern, Some(_)) => out.push(Finding::new(
            Severity::Info,
            id_ptr,
            "modern-url-elicitation-id",
            "elicitationId was removed in 2026-07-28; clients ignore it",
        )),
        (Generation::Modern, None) => {}
    }
}

/// Checks an `ElicitResult` and, given the schema it answers, its content.
pub fn validate_elicit_result(
    v: &Value,
    schema_v: Option<&Value>,
    ptr: &str,
    out: &mut Vec<Finding>,
) {
    let Some(r) = v.as_object() else {
        out.push(must(
            ptr,
            "elicit-result-type",
            "an ElicitResult must be an object",
        ));
        return;
    };
    let action = r.get("action").and_then(Value::as_str);
    match action {
        Some("accept" | "decline" | "cancel") => {}
        _ => out.push(must(
            pointer_push(ptr, "action"),
            "elicit-result-action",
            "action must be accept, decline or cancel",
        )),
    }
    if r.contains_key("resultType") {
        out.push(Finding::new(
            Severity::Should,
            pointer_push(ptr, "resultType"),
            "elicit-result-has-result-type",
            "an ElicitResult inside inputResponses carries no resultType",
        ));
    }
    let cptr = pointer_push(ptr, "content");
    match r.get("content") {
        None => {}
        Some(Value::Object(c)) => {
            for (k, val) in c {
                let ok = match val {
                    Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
                    Value::Array(items) => items.iter().all(Value::is_string),
                    _ => false,
                };
                if !ok {
                    out.push(must(
                        pointer_push(&cptr, k),
                        "elicit-content-value-type",
                        "content values are strings, numbers, booleans or string arrays",
                    ));
                }
            }
            if action != Some("accept") {
                out.push(Finding::new(
                    Severity::Info,
                    &cptr,
                    "elicit-content-without-accept",
                    "content on a decline or cancel is ignored",
                ));
            }
        }
        Some(_) => out.push(must(
            &cptr,
            "elicit-content-type",
            "content must be an object",
        )),
    }
    if let (Some(sv), Some("accept")) = (schema_v, action) {
        let (model, _) = schema::RequestedSchema::from_value(sv);
        match (model, r.get("content")) {
            (Some(model), Some(content)) => {
                for f in schema::validate_content(&model, content) {
                    out.push(prefixed(&cptr, f));
                }
            }
            (Some(_), None) => out.push(Finding::new(
                Severity::Should,
                &cptr,
                "elicit-accept-without-content",
                "a form-mode accept normally carries content",
            )),
            (None, _) => out.push(Finding::new(
                Severity::Info,
                "",
                "schema-unusable",
                "the given schema could not be modelled, so content was not checked",
            )),
        }
    }
}

/// Checks a JSON-RPC error object for the elicitation-related codes.
pub fn validate_error(
    e: &Value,
    generation: Option<Generation>,
    ptr: &str,
    out: &mut Vec<Finding>,
) {
    let Some(code) = e.get("code").and_then(Value::as_i64) else {
        out.push(must(
            pointer_push(ptr, "code"),
            "error-code",
            "an error needs an integer code",
        ));
        return;
    };
    if !e.get("message").is_some_and(Value::is_string) {
        out.push(must(
            pointer_push(ptr, "message"),
            "error-message",
            "an error needs a string message",
        ));
    }
    let data_ptr = pointer_push(ptr, "data");
    let data = e.get("data");
    match code {
        codes::URL_ELICITATION_REQUIRED => {
            if generation == Some(Generation::Modern) {
                out.push(must(
                    pointer_push(ptr, "code"),
                    "retired-url-elicitation-required",
                    "-32042 is retired in 2026-07-28: return input_required with a URL-mode request",
                ));
            }
            let list = data
                .and_then(|d| d.get("elicitations"))
                .and_then(Value::as_array);
            match list {
                Some(items) if !items.is_empty() => {
                    let lptr = pointer_push(&data_ptr, "elicitations");
                    for (i, item) in items.iter().enumerate() {
                        let at = pointer_push(&lptr, &i.to_string());
                        if item.get("mode").and_then(Value::as_str) != Some("url") {
                            out.push(must(
                                pointer_push(&at, "mode"),
                                "url-elicitation-required-shape",
                                "every item must be URL mode",
                            ));
                        }
                        validate_elicit_params(item, Generation::Legacy, &at, out);
                    }
                }
                _ => out.push(must(
                    pointer_push(&data_ptr, "elicitations"),
                    "url-elicitation-required-shape",
                    "-32042 needs a non-empty data.elicitations array",
                )),
            }
        }
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            match data.and_then(|d| d.get("requiredCapabilities")) {
                Some(Value::Object(_)) => {}
                Some(Value::Array(_)) => out.push(must(
                    pointer_push(&data_ptr, "requiredCapabilities"),
                    "required-capabilities-shape",
                    "requiredCapabilities is a ClientCapabilities object, not an array",
                )),
                _ => out.push(must(
                    pointer_push(&data_ptr, "requiredCapabilities"),
                    "required-capabilities-shape",
                    "-32021 needs data.requiredCapabilities (a ClientCapabilities object)",
                )),
            }
        }
        codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported = data
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array);
            if !supported.is_some_and(|s| !s.is_empty() && s.iter().all(Value::is_string)) {
                out.push(must(
                    pointer_push(&data_ptr, "supported"),
                    "unsupported-version-shape",
                    "-32022 needs data.supported: a non-empty array of version strings",
                ));
            }
            if !data
                .and_then(|d| d.get("requested"))
                .is_some_and(Value::is_string)
            {
                out.push(must(
                    pointer_push(&data_ptr, "requested"),
                    "unsupported-version-shape",
                    "-32022 needs data.requested echoing the requested version",
                ));
            }
        }
        codes::RETIRED_RESOURCE_NOT_FOUND if generation == Some(Generation::Modern) => {
            out.push(must(
                pointer_push(ptr, "code"),
                "retired-error-code",
                "-32002 is retired in 2026-07-28; use -32602",
            ))
        }
        c if codes::is_undefined_reserved(c) => out.push(must(
            pointer_push(ptr, "code"),
            "reserved-error-code",
            format!("{c} is in the range the spec reserves (-32020..-32099) but is not defined"),
        )),
        _ => {}
    }
}

fn must(pointer: impl Into<String>, rule: &str, message: impl Into<String>) -> Finding {
    Finding::new(Severity::Must, pointer, rule, message)
}

fn prefixed(prefix: &str, mut f: Finding) -> Finding {
    f.pointer = format!("{prefix}{}", f.pointer);
    f
}

/// Parses a document into a tree (capped as [`parse_json`] caps it, and
/// equal to its tree) and notes the JSON Pointer of every object key that
/// appears twice in its object, in document order. The tree keeps the last
/// of the duplicates, as `serde_json` does; one pass over the text.
pub fn parse_noting_duplicates(raw: &[u8]) -> Result<(Value, Vec<String>), ParseError> {
    let mut path = Vec::new();
    let mut dups = Vec::new();
    let tree = parse_seed_capped(
        raw,
        MAX_MESSAGE_BYTES,
        Tree {
            path: &mut path,
            dups: &mut dups,
        },
    )?;
    Ok((tree, dups))
}

/// Where a value sits: the keys and indexes down to it.
enum Step {
    Key(String),
    Index(usize),
}

/// A seed that builds what `serde_json::Value`'s own deserializer builds,
/// keeping the path so a duplicate key can be named.
struct Tree<'a> {
    path: &'a mut Vec<Step>,
    dups: &'a mut Vec<String>,
}

impl Tree<'_> {
    fn pointer_to(&self, key: &str) -> String {
        let mut out = String::new();
        for step in self.path.iter() {
            out = match step {
                Step::Key(k) => pointer_push(&out, k),
                Step::Index(i) => pointer_push(&out, &i.to_string()),
            };
        }
        pointer_push(&out, key)
    }

    fn child(&mut self) -> Tree<'_> {
        Tree {
            path: &mut *self.path,
            dups: &mut *self.dups,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Tree<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// The key `serde_json` (with `raw_value`) reads as "the value is this
/// string's JSON" when it opens an object; mirrored so the tree stays equal.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A string, as `serde_json` reads a raw value's text.
struct RawText;

impl<'de> Visitor<'de> for RawText {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw value")
    }
    fn visit_str<E>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }
}

impl<'de> DeserializeSeed<'de> for RawText {
    type Value = String;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Tree<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut first = true;
        while let Some(k) = map.next_key::<String>()? {
            if std::mem::take(&mut first) && k == RAW_VALUE_TOKEN {
                let text = map.next_value_seed(RawText)?;
                return serde_json::from_str(&text).map_err(serde::de::Error::custom);
            }
            if out.contains_key(&k) {
                let p = self.pointer_to(&k);
                self.dups.push(p);
            }
            self.path.push(Step::Key(k));
            let v = map.next_value_seed(self.child());
            let Some(Step::Key(k)) = self.path.pop() else {
                unreachable!("the key pushed above")
            };
            out.insert(k, v?);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            self.path.push(Step::Index(out.len()));
            let v = seq.next_element_seed(self.child());
            self.path.pop();
            match v? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(raw: &str, opts: &Options) -> (DocumentKind, Vec<String>) {
        let r = validate_document(raw.as_bytes(), opts).unwrap();
        (
            r.kind,
            r.findings
                .into_iter()
                .map(|f| format!("{}@{}", f.rule, f.pointer))
                .collect(),
        )
    }

    #[test]
    fn duplicate_keys_are_found_in_raw_text() {
        let dups = |t: &str| parse_noting_duplicates(t.as_bytes()).unwrap().1;
        let d = dups(r#"{"a":1,"b":{"k":1,"k":2},"a":3,"c":[{"x":1,"x":1}]}"#);
        assert_eq!(d, vec!["/b/k", "/a", "/c/0/x"]);
        assert!(dups(r#"{"a":1}"#).is_empty());
        // A repeated key is named before the duplicates inside its value,
        // and escaped as a pointer token.
        let d = dups(r#"{"a/~":1,"a/~":{"x":[0,{"y":1,"y":2}],"x":3}}"#);
        assert_eq!(d, vec!["/a~1~0", "/a~1~0/x/1/y", "/a~1~0/x"]);
    }

    #[test]
    fn the_duplicate_noting_parse_builds_serde_jsons_tree() {
        for t in [
            r#"{"a":[1,-2,3.5,"s\u00e9",true,null,{}],"b":{"c":[]},"a":0}"#,
            r#"[1e400]"#,
            // serde_json (with `raw_value`) reads this key's string as JSON.
            r#"{"$serde_json::private::RawValue":"[1,{\"k\":2}]"}"#,
            r#"{"k":1,"$serde_json::private::RawValue":"[1]"}"#,
            r#"[{"$serde_json::private::RawValue":7}]"#,
            r#"{"a":1} x"#,
            r#"{"a":1,}"#,
            "",
        ] {
            let ours = parse_noting_duplicates(t.as_bytes()).map(|(v, _)| v);
            let theirs = crate::protocol::jsonrpc::parse_json(t.as_bytes());
            assert_eq!(ours, theirs, "{t}");
        }
        let (tree, dups) = parse_noting_duplicates(br#"{"a":[1,{"b":2}],"a":{"c":3}}"#).unwrap();
        assert_eq!(tree, serde_json::json!({"a": {"c": 3}}));
        assert_eq!(dups, vec!["/a"]);
    }

    #[test]
    fn input_required_without_anything_is_a_must() {
        let (kind, r) = rules(r#"{"resultType":"input_required"}"#, &Options::default());
        assert_eq!(kind, DocumentKind::InputRequiredResult);
        assert!(r.contains(&"input-required-empty@".to_string()), "{r:?}");
    }

    #[test]
    fn framed_input_request_is_flagged() {
        let raw = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s",
          "inputRequests":{"k":{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://example.com/x","elicitationId":"e"}}}}}"#;
        let (kind, r) = rules(raw, &Options::default());
        assert_eq!(kind, DocumentKind::InputRequiredResult);
        assert!(
            r.contains(
                &"input-request-has-jsonrpc-framing@/result/inputRequests/k/jsonrpc".to_string()
            ),
            "{r:?}"
        );
        assert!(
            r.contains(
                &"modern-url-elicitation-id@/result/inputRequests/k/params/elicitationId"
                    .to_string()
            ),
            "{r:?}"
        );
    }

    #[test]
    fn legacy_url_without_id_is_a_must() {
        let raw = r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://example.com/x"}}"#;
        let (kind, r) = rules(raw, &Options::default());
        assert_eq!(kind, DocumentKind::LegacyElicitRequest);
        assert!(
            r.iter()
                .any(|x| x.starts_with("legacy-url-elicitation-id@")),
            "{r:?}"
        );
    }

    #[test]
    fn error_shapes() {
        let raw = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":["elicitation.url"]}}}"#;
        let (_, r) = rules(raw, &Options::default());
        assert_eq!(
            r,
            vec!["required-capabilities-shape@/error/data/requiredCapabilities"]
        );
        let raw = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"m","data":{"elicitations":[]}}}"#;
        let (_, r) = rules(
            raw,
            &Options {
                generation: Some(Generation::Modern),
                schema: None,
            },
        );
        assert!(
            r.iter()
                .any(|x| x.starts_with("retired-url-elicitation-required")),
            "{r:?}"
        );
        assert!(
            r.iter()
                .any(|x| x.starts_with("url-elicitation-required-shape")),
            "{r:?}"
        );
        let raw = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"m"}}"#;
        let (_, r) = rules(raw, &Options::default());
        assert_eq!(r, vec!["reserved-error-code@/error/code"]);
    }

    #[test]
    fn modern_result_without_result_type() {
        let raw = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let (_, r) = rules(
            raw,
            &Options {
                generation: Some(Generation::Modern),
                schema: None,
            },
        );
        assert_eq!(r, vec!["result-type-missing@/result/resultType"]);
        let (_, r) = rules(
            raw,
            &Options {
                generation: Some(Generation::Legacy),
                schema: None,
            },
        );
        assert!(r.is_empty());
    }

    #[test]
    fn elicit_result_content_types() {
        let v = json!({"action":"accept","content":{"a":{"nested":true},"b":["x",1]}});
        let mut out = Vec::new();
        validate_elicit_result(&v, None, "", &mut out);
        let got: Vec<_> = out.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(got, vec!["/content/a", "/content/b"]);
    }
}
