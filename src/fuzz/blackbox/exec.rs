//! Running one case against the target: the flow it starts, the mutated
//! request it sends, the replays after it, and the oracles on all of it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::client::local::Local;
use crate::client::raw::{Exchange, RawError, RawReply, RawRequest};
use crate::discover::modern::{WalkEnd, call_request, walk};
use crate::discover::offered::{first_get, first_read};
use crate::discover::{Wire, WireCore, all_modes, legacy};
use crate::fuzz::harness::wire::{FRAMING, Logged, MALFORMED};
use crate::fuzz::mutation::AnswerMutation;
use crate::fuzz::mutation::{StateMutation, equivalent};
use crate::oracle::effect::{self, Effect};
use crate::oracle::replay::{self, Twice};
use crate::oracle::tamper::{self, Change, Control, Controls, Judgement, Outcome};
use crate::protocol::mrtr::REQUEST_STATE;
use crate::protocol::{ClientCapabilities, Generation};

use super::case::{Listing, Op, declared};
use super::oracle::{MUTATED, completes, judge, judge_call, judge_modes};
use super::wire::NetWire;
use crate::oracle::Oracle;

/// Label (after `case N `) of the control: the mutated retry's answers,
/// without a state.
pub const CONTROL: &str = "control: the same answers, no requestState";

/// Label (after `case N `) of the no-state control sent again, to tell a
/// stable result from one that changes call to call.
pub const CONTROL_AGAIN: &str = "control again (is the result stable?): the same answers, no state";

/// Label (after `case N `) of the untampered control: a fresh state's
/// retry, the flow's own principal.
pub const UNTAMPERED: &str = "untampered control: a fresh requestState and its answers";

/// Label (after `case N `) of the effect control
/// ([`crate::oracle::effect`]): a fresh state's retry, every input request
/// declined.
pub const DECLINED: &str = "effect control (did the call act?): a fresh requestState, declined";

/// Whether a case request's label is one of the controls.
pub fn is_control(label: &str) -> bool {
    [CONTROL, CONTROL_AGAIN, UNTAMPERED, DECLINED]
        .iter()
        .any(|c| label.ends_with(c))
}

/// The outcome of a reply, as [`tamper::judge`] compares them.
pub fn outcome(reply: &Result<RawReply, RawError>) -> Outcome {
    reply
        .as_ref()
        .map_or(Outcome::Unanswered, |r| Outcome::of(&r.rpc()))
}

/// A changed retry that completed, and what its controls need.
struct Changed<'a> {
    tool: &'a ToolInfo,
    caps: &'a ClientCapabilities,
    index: u64,
    /// The `inputResponses` the changed retry sent (mutated or not): the
    /// controls send the same, so only the state differs.
    answers: &'a Value,
    other: Option<&'a str>,
    change: Change,
}

/// The requests [`Target::listings`] sends when no tool is listed.
pub const LISTINGS: [&str; 5] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// A tool as the fuzzer uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// Name.
    pub name: String,
    /// Arguments of its calls.
    pub args: Map<String, Value>,
    /// Other valid arguments (a foreign request for donor states).
    pub other_args: Option<Map<String, Value>>,
    /// Whether its completion must happen at most once.
    pub single_use: bool,
    /// Whether its first call asked for input.
    pub elicits: bool,
    /// Whether a walk of it reached a `requestState`.
    pub has_state: bool,
    /// 2025-11-25: whether discovery saw its elicitation arrive on the
    /// session's GET stream (its calls then open that stream).
    pub elicits_on_get: bool,
    /// The user says it acts on what its state holds (`--trusts-state`):
    /// a changed state completing needs no no-state control to be a
    /// finding ([`tamper::Controls::documented`]).
    pub trusts_state: bool,
}

/// The target, as discovery described it.
#[derive(Debug)]
pub struct Target {
    /// The MCP endpoint.
    pub mcp_url: String,
    /// Token of the principal the flows run as.
    pub principal: String,
    /// Token of another principal, when principals matter to the server.
    pub other_principal: Option<String>,
    /// Bound on every request.
    pub timeout: Duration,
    /// Seed of generated answers.
    pub seed: u64,
    /// 2026-07-28 tools (empty: not spoken).
    pub modern: Vec<ToolInfo>,
    /// 2025-11-25 tools (empty: not spoken).
    pub legacy: Vec<ToolInfo>,
    /// Whether the server speaks 2026-07-28 (for liveness probes).
    pub speaks_modern: bool,
    pub(crate) http: reqwest::Client,
    pub(crate) ids: AtomicI64,
    /// A stdio target's log: a process exit during a case is a finding.
    pub stdio_log: Option<std::sync::Arc<crate::stdio::Log>>,
    /// A stdio target's bridge, called in process: cases reach the pipe
    /// without a loopback HTTP hop.
    pub local: Option<Local>,
}

