//! The flow as discovery reads a tool: a walk. With [`FlowConfig::explore`]
//! set, a [`ModernFlow`] judges nothing; it answers every round validly
//! ([`answers_for`]), completes URL pages on the endpoint's origin, records
//! each `input_required` round ([`RoundSeen`]) and ends where the walk
//! says ([`WalkEnd`]): at the first round carrying a `requestState` when
//! told to, at a complete result or an error, or at the round limit. The
//! checker's subjects, both fuzzers and discovery walk tools this way,
//! through [`super::super::drive`] like every other flow.

use super::{FlowConfig, ModernFlow, Pending};
use crate::client::content::answers_for;
use crate::client::leg::{HttpReply, LegFailure, Step};
use crate::client::outcome::Outcome;
use crate::client::page::foreign_origin;
use crate::client::rpc::Rpc;
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::mrtr::{InputRequiredResult, RequestMeta, asks_for_input};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// What a walk needs beyond an ordinary flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Explore {
    /// End at the first round carrying a `requestState`, before answering
    /// it, so nothing runs to its end that need not.
    pub stop_at_state: bool,
    /// Where its JSON-RPC ids come from: the run's, shared with every other
    /// request the driver sends.
    pub ids: Ids,
}

/// JSON-RPC ids handed out over a run, one at a time, to whoever sends.
#[derive(Debug, Clone)]
pub struct Ids(Arc<AtomicI64>);

impl Ids {
    /// Ids from `first` on.
    pub fn starting_at(first: i64) -> Self {
        Ids(Arc::new(AtomicI64::new(first)))
    }

    /// A fresh id.
    pub fn next(&self) -> i64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

impl PartialEq for Ids {
    /// The same counter.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One `input_required` round a walk saw.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundSeen {
    /// The result object.
    pub result: Value,
    /// The raw reply body (for duplicate-key checks).
    pub raw: String,
    /// Modes of its `elicitation/create` requests.
    pub modes: ElicitModes,
    /// Methods of its input requests (`elicitation/create`, `roots/list`, ...).
    pub methods: Vec<String>,
    /// Its `requestState`, if any.
    pub state: Option<String>,
    /// Valid answers to it (what the walk sent, or would send, next).
    pub answers: serde_json::Map<String, Value>,
    /// URL-mode pages it asked for.
    pub urls: Vec<String>,
}

impl RoundSeen {
    /// The round read from an `input_required` result, answered with
    /// `seed`.
    pub fn of(result: Value, raw: String, seed: u64) -> RoundSeen {
        let ir = InputRequiredResult::from_value(&result).unwrap_or_default();
        let mut modes = ElicitModes::default();
        let mut methods = Vec::new();
        let mut urls = Vec::new();
        for r in ir.input_requests.iter().flat_map(|r| r.values()) {
            if !methods.contains(&r.method) {
                methods.push(r.method.clone());
            }
            if r.method != "elicitation/create" {
                continue;
            }
            match r.params.get("mode").and_then(Value::as_str) {
                Some("url") => {
                    modes.url = true;
                    if let Some(u) = r.params.get("url").and_then(Value::as_str) {
                        urls.push(u.to_owned());
                    }
                }
                _ => modes.form = true,
            }
        }
        RoundSeen {
            answers: answers_for(&ir, seed),
            state: ir.request_state,
            modes,
            methods,
            urls,
            result,
            raw,
        }
    }
}

/// How a walk ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkEnd {
    /// The last round carries a `requestState` (a walk told to stop there).
    AtState,
    /// A complete result.
    Complete {
        /// `isError`.
        is_error: bool,
        /// The result.
        result: Value,
    },
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
        /// HTTP status of the reply.
        status: u16,
    },
    /// The round limit was reached.
    Limit,
    /// Anything else (transport, HTTP error without JSON-RPC, a page not
    /// completed); says why.
    Other(String),
}

/// What a walk saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Walked {
    /// Every `input_required` round, in order.
    pub rounds: Vec<RoundSeen>,
    /// How it ended.
    pub end: WalkEnd,
    /// A flow page on another origin that was not followed.
    pub off_origin: Option<String>,
    /// The values typed on the flow pages completed, in order.
    pub typed: Vec<crate::client::browser::Typed>,
}

