//! The subjects of state probes: any tool that issues a `requestState` in
//! any round (form, multi-round and URL tools alike), walked with valid
//! answers to the round that carries its state ([`at_state`]) or to its
//! end ([`complete`]), through discovery's own walk. Tamper, replay,
//! binding, shape and `inputResponses` probes all start from here.

use super::judge::asks_for_input;
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use crate::client::ReplyStatus;
use crate::client::raw::{RawError, Rpc};
use crate::discover::modern::{WalkEnd, walk};
use crate::protocol::mrtr::{InputRequiredResult, REQUEST_STATE};
use serde_json::{Map, Value};

/// Most rounds walked to reach a state or a completion.
pub const MAX_ROUNDS: usize = 8;

/// A tool walked to the round that carries its `requestState`.
#[derive(Debug, Clone)]
pub struct Round {
    /// The tool.
    pub tool: ToolProfile,
    /// Which round (0-based) carried the state.
    pub index: usize,
    /// That round's result.
    pub ir: InputRequiredResult,
    /// Its state.
    pub state: String,
    /// Valid answers to it.
    pub answers: Map<String, Value>,
}

/// A tool walked to its end with valid answers.
#[derive(Debug, Clone)]
pub struct Completed {
    /// The answers of the final retry.
    pub answers: Map<String, Value>,
    /// The state of the final retry.
    pub state: Option<String>,
    /// The complete result.
    pub result: Value,
    /// Every state issued on the way, in order.
    pub states: Vec<String>,
    /// Every reply body of an `input_required` round.
    pub bodies: Vec<String>,
    /// The values typed on its flow pages.
    pub typed: Vec<crate::client::browser::Typed>,
}

/// Why a subject was not brought to where a probe starts: the skip (or
/// the control's "did not hold") it words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreached {
    /// The walk ended before a round carried a state (`end` says how).
    #[error("{tool} did not reach a round with a requestState: {end}")]
    NoStateRound {
        /// The tool walked.
        tool: String,
        /// How the walk ended ([`describe_end`]).
        end: String,
    },
    /// The walk stopped at a state round that held no state.
    #[error("{tool} gave no requestState")]
    NoState {
        /// The tool walked.
        tool: String,
    },
    /// The walk ended without a complete result (`end` says how).
    #[error("{tool} did not complete: {end}")]
    Incomplete {
        /// The tool walked.
        tool: String,
        /// How the walk ended ([`describe_end`]).
        end: String,
    },
    /// Answered validly, the tool ended with a tool error.
    #[error("{tool} ended with a tool error when answered validly")]
    ToolError {
        /// The tool walked.
        tool: String,
    },
}

/// Walks `tool` (with `arguments`) to the first round carrying a state.
pub async fn at_state_with(
    p: &Probe,
    tool: &ToolProfile,
    arguments: &Map<String, Value>,
) -> Result<Round, Unreached> {
    let w = walk(p, &tool.name, arguments, &all_modes(), MAX_ROUNDS, true).await;
    if w.end != WalkEnd::AtState {
        return Err(Unreached::NoStateRound {
            tool: tool.name.clone(),
            end: describe_end(p, &w.end),
        });
    }
    let (index, round) = w.state_round().ok_or_else(|| Unreached::NoState {
        tool: tool.name.clone(),
    })?;
    Ok(Round {
        tool: tool.clone(),
        index,
        ir: InputRequiredResult::from_value(&round.result).unwrap_or_default(),
        state: round.state.clone().unwrap_or_default(),
        answers: round.answers.clone(),
    })
}

/// [`at_state_with`] with the tool's usual arguments.
pub async fn at_state(p: &Probe, tool: &ToolProfile) -> Result<Round, Unreached> {
    at_state_with(p, tool, &tool.arguments).await
}

/// Walks `tool` to its end with valid answers (URL pages completed on the
/// target's origin).
pub async fn complete(p: &Probe, tool: &ToolProfile) -> Result<Completed, Unreached> {
    let w = walk(
        p,
        &tool.name,
        &tool.arguments,
        &all_modes(),
        MAX_ROUNDS,
        false,
    )
    .await;
    let WalkEnd::Complete { result, is_error } = &w.end else {
        return Err(Unreached::Incomplete {
            tool: tool.name.clone(),
            end: describe_end(p, &w.end),
        });
    };
    if *is_error {
        return Err(Unreached::ToolError {
            tool: tool.name.clone(),
        });
    }
    let last = w.rounds.last();
    Ok(Completed {
        answers: last.map(|r| r.answers.clone()).unwrap_or_default(),
        state: last.and_then(|r| r.state.clone()),
        result: result.clone(),
        states: w.rounds.iter().filter_map(|r| r.state.clone()).collect(),
        bodies: w.rounds.iter().map(|r| r.raw.clone()).collect(),
        typed: w.typed.clone(),
    })
}

