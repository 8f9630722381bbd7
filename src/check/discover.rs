//! Finding out what the target is: which generation it speaks, whether it
//! authenticates, which tools it has, and how each tool answers a first call
//! with every capability declared (does it elicit, in which mode, with a
//! `requestState`?). Checks pick their subjects from this.

use super::probe::{FirstReply, Settings, Target, ToolProfile, all_modes};
use super::raw::{self, RawError, RawRequest, Rpc};
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::mrtr::InputRequiredResult;
use crate::protocol::version::{LEGACY, MODERN};
use crate::protocol::{Generation, ResultType};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Why `check` cannot start (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The target URL is not an http(s) URL.
    #[error("invalid --target {0:?}: {1}")]
    BadUrl(String, String),
    /// Nothing answered.
    #[error("target {0} is unreachable: {1}")]
    Unreachable(String, String),
    /// Something answered, but not as an MCP server of the wanted generation.
    #[error("target {0} does not answer as an MCP server: {1}")]
    NotMcp(String, String),
    /// `tools/list` failed.
    #[error("tools/list failed on {0}: {1}")]
    ToolsList(String, String),
    /// A `--tool` name the server does not list.
    #[error("tool {0:?} is not in the server's tools/list")]
    UnknownTool(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// Builds the shared HTTP client (no proxy: targets are local).
pub fn http_client() -> Result<reqwest::Client, CheckError> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| CheckError::Client(e.to_string()))
}

fn unreachable(settings: &Settings, e: RawError) -> CheckError {
    CheckError::Unreachable(settings.mcp_url.clone(), e.to_string())
}

/// Which generation the target speaks: `server/discover` first, then a
/// 2025-11-25 `initialize`.
pub async fn detect_generation(
    settings: &Settings,
    http: &reqwest::Client,
) -> Result<Generation, CheckError> {
    let t = settings.timeout;
    let req = raw::modern_post(
        "server/discover",
        &settings.mcp_url,
        0,
        "server/discover",
        Some(raw::with_meta(json!({}), &all_modes())),
    )
    .token(Some(&settings.principal));
    let (_, out) = raw::send(http, &req, t).await;
    let reply = out.map_err(|e| unreachable(settings, e))?;
    if let Rpc::Result(v) = reply.rpc() {
        let versions = v.get("supportedVersions").and_then(Value::as_array);
        let speaks = |ver: &str| versions.is_some_and(|a| a.iter().any(|x| x == ver));
        if speaks(MODERN) || versions.is_none() {
            return Ok(Generation::Modern);
        }
        if speaks(LEGACY) {
            return Ok(Generation::Legacy);
        }
    }
    let init = legacy_initialize_request(settings, 0, &all_modes().to_value());
    let (_, out) = raw::send(http, &init, t).await;
    let reply = out.map_err(|e| unreachable(settings, e))?;
    match reply.rpc() {
        Rpc::Result(v) if v.get("protocolVersion").is_some() => Ok(Generation::Legacy),
        other => Err(CheckError::NotMcp(
            settings.mcp_url.clone(),
            format!(
                "server/discover and initialize both failed (initialize: {})",
                other.describe()
            ),
        )),
    }
}

/// A 2025-11-25 `initialize` request with the given capabilities.
pub fn legacy_initialize_request(settings: &Settings, id: i64, caps: &Value) -> RawRequest {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": caps,
            "clientInfo": {"name": "elicitkit-check", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    RawRequest::new(
        "initialize",
        reqwest::Method::POST,
        settings.mcp_url.clone(),
    )
    .header("Accept", raw::ACCEPT_BOTH)
    .header("Content-Type", "application/json")
    .token(Some(&settings.principal))
    .body(body.to_string())
}

/// A sample value for one `inputSchema` property; `variant` 1 gives a
/// different value where the schema allows one.
fn sample(schema: &Value, variant: usize) -> Value {
    if let Some(e) = schema
        .get("enum")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        return e[variant % e.len()].clone();
    }
    if let Some(d) = schema.get("default").filter(|_| variant == 0) {
        return d.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|s| *s != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "integer" | "number" => {
            let min = schema.get("minimum").and_then(Value::as_i64).unwrap_or(1);
            json!(min + i64::try_from(variant).unwrap_or(0))
        }
        "boolean" => json!(variant == 0),
        "array" => json!([]),
        "object" => json!({}),
        _ => match schema.get("format").and_then(Value::as_str) {
            Some("email") => json!(format!("check{variant}@example.com")),
            Some("uri") => json!(format!("https://example.com/{variant}")),
            Some("date") => json!(format!("2030-01-0{}", 1 + variant % 9)),
            Some("date-time") => json!(format!("2030-01-0{}T10:00:00Z", 1 + variant % 9)),
            _ if variant == 0 => json!("elicitkit-check"),
            _ => json!(format!("elicitkit-check-{}", variant + 1)),
        },
    }
}

