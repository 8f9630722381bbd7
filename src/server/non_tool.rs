//! The 2026-07-28 MRTR flows that are not tool calls: one prompt
//! ([`PROMPT`]) and one resource ([`RESOURCE`]) that ask their caller two
//! questions, one round each, before they complete (§4.7 S1 allows
//! `input_required` on `prompts/get` and `resources/read`; the official
//! suite's `input-required-result-non-tool-request`).
//!
//! Each round seals what was answered so far into a new `requestState`
//! bound to the principal and to the request (method and name); a retry
//! whose answers are valid moves on, an invalid answer is asked again, a
//! decline or cancel completes with a note. 2025-11-25 clients never see
//! them (they are listed to 2026-07-28 clients only).
//!
//! Flaws: `prompt-state-echoed` (the prompt hands back the state it was
//! sent), `resource-never-completes` (the resource asks again forever).

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::protocol::codes;
use crate::protocol::mrtr::{
    METHOD_PROMPTS_GET, METHOD_RESOURCES_READ, REQUEST_STATE, RequestMeta,
};
use crate::state::request_digest;

use super::app::App;
use super::flaw::Flaw;
use super::reply::RpcError;
use super::result::{finish, state_rejected};
use super::timing::Timing;

/// The eliciting prompt's name.
pub const PROMPT: &str = "plan_greeting";

/// The eliciting resource's URI.
pub const RESOURCE: &str = "elicitkit://briefing";

/// The questions, in the order they are asked: the key of the input
/// request, which is also the one form field it asks for.
const QUESTIONS: [(&str, &str); 2] = [
    ("audience", "Who is the greeting (or briefing) for?"),
    ("tone", "In what tone?"),
];

/// The `prompts/list` entry.
pub fn prompt_entry() -> Value {
    json!({
        "name": PROMPT,
        "title": "Plan a greeting",
        "description": "Asks its caller two questions (2026-07-28 input_required rounds), then writes the prompt",
    })
}

/// The `resources/list` entry.
pub fn resource_entry() -> Value {
    json!({
        "uri": RESOURCE,
        "name": "briefing",
        "title": "A briefing written to order",
        "description": "Asks its caller two questions (2026-07-28 input_required rounds), then reads",
        "mimeType": "text/plain",
    })
}

/// Which of the two flows a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `prompts/get` of [`PROMPT`].
    Prompt,
    /// `resources/read` of [`RESOURCE`].
    Resource,
}

impl Kind {
    /// The flow `method` of `name` (a prompt name or a URI) is, if any.
    pub fn of(method: &str, name: &str) -> Option<Kind> {
        match (method, name) {
            (METHOD_PROMPTS_GET, PROMPT) => Some(Kind::Prompt),
            (METHOD_RESOURCES_READ, RESOURCE) => Some(Kind::Resource),
            _ => None,
        }
    }

    fn method(self) -> &'static str {
        match self {
            Kind::Prompt => METHOD_PROMPTS_GET,
            Kind::Resource => METHOD_RESOURCES_READ,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Prompt => PROMPT,
            Kind::Resource => RESOURCE,
        }
    }
}