/// One line for how a walk ended on `p`'s target.
pub fn describe_end(p: &Probe, end: &WalkEnd) -> String {
    match end {
        WalkEnd::AtState => "stopped at a round with a requestState".into(),
        WalkEnd::Complete { is_error, .. } => format!(
            "completed{} before any round carried a requestState",
            if *is_error { " with a tool error" } else { "" }
        ),
        WalkEnd::Error {
            code,
            message,
            status,
        } => p
            .reply_status(*status)
            .then(", ", format_args!("error {code} ({message})")),
        WalkEnd::Limit => format!("still asking after {MAX_ROUNDS} rounds"),
        WalkEnd::Other(why) => why.clone(),
    }
}

/// Sends the retry of `tool` with `answers` and `state` (any JSON: probes
/// send malformed ones), its usual arguments and every capability.
pub async fn retry_raw(
    p: &Probe,
    tool: &ToolProfile,
    label: &str,
    responses: Option<Value>,
    state: Option<Value>,
) -> Result<(Rpc, u16), RawError> {
    let mut req = p.call_request(label, tool, &all_modes(), responses, None);
    if let Some(s) = state {
        req = req.with_param(REQUEST_STATE, s);
    }
    let r = p.send(req).await?;
    Ok((r.rpc(), r.status))
}

/// Sends the retry of `tool` with `answers` and `state`.
pub async fn retry(
    p: &Probe,
    tool: &ToolProfile,
    label: &str,
    answers: &Map<String, Value>,
    state: &str,
) -> Result<(Rpc, u16), RawError> {
    let req = p.call_request(
        label,
        tool,
        &all_modes(),
        Some(Value::Object(answers.clone())),
        Some(state),
    );
    let r = p.send(req).await?;
    Ok((r.rpc(), r.status))
}

/// The state tools in the order probes try them: tools whose state round
/// is a form first (they can be answered without a browser), then those
/// whose flow pages are on the target's origin, then those whose pages are
/// on another origin. These stay subjects: walking to the state round and
/// retrying there never opens a page; probes that complete a flow
/// ([`complete`]) choose their own tools.
pub fn state_subjects(p: &Probe) -> Vec<ToolProfile> {
    let mut tools: Vec<ToolProfile> = p.target().state_tools();
    tools.sort_by_key(|t| (!state_round_is_form(t), p.target().off_origin(t).is_some()));
    tools
}

/// Whether the round that carries `t`'s state is form mode only.
pub fn state_round_is_form(t: &ToolProfile) -> bool {
    t.state_round
        .and_then(|i| t.rounds.get(i))
        .is_some_and(|r| r.modes.form && !r.modes.url)
}

/// [`state_subjects`], kept to those whose state round is a form when
/// `form_only` (probes that send form content), or the skip saying there
/// are none.
pub fn subjects(p: &Probe, form_only: bool) -> Result<Vec<ToolProfile>, Verdict> {
    let tools: Vec<ToolProfile> = state_subjects(p)
        .into_iter()
        .filter(|t| !form_only || state_round_is_form(t))
        .collect();
    if tools.is_empty() {
        return Err(p.target().no_subject(if form_only {
            "no tool issues a requestState in a form round"
        } else {
            "no tool issues a requestState in any round"
        }));
    }
    Ok(tools)
}

/// The first subject that reaches its state round this time, or a skip
/// saying why none did ([`subjects`] says which are tried).
pub async fn first_at_state(p: &Probe, form_only: bool) -> Result<Round, Verdict> {
    let tools = subjects(p, form_only)?;
    let mut why = Vec::new();
    for t in &tools {
        match at_state(p, t).await {
            Ok(r) => return Ok(r),
            Err(e) => why.push(e.to_string()),
        }
    }
    Err(Verdict::skip(why.join("; ")))
}

/// How a reply to a probe that should be refused reads, in a few words.
pub fn reading(rpc: &Rpc, status: ReplyStatus) -> String {
    let what = match rpc {
        Rpc::Result(v) if asks_for_input(v) => "input_required (a re-prompt)".into(),
        Rpc::Result(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => {
            "a tool error result".into()
        }
        Rpc::Result(_) => "a complete result".into(),
        other => other.describe(),
    };
    status.then(", ", what)
}

/// The first text content of a tool result, for evidence lines.
pub fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find_map(|x| x.get("text").and_then(Value::as_str)))
        .map(|t| crate::client::mask::shorten(t, 120))
        .unwrap_or_else(|| "(no text content)".into())
}