/// Arguments for a tool from its `inputSchema` (every property), and a
/// second, different set when any property can vary.
pub fn sample_arguments(input_schema: &Value) -> (Map<String, Value>, Option<Map<String, Value>>) {
    let props = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let first: Map<String, Value> = props
        .iter()
        .map(|(k, s)| (k.clone(), sample(s, 0)))
        .collect();
    let second: Map<String, Value> = props
        .iter()
        .map(|(k, s)| (k.clone(), sample(s, 1)))
        .collect();
    let other = (second != first).then_some(second);
    (first, other)
}

/// Whether a tool's completion must not repeat: `--single-use`, the
/// annotations (`destructiveHint` without `idempotentHint`), or a
/// description that says so ("exactly once", "single-use", "one-time").
pub fn is_single_use(settings: &Settings, descriptor: &Value) -> bool {
    let name = descriptor.get("name").and_then(Value::as_str).unwrap_or("");
    if settings.single_use.iter().any(|n| n == name) {
        return true;
    }
    let ann = descriptor.get("annotations");
    let flag = |k: &str| ann.and_then(|a| a.get(k)).and_then(Value::as_bool);
    if flag("destructiveHint") == Some(true) && flag("idempotentHint") != Some(true) {
        return true;
    }
    let d = descriptor
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    [
        "exactly once",
        "single-use",
        "single use",
        "one-time",
        "at most once",
    ]
    .iter()
    .any(|p| d.contains(p))
}

/// Modes used by the `elicitation/create` input requests of a result.
pub fn modes_of(ir: &InputRequiredResult) -> ElicitModes {
    let mut m = ElicitModes::default();
    for r in ir.input_requests.iter().flat_map(|r| r.values()) {
        if r.method != "elicitation/create" {
            continue;
        }
        match r.params.get("mode").and_then(Value::as_str) {
            Some("url") => m.url = true,
            _ => m.form = true,
        }
    }
    m
}