/// Answers one request of the flow `kind`: the next question
/// (`input_required`) or the completed prompt or resource.
pub fn handle(
    app: &App,
    kind: Kind,
    params: Option<&Value>,
    meta: &RequestMeta,
    principal: &str,
    timing: &mut Timing,
) -> Result<Value, RpcError> {
    if !meta.client_capabilities.elicit_modes().form {
        return Err(RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "{} {} asks its caller in a form: declare elicitation.form",
                kind.method(),
                kind.name()
            ),
        )
        .with_data(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})));
    }
    let empty = Map::new();
    let obj = params.and_then(Value::as_object).unwrap_or(&empty);
    let responses = match obj.get("inputResponses") {
        None => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.inputResponses must be an object",
            ));
        }
    };
    let state = match obj.get(REQUEST_STATE) {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.requestState must be a string",
            ));
        }
    };
    let digest = request_digest(kind.method(), kind.name(), &json!({}))
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    // What was answered in earlier rounds, from the state.
    let mut answered: Map<String, Value> = match state {
        None => Map::new(),
        Some(token) => match app.open_state(token, principal, &digest, timing) {
            Ok(Some(claims)) => serde_json::from_slice(&claims.payload).unwrap_or_default(),
            Ok(None) => Map::new(),
            Err(e) => return Err(state_rejected(&e)),
        },
    };
    // Answers are read only on a retry that carries a state.
    for (key, _) in QUESTIONS {
        let Some(answer) = responses
            .filter(|_| state.is_some())
            .and_then(|r| r.get(key))
        else {
            continue;
        };
        let forgets = kind == Kind::Resource && app.flaw(Flaw::ResourceNeverCompletes);
        match read_answer(key, answer)? {
            Answer::Given(text) if !forgets => {
                answered.insert(key.to_owned(), text.into());
            }
            Answer::Given(_) | Answer::Invalid => {}
            Answer::Refused(action) => return Ok(done(app, kind, Err(action))),
        }
    }
    match QUESTIONS.iter().find(|(k, _)| !answered.contains_key(*k)) {
        None => Ok(done(app, kind, Ok(&answered))),
        Some((key, question)) => {
            let token = match state {
                Some(sent) if kind == Kind::Prompt && app.flaw(Flaw::PromptStateEchoed) => {
                    sent.to_owned()
                }
                _ => {
                    let payload = serde_json::to_vec(&answered).unwrap_or_default();
                    app.seal_state(principal, digest, 1, payload, timing)
                        .map_err(|e| RpcError::seal_failed(&e))?
                }
            };
            Ok(finish(app, ask(key, question, token), "input_required"))
        }
    }
}

/// One answer, read.
enum Answer {
    /// Accepted with the field filled in.
    Given(String),
    /// Accepted without a usable value: asked again.
    Invalid,
    /// Declined or cancelled.
    Refused(String),
}

fn read_answer(key: &str, answer: &Value) -> Result<Answer, RpcError> {
    let malformed =
        || RpcError::invalid_params(format!("inputResponses.{key} is not an elicitation result"));
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .ok_or_else(malformed)?;
    match action {
        "accept" => Ok(answer
            .get("content")
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map_or(Answer::Invalid, |s| Answer::Given(s.to_owned()))),
        "decline" | "cancel" => Ok(Answer::Refused(action.to_owned())),
        _ => Err(malformed()),
    }
}

/// The `input_required` result asking `key`.
fn ask(key: &str, question: &str, token: String) -> Value {
    let schema = json!({
        "type": "object",
        "properties": {key: {"type": "string", "title": question, "minLength": 1, "maxLength": 80}},
        "required": [key],
    });
    let mut requests = Map::new();
    requests.insert(
        key.to_owned(),
        json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": question,
            "requestedSchema": schema,
        }}),
    );
    json!({"inputRequests": requests, REQUEST_STATE: token})
}

/// The completed prompt or resource: written from the answers, or saying
/// the caller declined. A read that came through retries is the caller's
/// own (`private`, never reused: `ttlMs` 0).
fn done(app: &App, kind: Kind, answers: Result<&Map<String, Value>, String>) -> Value {
    let text = match &answers {
        Ok(a) => format!(
            "Write a {} greeting for {}.",
            a.get("tone").and_then(Value::as_str).unwrap_or("plain"),
            a.get("audience")
                .and_then(Value::as_str)
                .unwrap_or("everyone"),
        ),
        Err(action) => format!("The caller chose {action}: nothing was written."),
    };
    let v = match kind {
        Kind::Prompt => json!({
            "description": "A greeting written to order",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }),
        Kind::Resource => {
            let mut v =
                json!({"contents": [{"uri": RESOURCE, "mimeType": "text/plain", "text": text}]});
            if !app.flaw(Flaw::NoCacheHints) {
                v["ttlMs"] = 0.into();
                v["cacheScope"] = "private".into();
            }
            v
        }
    };
    finish(app, v, "complete")
}