impl Walked {
    /// The first round that carried a state, with its index.
    pub fn state_round(&self) -> Option<(usize, &RoundSeen)> {
        self.rounds
            .iter()
            .enumerate()
            .find(|(_, r)| r.state.is_some())
    }
}

impl FlowConfig {
    /// A walk of a tool with `capabilities`, answers from `seed`, at most
    /// `max_rounds` rounds, pages followed on `mcp_url`'s origin only, ids
    /// from `ids`, identifying as `elicitkit-check`.
    pub fn explore(
        capabilities: crate::protocol::ClientCapabilities,
        seed: u64,
        max_rounds: u32,
        mcp_url: &str,
        explore: Explore,
    ) -> FlowConfig {
        FlowConfig {
            generation_meta: RequestMeta::checker(capabilities.clone()),
            capabilities,
            max_rounds,
            seed,
            page_origin: url::Url::parse(mcp_url)
                .ok()
                .map(|u| u.origin().ascii_serialization()),
            explore: Some(explore),
            ..FlowConfig::default()
        }
    }
}

impl ModernFlow {
    /// What the walk saw (taken: a second call has no rounds).
    pub fn take_walked(&mut self) -> Walked {
        self.walked.take().map_or(
            Walked {
                rounds: Vec::new(),
                end: WalkEnd::Other("not a walk".into()),
                off_origin: None,
                typed: Vec::new(),
            },
            |w| *w,
        )
    }

    /// Ends the walk.
    pub(super) fn end_walk(&mut self, end: WalkEnd) -> Step {
        if let Some(w) = &mut self.walked {
            w.end = end;
        }
        self.finish(Outcome::Success)
    }

    /// Reads a reply to a call the way the walk does.
    pub(super) fn walk_reply(&mut self, reply: &HttpReply) -> Step {
        let v = match Rpc::read(reply.status, reply.content_type.as_deref(), &reply.body) {
            Rpc::Result(v) => v,
            Rpc::Error(e) => {
                return self.end_walk(WalkEnd::Error {
                    code: e.code,
                    message: e.message,
                    status: reply.status,
                });
            }
            Rpc::Missing(why) => return self.end_walk(WalkEnd::Other(why)),
        };
        // Read by shape: a round without `resultType` still asks (the
        // checker's `mrtr-result-type` reports the missing declaration).
        if !asks_for_input(&v) {
            return self.end_walk(WalkEnd::Complete {
                is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
                result: v,
            });
        }
        let n = u64::from(self.calls - 1);
        if n == u64::from(self.cfg.max_rounds) {
            return self.end_walk(WalkEnd::Limit);
        }
        let raw = String::from_utf8_lossy(&reply.body).into_owned();
        let round = RoundSeen::of(v, raw, self.seed ^ (n << 32));
        self.rt.rounds += 1;
        self.responses = Some(round.answers.clone());
        self.state_to_echo.clone_from(&round.state);
        self.pages = round.urls.iter().cloned().collect();
        let at_state = round.state.is_some();
        if let Some(w) = &mut self.walked {
            w.rounds.push(round);
        }
        match &self.cfg.explore {
            Some(x) if at_state && x.stop_at_state => self.end_walk(WalkEnd::AtState),
            _ => self.next_page_or_retry(),
        }
    }

    /// The next page of the walk, unless it is on another origin.
    pub(super) fn walk_page(&mut self, url: &str) -> Option<Step> {
        let other = foreign_origin(self.cfg.page_origin.as_deref()?, url)?;
        if let Some(w) = &mut self.walked {
            w.off_origin = Some(other);
        }
        Some(self.end_walk(WalkEnd::Other(format!(
            "flow page on another origin ({url}): not followed"
        ))))
    }

    /// Ends the walk on a leg that got no reply, saying so as the wire did.
    pub(super) fn walk_failure(&mut self, failure: LegFailure, elapsed: Duration) -> Step {
        let why = match failure {
            LegFailure::Timeout => format!("no complete reply within {elapsed:?}"),
            LegFailure::Transport(why) => why,
        };
        let why = match std::mem::replace(&mut self.pending, Pending::Call) {
            Pending::Call => why,
            Pending::Page(mut visit) => visit.on_failure(&why).to_string(),
        };
        self.end_walk(WalkEnd::Other(why))
    }
}