/// Discovers a 2026-07-28 target: authentication, tools, first replies.
pub async fn discover_modern(
    settings: Settings,
    http: reqwest::Client,
) -> Result<Target, CheckError> {
    let mut target = Target::new(settings, http, Generation::Modern);
    let s = target.settings.clone();
    let t = s.timeout;
    let caps = all_modes();
    let discover = raw::modern_post(
        "server/discover",
        &s.mcp_url,
        target.next_id(),
        "server/discover",
        Some(raw::with_meta(json!({}), &caps)),
    )
    .token(Some(&s.principal));
    let (_, out) = raw::send(&target.http, &discover, t).await;
    target.discover = out.ok().and_then(|r| r.rpc().result().cloned());
    let anon = raw::modern_post(
        "tools/list without credentials",
        &s.mcp_url,
        target.next_id(),
        "tools/list",
        Some(raw::with_meta(json!({}), &caps)),
    );
    let (_, out) = raw::send(&target.http, &anon, t).await;
    let anon = out.map_err(|e| unreachable(&s, e))?;
    target.authenticates = matches!(anon.status, 401 | 403);
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for _page in 0..20 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let req = raw::modern_post(
            "tools/list",
            &s.mcp_url,
            target.next_id(),
            "tools/list",
            Some(raw::with_meta(params, &caps)),
        )
        .token(Some(&s.principal));
        let (_, out) = raw::send(&target.http, &req, t).await;
        let reply = out.map_err(|e| unreachable(&s, e))?;
        let result = match reply.rpc() {
            Rpc::Result(v) => v,
            other => return Err(CheckError::ToolsList(s.mcp_url.clone(), other.describe())),
        };
        if let Some(a) = result.get("tools").and_then(Value::as_array) {
            listed.extend(a.iter().cloned());
        }
        cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    for wanted in &s.tools {
        if !listed
            .iter()
            .any(|d| d.get("name").and_then(Value::as_str) == Some(wanted))
        {
            return Err(CheckError::UnknownTool(wanted.clone()));
        }
    }
    for d in listed {
        let Some(name) = d.get("name").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        if !s.tools.is_empty() && !s.tools.contains(&name) {
            continue;
        }
        let (arguments, other_arguments) =
            sample_arguments(d.get("inputSchema").unwrap_or(&Value::Null));
        let mut profile = ToolProfile {
            single_use: is_single_use(&s, &d),
            name,
            arguments,
            other_arguments,
            first: FirstReply::Complete,
        };
        let req = raw::modern_post(
            format!("tools/call {} (discovery)", profile.name),
            &s.mcp_url,
            target.next_id(),
            "tools/call",
            Some(raw::with_meta(
                json!({"name": profile.name, "arguments": profile.arguments}),
                &caps,
            )),
        )
        .token(Some(&s.principal));
        let (_, out) = raw::send(&target.http, &req, t).await;
        profile.first = match out {
            Err(e) => FirstReply::Other(e.to_string()),
            Ok(reply) => match reply.rpc() {
                Rpc::Result(v) => match ResultType::of(&v) {
                    Some(ResultType::InputRequired) => {
                        let ir = InputRequiredResult::from_value(&v).unwrap_or_default();
                        FirstReply::InputRequired {
                            modes: modes_of(&ir),
                            has_state: ir.request_state.is_some(),
                            raw: String::from_utf8_lossy(&reply.body).into_owned(),
                            result: v,
                        }
                    }
                    _ => FirstReply::Complete,
                },
                Rpc::Error(e) => FirstReply::Error(e.code),
                Rpc::Missing(why) => FirstReply::Other(why),
            },
        };
        target.tools.push(profile);
    }
    Ok(target)
}

/// Discovers the target of the given (or detected) generation.
pub async fn discover(
    settings: Settings,
    generation: Option<Generation>,
) -> Result<Arc<Target>, CheckError> {
    let parsed = url::Url::parse(&settings.mcp_url)
        .map_err(|e| CheckError::BadUrl(settings.mcp_url.clone(), e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(CheckError::BadUrl(
            settings.mcp_url.clone(),
            "only http and https targets are supported".into(),
        ));
    }
    let http = http_client()?;
    let generation = match generation {
        Some(g) => g,
        None => detect_generation(&settings, &http).await?,
    };
    let target = match generation {
        Generation::Modern => discover_modern(settings, http).await?,
        Generation::Legacy => super::legacy_session::discover_legacy(settings, http).await?,
    };
    Ok(Arc::new(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_input_schema() {
        let schema = json!({"type":"object","properties":{
            "service":{"type":"string"},
            "env":{"type":"string","enum":["prod","dev"]},
            "n":{"type":"integer","minimum":5},
            "mail":{"type":"string","format":"email"}}});
        let (a, b) = sample_arguments(&schema);
        assert_eq!(a["service"], "elicitkit-check");
        assert_eq!(a["env"], "prod");
        assert_eq!(a["n"], 5);
        let b = b.expect("a varying schema gives other arguments");
        assert_ne!(a, b);
        assert_eq!(b["env"], "dev");
        let (none, other) = sample_arguments(&json!({"type":"object"}));
        assert!(none.is_empty() && other.is_none());
    }

    #[test]
    fn single_use_detection() {
        let s = Settings::new("http://127.0.0.1:1/mcp");
        assert!(is_single_use(
            &s,
            &json!({"name":"d","description":"Deletion happens exactly once."})
        ));
        assert!(is_single_use(
            &s,
            &json!({"name":"d","annotations":{"destructiveHint":true}})
        ));
        assert!(!is_single_use(
            &s,
            &json!({"name":"d","annotations":{"destructiveHint":true,"idempotentHint":true}})
        ));
        assert!(!is_single_use(
            &s,
            &json!({"name":"deploy","description":"Deploy a service."})
        ));
        let mut s2 = s.clone();
        s2.single_use.push("deploy".into());
        assert!(is_single_use(&s2, &json!({"name":"deploy"})));
    }
}