/// A finding's trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Which oracle.
    pub oracle: Oracle,
    /// What happened.
    pub what: String,
    /// The request that carried the mutation, or (none carried it) the
    /// one the oracle fired on.
    pub sent: Sent,
}

/// What a request was sent as: its JSON-RPC method and, for a
/// `tools/call`, the tool it called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The JSON-RPC method (the HTTP method for a body without one, such
    /// as a session's `DELETE`).
    pub method: String,
    /// The tool, for `tools/call`.
    pub tool: Option<String>,
}

impl Sent {
    /// A `tools/call` of `tool`.
    pub fn call(tool: &str) -> Self {
        Sent {
            method: "tools/call".into(),
            tool: Some(tool.to_owned()),
        }
    }

    /// Read from a request's body (unmutated requests only: a mutated
    /// body may no longer parse, so the flow says what it sent instead).
    pub fn of(req: &RawRequest) -> Self {
        let v = crate::protocol::jsonrpc::parse_json(&req.body).unwrap_or(Value::Null);
        match v.get("method").and_then(Value::as_str) {
            Some("tools/call") => Sent {
                method: "tools/call".into(),
                tool: v["params"]["name"].as_str().map(str::to_owned),
            },
            Some(m) => Sent {
                method: m.to_owned(),
                tool: None,
            },
            None => Sent {
                method: req.method.to_string(),
                tool: None,
            },
        }
    }
}

/// What running one case did.
#[derive(Debug, Default)]
pub struct Exec {
    /// The oracle that fired, if any.
    pub hit: Option<Hit>,
    /// Every request and reply, in order.
    pub log: Vec<Logged>,
    /// 2025-11-25 streamed calls (evidence only).
    pub streamed: Vec<Exchange>,
    /// The 2025-11-25 call replayed by `repro.sh`: (body, answer action).
    pub legacy_call: Option<(Value, String)>,
    /// Why a changed retry that completed is no finding (the controls did
    /// not show the state to be load-bearing), for the summary's notes.
    pub note: Option<String>,
}

/// One flow's wire, the log judged so far and what its mutated request
/// (labelled [`MUTATED`]) was sent as.
struct Run<'t> {
    t: &'t Target,
    w: NetWire,
    log: Vec<Logged>,
    mutated: Option<Sent>,
    note: Option<String>,
    /// A 2025-11-25 session a hit left open: closed after the case,
    /// outside its evidence, so its process can serve the next session.
    open: Option<legacy::Session>,
}

impl Run<'_> {
    /// Judges what was sent since the last call.
    fn check(&mut self) -> Result<(), Hit> {
        let new = self.w.take_log();
        let start = self.log.len();
        self.log.extend(new);
        for l in &self.log[start..] {
            if let Some((oracle, what)) = judge(&l.request, &l.reply, &self.t.mcp_url) {
                let sent = match &self.mutated {
                    Some(m) if l.request.label.contains(MUTATED.trim()) => m.clone(),
                    _ => Sent::of(&l.request),
                };
                return Err(Hit { oracle, what, sent });
            }
        }
        Ok(())
    }
}

/// The replay rule ([`replay::judge`]) on a request's completions (what
/// each said; whether it was the same state and answers): a single-use
/// request completing twice in any form is an error, elsewhere only the
/// same state and answers completing twice. The oracle and the count.
fn repeated(single_use: bool, done: &[(Outcome, bool)]) -> Option<(Oracle, usize)> {
    let same = done.iter().filter(|(_, s)| *s).count();
    match replay::judge(single_use, done.len()) {
        Some(Twice::SingleUse) => Some((Oracle::SingleUseTwice, done.len())),
        _ => replay::judge(single_use, same).map(|t| match t {
            Twice::SingleUse => (Oracle::SingleUseTwice, same),
            Twice::MayRepeat => (Oracle::ReplayAccepted, same),
        }),
    }
}

/// Tools a flag named that no generation lists (the flag, the names, what
/// is listed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {}: no such tool fuzzed (listed: {})", .unknown.join(", "), .listed.join(", "))]
pub struct UnknownTools {
    flag: String,
    unknown: Vec<String>,
    listed: Vec<String>,
}

crate::discover::wire::message_of!(UnknownTools);

impl Target {
    /// `Err` naming each of `names` (given with `flag`) that no generation
    /// lists as a fuzzed tool.
    pub fn knows(&self, names: &[String], flag: &str) -> Result<(), UnknownTools> {
        let listed: Vec<&str> = self
            .modern
            .iter()
            .chain(&self.legacy)
            .map(|t| t.name.as_str())
            .collect();
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| !listed.contains(&n.as_str()))
            .cloned()
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let mut listed: Vec<String> = listed.into_iter().map(str::to_owned).collect();
        listed.sort_unstable();
        listed.dedup();
        Err(UnknownTools {
            flag: flag.to_owned(),
            unknown,
            listed,
        })
    }

    fn wire(&self) -> NetWire {
        let first = self.ids.fetch_add(1000, Ordering::Relaxed);
        NetWire::new(
            WireCore::new(
                self.http.clone(),
                &self.mcp_url,
                &self.principal,
                self.timeout,
                self.seed,
            )
            .over_stdio(self.stdio_log.is_some())
            .in_process(self.local.clone())
            .first_id(first),
        )
        .get_pushers(
            self.legacy
                .iter()
                .filter(|t| t.elicits_on_get)
                .map(|t| t.name.clone())
                .collect(),
        )
    }

    /// The tools of a generation.
    pub fn tools(&self, g: Generation) -> &[ToolInfo] {
        match g {
            Generation::Modern => &self.modern,
            Generation::Legacy => &self.legacy,
        }
    }

    /// Runs `ops` on a fresh flow of tool `tool` of generation `g`.
    pub async fn exec(&self, g: Generation, tool: usize, ops: &[Op], index: u64) -> Exec {
        let Some(info) = self.tools(g).get(tool) else {
            return Exec::default();
        };
        let mut run = Run {
            t: self,
            w: self.wire(),
            log: Vec::new(),
            mutated: None,
            note: None,
            open: None,
        };
        let mut out = Exec::default();
        let exits_before = self.stdio_log.as_ref().map(|l| l.crash_count());
        let res = match g {
            Generation::Modern => self.modern_flow(&mut run, info, ops, index).await,
            Generation::Legacy => self.legacy_flow(&mut run, info, ops, index, &mut out).await,
        };
        let res = res.and_then(|()| run.check());
        if let Err(mut hit) = res {
            if hit.oracle.transport_level() && !self.alive().await {
                hit = Hit {
                    oracle: Oracle::Unresponsive,
                    what: format!("after {}: the server no longer answers", hit.what),
                    sent: hit.sent,
                };
            }
            out.hit = Some(hit);
        }
        if let (Some(before), Some(log)) = (exits_before, &self.stdio_log)
            && log.crash_count() > before
            && let Some(e) = log.crashes().get(before)
        {
            let tail = e.stderr_last(2);
            out.hit = Some(Hit {
                oracle: Oracle::ProcessExited,
                what: format!(
                    "case {index} {}: the server process exited ({}){}",
                    info.name,
                    e.status,
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its stderr ends: {}", tail.join(" | "))
                    }
                ),
                sent: out.hit.take().map_or_else(
                    || Sent {
                        method: "tools/call".into(),
                        tool: Some(info.name.clone()),
                    },
                    |h| h.sent,
                ),
            });
        }
        let _ = run.check();
        if let Some(s) = run.open.take() {
            legacy::close(&run.w, &s).await;
        }
        out.note = run.note.take();
        out.log = run.log;
        out.streamed = run.w.take_streamed();
        out
    }

    /// With no 2026-07-28 tool to call: that generation's listing and
    /// discover requests, each judged by the per-reply oracles (a
    /// `tools/list` answering `input_required` lists no tool, and is itself
    /// the finding). The first hit and its log; `None` when nothing fired
    /// (or the server does not speak 2026-07-28).
    pub async fn listings(&self) -> Option<(Hit, Vec<Logged>)> {
        if !self.speaks_modern {
            return None;
        }
        let mut run = Run {
            t: self,
            w: self.wire(),
            log: Vec::new(),
            mutated: None,
            note: None,
            open: None,
        };
        for method in LISTINGS {
            let req = crate::discover::modern::request(
                &run.w,
                format!("listing: {method}"),
                method,
                json!({}),
                &all_modes(),
            );
            let _ = run.w.send(req).await;
            if let Err(hit) = run.check() {
                return Some((hit, run.log));
            }
        }
        None
    }

    /// Whether the server still answers anything (three tries).
    pub async fn alive(&self) -> bool {
        let w = self.wire();
        for i in 0..3 {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            let req = if self.speaks_modern {
                crate::discover::modern::request(
                    &w,
                    "liveness: server/discover",
                    "server/discover",
                    json!({}),
                    &all_modes(),
                )
            } else {
                legacy::initialize_request(
                    &self.mcp_url,
                    Some(&self.principal),
                    w.next_id(),
                    &all_modes().to_value(),
                )
            };
            if w.send(req).await.is_ok() {
                return true;
            }
        }
        false
    }

    /// A state of another request: the same tool with other arguments, or
    /// another tool that issues states.
    async fn donor(&self, run: &mut Run<'_>, tool: &ToolInfo) -> Result<Option<String>, Hit> {
        let (name, args) = match &tool.other_args {
            Some(a) => (tool.name.clone(), a.clone()),
            None => match self
                .modern
                .iter()
                .find(|t| t.has_state && t.name != tool.name)
            {
                Some(t) => (t.name.clone(), t.args.clone()),
                None => return Ok(None),
            },
        };
        let walked = walk(&run.w, &name, &args, &all_modes(), 3, true).await;
        run.check()?;
        Ok(walked.state_round().and_then(|(_, r)| r.state.clone()))
    }

    /// Sends the case's [`Op::List`] requests, each judged as it comes
    /// (on `session` for 2025-11-25, which has no `server/discover`).
    async fn list_ops(
        &self,
        run: &mut Run<'_>,
        ops: &[Op],
        caps: &ClientCapabilities,
        session: Option<&legacy::Session>,
    ) -> Result<(), Hit> {
        for op in ops {
            match op {
                Op::List(Listing::Discover) if session.is_some() => {}
                Op::List(l) => self.listing(run, *l, caps, session).await?,
                _ => {}
            }
        }
        Ok(())
    }

    /// One [`Op::List`]: a read or get first lists, then follows the first
    /// entry named (nothing to follow: nothing more is sent).
    async fn listing(
        &self,
        run: &mut Run<'_>,
        l: Listing,
        caps: &ClientCapabilities,
        session: Option<&legacy::Session>,
    ) -> Result<(), Hit> {
        let request = |w: &NetWire, method: &str, params: Value| {
            let label = format!("listing: {method}");
            match session {
                Some(s) => legacy::request(w, s, &label, method, params),
                None => crate::discover::modern::request(w, label, method, params, caps),
            }
        };
        let (method, params) = match l.follows() {
            None => (l.method(), json!({})),
            Some(list) => {
                let reply = run.w.send(request(&run.w, list.method(), json!({}))).await;
                run.check()?;
                let Ok(r) = reply else { return Ok(()) };
                let follow = match l {
                    Listing::PromptGet => first_get(&r.rpc()),
                    _ => first_read(&r.rpc()),
                };
                let Ok(f) = follow else { return Ok(()) };
                (f.method, f.params)
            }
        };
        let _ = run.w.send(request(&run.w, method, params)).await;
        run.check()
    }

    async fn modern_flow(
        &self,
        run: &mut Run<'_>,
        tool: &ToolInfo,
        ops: &[Op],
        index: u64,
    ) -> Result<(), Hit> {
        let caps = declared(ops);
        self.list_ops(run, ops, &caps, None).await?;
        let walked = walk(&run.w, &tool.name, &tool.args, &caps, 3, true).await;
        run.check()?;
        let round = match (&walked.end, walked.state_round()) {
            (WalkEnd::AtState, Some((_, r))) => r.state.clone().map(|s| (s, r.answers.clone())),
            _ => None,
        };
        let wants_donor = ops.iter().any(|o| {
            matches!(
                o,
                Op::State(StateMutation::Splice { .. } | StateMutation::Donor)
            )
        });
        let donor = match &round {
            Some(_) if wants_donor => self.donor(run, tool).await?,
            _ => None,
        };
        let other = self
            .other_principal
            .as_deref()
            .filter(|_| ops.contains(&Op::OtherPrincipal));

        // The mutated request: the retry of the state round, or (a tool
        // without state) the first call.
        let mut sent_state = round.as_ref().map(|(s, _)| Value::from(s.clone()));
        let mut answers = round.as_ref().map(|(_, a)| Value::Object(a.clone()));
        let mut framing = false;
        let mut malformed = false;
        for op in ops {
            match op {
                Op::State(m) if round.is_some() => {
                    if let Some(Value::String(s)) = &sent_state {
                        sent_state = m.apply(s, donor.as_deref());
                    }
                }
                Op::Answers(m) if round.is_some() => {
                    if let Some(Value::Object(a)) = &answers {
                        malformed |= !m.keeps_json();
                        answers = Some(m.apply(a));
                    }
                }
                Op::Header(h) => framing |= h.breaks_framing(),
                Op::Body(b) => malformed |= !b.keeps_id(),
                _ => {}
            }
        }
        let names: Vec<String> = ops.iter().map(Op::name).collect();
        let changes = ops.iter().any(|o| {
            !matches!(
                o,
                Op::Replay | Op::Concurrent { .. } | Op::Caps(_) | Op::List(_)
            )
        });
        let label = format!(
            "{}{}{}case {index} {} {}",
            if framing { FRAMING } else { "" },
            if malformed { MALFORMED } else { "" },
            if changes { MUTATED } else { "" },
            tool.name,
            if changes {
                names.join(" ")
            } else {
                "retry".into()
            }
        );
        run.mutated = Some(Sent::call(&tool.name));
        let mut req = call_request(
            &run.w,
            label,
            &tool.name,
            &tool.args,
            &caps,
            answers.clone(),
            None,
        );
        if let Some(s) = &sent_state {
            req = req.with_param(REQUEST_STATE, s.clone());
        }
        if let Some(o) = other {
            req = req.token(Some(o));
        }
        for op in ops {
            match op {
                Op::Header(h) => req = h.apply(req),
                Op::Body(b) => req = b.apply(req),
                _ => {}
            }
        }
        let reply = run.w.send(req).await;
        run.check()?;
        // A retry (a state round) sent answers: `answers` came from it.
        let (Some((state, valid)), Some(answers)) = (round, answers) else {
            return Ok(());
        };
        let tampered = matches!(&sent_state, Some(Value::String(s)) if !equivalent(&state, s));
        // Whether the retry sent exactly the valid state and answers (a
        // replay of it is then the same request sent twice).
        let faithful = sent_state.as_ref() == Some(&Value::from(state.clone()))
            && answers == Value::Object(valid.clone())
            && !ops.iter().any(|o| matches!(o, Op::Body(_)));
        // Each completion: what it said, and whether it was the same state
        // and answers (a replay of the valid retry).
        let mut done: Vec<(Outcome, bool)> = Vec::new();
        // Another principal's retry carries a state only when one was sent
        // (an omitted or mistyped one is no state to take over).
        let foreign = other.is_some() && matches!(&sent_state, Some(Value::String(_)));
        // A state swapped whole for another request's (a donor, or a splice
        // that fell back to one) is genuine: only its binding is tested.
        let swapped =
            matches!((&sent_state, &donor), (Some(Value::String(s)), Some(d)) if equivalent(d, s));
        let change = match (tampered, swapped) {
            (true, true) => Some(Change::OtherRequest),
            (true, false) => Some(Change::State),
            (false, _) => foreign.then_some(Change::Principal),
        };
        if completes(&reply) {
            if let Some(change) = change {
                let changed = Changed {
                    tool,
                    caps: &caps,
                    index,
                    answers: &answers,
                    other,
                    change,
                };
                return self.judge_changed(run, &changed, &reply).await;
            }
            done.push((outcome(&reply), faithful));
        }
        let valid_retry = |label: String, w: &NetWire| {
            call_request(
                w,
                label,
                &tool.name,
                &tool.args,
                &caps,
                Some(Value::Object(valid.clone())),
                Some(&state),
            )
        };
        for op in ops {
            match op {
                Op::Replay => {
                    let r = run
                        .w
                        .send(valid_retry(
                            format!("case {index} replay of the valid retry"),
                            &run.w,
                        ))
                        .await;
                    if completes(&r) {
                        done.push((outcome(&r), true));
                    }
                }
                Op::Concurrent { copies } => {
                    let n = 2 + usize::from(copies % 4);
                    let reqs: Vec<RawRequest> = (0..n)
                        .map(|i| {
                            valid_retry(
                                format!("case {index} concurrent copy {}/{n}", i + 1),
                                &run.w,
                            )
                        })
                        .collect();
                    let replies =
                        futures::future::join_all(reqs.into_iter().map(|r| run.w.send(r))).await;
                    done.extend(
                        replies
                            .iter()
                            .filter(|r| completes(r))
                            .map(|r| (outcome(r), true)),
                    );
                }
                _ => {}
            }
        }
        run.check()?;
        let Some((oracle, _)) = repeated(tool.single_use, &done) else {
            return Ok(());
        };
        // The effect control: completions that read like the same flow
        // declined did nothing, and doing nothing twice is no replay.
        let declined = self.declined(run, tool, &caps, index).await;
        run.check()?;
        let acted: Vec<(Outcome, bool)> = done
            .into_iter()
            .filter(|(o, _)| effect::judge(o, &declined) != Effect::Nothing)
            .collect();
        let Some((oracle, n)) = repeated(tool.single_use, &acted) else {
            run.note = Some(format!(
                "{} ({oracle}): the request completed more than once, not reported: {}",
                tool.name,
                Effect::Nothing.why()
            ));
            return Ok(());
        };
        let unknown = if effect::judge(&acted[0].0, &declined) == Effect::Unknown {
            format!(" ({})", Effect::Unknown.why())
        } else {
            String::new()
        };
        let what = match oracle {
            Oracle::SingleUseTwice => format!(
                "single-use tool {}: one request completed {n} times{unknown}",
                tool.name
            ),
            _ => format!(
                "{}: the same requestState and inputResponses completed {n} times{unknown} \
                 (a warning: if the action must not repeat, run with --single-use {})",
                tool.name, tool.name
            ),
        };
        Err(Hit {
            oracle,
            what,
            sent: Sent::call(&tool.name),
        })
    }

    /// A changed retry (a tampered state, or another principal) completed:
    /// sends the controls [`tamper::judge`] asks for, one at a time, and
    /// files a finding only where the state is shown to be load-bearing.
    async fn judge_changed(
        &self,
        run: &mut Run<'_>,
        c: &Changed<'_>,
        reply: &Result<RawReply, RawError>,
    ) -> Result<(), Hit> {
        let changed = outcome(reply);
        let mut controls = Controls {
            documented: c.tool.trusts_state,
            ..Controls::default()
        };
        let why = loop {
            match tamper::judge(&changed, &controls) {
                Judgement::Refused => return Ok(()),
                Judgement::NotShown(why) => {
                    run.note = Some(format!(
                        "{} ({}): {} completed, not reported: {why}",
                        c.tool.name,
                        c.change.oracle(),
                        c.change.what()
                    ));
                    return Ok(());
                }
                Judgement::Accepted(why) => break why,
                Judgement::Need(Control::Untampered) => {
                    controls.untampered = Some(self.untampered(run, c).await);
                }
                Judgement::Need(Control::Declined) => {
                    controls.declined = Some(self.declined(run, c.tool, c.caps, c.index).await);
                }
                Judgement::Need(k) => {
                    let label = if k == Control::NoState {
                        CONTROL
                    } else {
                        CONTROL_AGAIN
                    };
                    let mut req = call_request(
                        &run.w,
                        format!("case {} {label}", c.index),
                        &c.tool.name,
                        &c.tool.args,
                        c.caps,
                        Some(c.answers.clone()),
                        None,
                    );
                    if let Some(o) = c.other {
                        req = req.token(Some(o));
                    }
                    let o = outcome(&run.w.send(req).await);
                    match k {
                        Control::NoState => controls.no_state = Some(o),
                        _ => controls.no_state_again = Some(o),
                    }
                }
            }
            run.check()?;
        };
        let what = match c.change {
            Change::Principal => format!(
                "{}: {}'s state completed for another principal; {why}",
                c.tool.name, self.principal
            ),
            change => format!(
                "{}: a retry with {} completed; {why}",
                c.tool.name,
                change.what()
            ),
        };
        Err(Hit {
            oracle: c.change.oracle(),
            what,
            sent: Sent::call(&c.tool.name),
        })
    }

    /// The untampered control: a fresh walk of the tool (the first state
    /// may be spent) and its retry with the changed retry's answers, as the
    /// flow's own principal.
    async fn untampered(&self, run: &mut Run<'_>, c: &Changed<'_>) -> Outcome {
        let walked = walk(&run.w, &c.tool.name, &c.tool.args, c.caps, 3, true).await;
        let Some(state) = walked.state_round().and_then(|(_, r)| r.state.clone()) else {
            return Outcome::Other;
        };
        let req = call_request(
            &run.w,
            format!("case {} {UNTAMPERED}", c.index),
            &c.tool.name,
            &c.tool.args,
            c.caps,
            Some(c.answers.clone()),
            Some(&state),
        );
        outcome(&run.w.send(req).await)
    }

    /// The effect control: a fresh walk of the tool and its retry with
    /// every input request declined, as the flow's own principal (no state
    /// reached: [`Outcome::Unanswered`], nothing to tell by).
    async fn declined(
        &self,
        run: &mut Run<'_>,
        tool: &ToolInfo,
        caps: &ClientCapabilities,
        index: u64,
    ) -> Outcome {
        let walked = walk(&run.w, &tool.name, &tool.args, caps, 3, true).await;
        let Some((_, r)) = walked.state_round() else {
            return Outcome::Unanswered;
        };
        let Some(state) = r.state.clone() else {
            return Outcome::Unanswered;
        };
        let req = call_request(
            &run.w,
            format!("case {index} {DECLINED}"),
            &tool.name,
            &tool.args,
            caps,
            Some(AnswerMutation::Decline.apply(&r.answers)),
            Some(&state),
        );
        outcome(&run.w.send(req).await)
    }

    async fn legacy_flow(
        &self,
        run: &mut Run<'_>,
        tool: &ToolInfo,
        ops: &[Op],
        index: u64,
        out: &mut Exec,
    ) -> Result<(), Hit> {
        let caps = declared(ops);
        let session = legacy::open(&run.w, &caps, true).await;
        run.check()?;
        let Ok(s) = session else { return Ok(()) };
        run.open = Some(s.clone());
        self.list_ops(run, ops, &caps, Some(&s)).await?;
        // Header and body changes go to a request that never waits for a
        // user: `tools/list` on the session.
        let hb: Vec<&Op> = ops
            .iter()
            .filter(|o| matches!(o, Op::Header(_) | Op::Body(_)))
            .collect();
        if !hb.is_empty() {
            let framing = hb
                .iter()
                .any(|o| matches!(o, Op::Header(h) if h.breaks_framing()));
            let malformed = hb.iter().any(|o| matches!(o, Op::Body(b) if !b.keeps_id()));
            let names: Vec<String> = hb.iter().map(|o| o.name()).collect();
            let label = format!(
                "{}{}{MUTATED}case {index} tools/list {}",
                if framing { FRAMING } else { "" },
                if malformed { MALFORMED } else { "" },
                names.join(" ")
            );
            run.mutated = Some(Sent {
                method: "tools/list".into(),
                tool: None,
            });
            let mut req = legacy::request(&run.w, &s, &label, "tools/list", json!({}));
            for op in &hb {
                match op {
                    Op::Header(h) => req = h.apply(req.clone()),
                    Op::Body(b) => req = b.apply(req.clone()),
                    _ => {}
                }
            }
            let _ = run.w.send(req).await;
            run.check()?;
        }
        // A decline or cancel answers the tool's `elicitation/create`; a
        // session declaring chosen capabilities declines whatever it is
        // sent, so that the modes are seen.
        let answer = ops
            .iter()
            .find_map(|o| match o {
                Op::Answers(crate::fuzz::mutation::AnswerMutation::Decline) => {
                    Some((legacy::Answer::Decline, "decline"))
                }
                Op::Answers(crate::fuzz::mutation::AnswerMutation::Cancel) => {
                    Some((legacy::Answer::Cancel, "cancel"))
                }
                _ => None,
            })
            .or_else(|| {
                ops.iter()
                    .any(|o| matches!(o, Op::Caps(_)))
                    .then_some((legacy::Answer::Decline, "decline"))
            });
        if let Some((a, action)) = answer
            && tool.elicits
        {
            out.legacy_call = Some((
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool.name, "arguments": tool.args}}),
                action.to_owned(),
            ));
            let st = legacy::call(&run.w, &s, &tool.name, &tool.args, a, &Default::default()).await;
            run.check()?;
            let judged = judge_call(&st).or_else(|| judge_modes(&st.elicitations, &caps));
            if let Some((oracle, w)) = judged {
                return Err(Hit {
                    oracle,
                    what: format!("case {index} {} answered {action}: {w}", tool.name),
                    sent: Sent::call(&tool.name),
                });
            }
        }
        run.open = None;
        legacy::close(&run.w, &s).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_http::{Read, read_request};
    use super::*;
    use crate::findings::Severity;
    use tokio::io::AsyncWriteExt;

    /// A one-tool 2026-07-28 server on 127.0.0.1 that trusts any
    /// `requestState` and completes without one too: its result names the
    /// state's content (`uses_state`) or not. One request per connection.
    async fn trusting(uses_state: bool) -> String {
        if uses_state {
            one_tool(|p| format!("trip to {}", p[REQUEST_STATE].as_str().unwrap_or("nowhere")))
                .await
        } else {
            one_tool(|_| "trip booked".into()).await
        }
    }

    /// A one-tool 2026-07-28 server on 127.0.0.1: the first call asks (state
    /// `Paris`, or the argument `to`), any call with a state or answers
    /// completes with the text `retry` gives for its params, as often as it
    /// is sent. One request per connection.
    async fn one_tool(retry: fn(&Value) -> String) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", l.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                tokio::spawn(async move {
                    let Read::Request { body, .. } = read_request(&mut c, usize::MAX).await else {
                        return;
                    };
                    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let p = &req["params"];
                    let done = json!({"resultType": "complete",
                        "content": [{"type": "text", "text": retry(p)}]});
                    let result = match (req["method"].as_str(), p.get(REQUEST_STATE)) {
                        (Some("tools/call"), Some(Value::String(_))) => done,
                        (Some("tools/call"), _) if p.get("inputResponses").is_some() => done,
                        (Some("tools/call"), _) => json!({"resultType": "input_required",
                            "requestState": p["arguments"]["to"].as_str().unwrap_or("Paris"),
                            "inputRequests": {"ok": {
                                "method": "elicitation/create", "params": {"message": "Go?",
                                "requestedSchema": {"type": "object",
                                    "properties": {"go": {"type": "boolean"}}, "required": ["go"]}}}}}),
                        _ => json!({"resultType": "complete"}),
                    };
                    let out =
                        json!({"jsonrpc": "2.0", "id": req["id"], "result": result}).to_string();
                    let _ = c
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
                                out.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                });
            }
        });
        url
    }

    fn target(url: String) -> Target {
        Target {
            mcp_url: url,
            stdio_log: None,
            local: None,
            principal: "alice".into(),
            other_principal: None,
            timeout: Duration::from_secs(5),
            seed: 1,
            modern: vec![ToolInfo {
                name: "trip".into(),
                args: Map::new(),
                other_args: None,
                single_use: false,
                elicits: true,
                has_state: true,
                elicits_on_get: false,
                trusts_state: false,
            }],
            legacy: Vec::new(),
            speaks_modern: true,
            http: crate::discover::http_client().unwrap(),
            ids: AtomicI64::new(1),
        }
    }

    /// Both servers complete a tampered state and complete without one.
    /// Where the state's content shows in the result, the tampered state's
    /// changed content completed differently from no state and from the
    /// untampered state: a finding, after both controls. Where it does
    /// not, the state bears on nothing: a note, no finding.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_trusted_state_is_found_only_where_it_bears_on_the_result() {
        let tamper = [Op::State(StateMutation::FlipChar { index: 0 })];
        for uses_state in [true, false] {
            let t = target(trusting(uses_state).await);
            let ex = t.exec(Generation::Modern, 0, &tamper, 0).await;
            let labels: Vec<&str> = ex.log.iter().map(|l| l.request.label.as_str()).collect();
            for c in [CONTROL, CONTROL_AGAIN, UNTAMPERED] {
                assert!(labels.iter().any(|l| l.ends_with(c)), "{c}: {labels:?}");
            }
            if uses_state {
                let hit = ex.hit.expect("a finding");
                assert_eq!(hit.oracle, Oracle::TamperedStateAccepted);
                assert!(
                    hit.what.contains("changed content was used"),
                    "{}",
                    hit.what
                );
                assert_eq!(ex.note, None);
            } else {
                assert_eq!(ex.hit, None, "{labels:?}");
                let note = ex.note.expect("a note");
                assert!(note.contains("completes alike"), "{note}");
            }
        }
    }

    /// A state the server issued for other arguments, presented whole and
    /// trusted, breaks the binding to the request (S8c, a SHOULD), not the
    /// integrity rule: `other-request-accepted`, a warning (seen as a MUST
    /// `tampered-state-accepted` on the TypeScript SDK server, whose
    /// genuine states are bound to nothing). A changed byte stays a
    /// tampered state.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_requests_state_accepted_is_a_binding_warning() {
        let mut t = target(trusting(true).await);
        t.modern[0].other_args = Some(json!({"to": "Rome"}).as_object().unwrap().clone());
        for (op, oracle) in [
            (StateMutation::Donor, Oracle::OtherRequestAccepted),
            (
                StateMutation::Splice { at: 0 },
                Oracle::OtherRequestAccepted,
            ),
            (
                StateMutation::FlipChar { index: 0 },
                Oracle::TamperedStateAccepted,
            ),
        ] {
            let ex = t
                .exec(Generation::Modern, 0, &[Op::State(op.clone())], 0)
                .await;
            let hit = ex.hit.unwrap_or_else(|| panic!("{op:?}: a finding"));
            assert_eq!(hit.oracle, oracle, "{op:?}: {}", hit.what);
        }
        assert_eq!(Oracle::OtherRequestAccepted.severity(), Severity::Should);
    }

    /// The effect control on replays: a server that completes a replayed
    /// retry again is a replay warning only where the retry acted. Where
    /// every answer, a decline too, completes "not approved", the replay
    /// did nothing: a note, no finding (seen failing without the control:
    /// a `replay-accepted` warning); where an accept deploys and a decline
    /// does not, the replay is the warning.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replay_is_found_only_where_the_call_acted() {
        fn nothing(_: &Value) -> String {
            "not approved".into()
        }
        fn deploys(p: &Value) -> String {
            let declined = p["inputResponses"]
                .as_object()
                .is_some_and(|m| m.values().any(|a| a["action"] == "decline"));
            if declined { "not approved" } else { "deployed" }.into()
        }
        for (retry, acts) in [(nothing as fn(&Value) -> String, false), (deploys, true)] {
            let t = target(one_tool(retry).await);
            let ex = t.exec(Generation::Modern, 0, &[Op::Replay], 0).await;
            let labels: Vec<&str> = ex.log.iter().map(|l| l.request.label.as_str()).collect();
            assert!(labels.iter().any(|l| l.ends_with(DECLINED)), "{labels:?}");
            if acts {
                let hit = ex.hit.expect("a replay warning");
                assert_eq!(hit.oracle, Oracle::ReplayAccepted, "{}", hit.what);
                assert!(hit.what.contains("completed 2 times"), "{}", hit.what);
            } else {
                assert_eq!(ex.hit, None, "{labels:?}");
                let note = ex.note.expect("a note");
                assert!(note.contains("did nothing"), "{note}");
            }
        }
    }
}
