//! Plans from discovery: what `elicitkit load --target URL` runs without a
//! plan, and what `elicitkit plan` writes out for the user to edit. A
//! generated plan is the same [`Plan`] type as a hand-written one; its TOML
//! form ([`to_toml`]) parses back to it and says in comments where each
//! value came from.
//!
//! Per tool that elicits, on each generation it speaks: an accept scenario
//! (form, multi-round or URL flow), a decline, and — where the tool issues a
//! `requestState` in some round — a tamper (a sealed state must be refused
//! when altered, S7) and, for tools marked single-use, a replay (only those
//! must refuse a repeat; for the others the scenario is written commented
//! out, since a second completion may be legitimate). Arguments come from
//! the tool's `inputSchema` (required properties only); boolean form fields
//! seen during discovery are pinned to `true`, so a "confirm" never loops.
//! Tools that do not elicit, ask for sampling or roots, or send users to a
//! page on another origin are listed in comments and left out.

use super::plan::{self, LoadShape, Plan, ScenarioKind, ScenarioSpec, TargetSpec};
use super::principals::Principals;
use crate::client::Mutation;
use crate::discover::{Discovery, ToolProfile, View};
use crate::protocol::Generation;
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::time::Duration;

/// Why a discovered tool is not in the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Generation.
    pub generation: Generation,
    /// Tool.
    pub tool: String,
    /// Why.
    pub why: String,
}

/// Discovery found no tool the load tool can drive: the target and why
/// each tool was left out.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "no tool of {url} elicits in a way the load tool can drive ({})",
    reasons(left_out)
)]
pub struct NothingToLoad {
    /// The MCP endpoint.
    pub url: String,
    /// Each tool left out, with why.
    pub left_out: Vec<LeftOut>,
}

fn reasons(left_out: &[LeftOut]) -> String {
    if left_out.is_empty() {
        return "it lists no tools".to_owned();
    }
    let each: Vec<String> = left_out
        .iter()
        .map(|l| format!("{} {}: {}", l.generation, l.tool, l.why))
        .collect();
    each.join("; ")
}

/// A plan built from discovery, with what was left out.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The plan.
    pub plan: Plan,
    /// Tools not loaded, and why.
    pub left_out: Vec<LeftOut>,
    /// Scenarios written commented out (replays of tools not marked
    /// single-use).
    pub optional: Vec<ScenarioSpec>,
}

/// Boolean fields of every form discovery saw for `t`, pinned to `true`.
fn pinned_answers(t: &ToolProfile) -> Map<String, Value> {
    let mut out = Map::new();
    for r in &t.rounds {
        let Some(reqs) = r.result.get("inputRequests").and_then(Value::as_object) else {
            // 2025-11-25: the round is the elicitation's params.
            collect_booleans(&r.result, &mut out);
            continue;
        };
        for req in reqs.values() {
            if let Some(p) = req.get("params") {
                collect_booleans(p, &mut out);
            }
        }
    }
    out
}

fn collect_booleans(params: &Value, out: &mut Map<String, Value>) {
    let Some(props) = params
        .get("requestedSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return;
    };
    for (k, v) in props {
        if v.get("type").and_then(Value::as_str) == Some("boolean") {
            out.insert(k.clone(), Value::Bool(true));
        }
    }
}

/// Why `t` cannot be loaded, if it cannot.
fn left_out_reason(t: &ToolProfile, mcp_url: &str) -> Option<String> {
    if !t.elicits() {
        return Some(format!(
            "{} (nothing to load: no elicitation)",
            t.describe()
        ));
    }
    let others = t.other_inputs();
    if !others.is_empty() {
        return Some(format!(
            "asks for {} (the load client declares only elicitation)",
            others.join(", ")
        ));
    }
    if let Some(o) = &t.off_origin {
        return Some(format!(
            "its flow page is on another origin ({o}): not followed"
        ));
    }
    for u in t.rounds.iter().flat_map(|r| r.urls.iter()) {
        if let Err(e) = crate::client::page::same_origin(mcp_url, u) {
            return Some(e.to_string());
        }
    }
    None
}

fn scenario(
    name: String,
    kind: ScenarioKind,
    weight: u32,
    t: &ToolProfile,
    generation: Generation,
) -> ScenarioSpec {
    ScenarioSpec {
        name,
        kind,
        weight,
        tool: t.name.clone(),
        arguments: t.arguments.clone(),
        mutation: Mutation::FlipChar { index: 7 },
        generation,
        answers: pinned_answers(t),
        expect_tool_error: false,
    }
}

/// The scenario that answers every round of tool `t` (generation `g`) as
/// a user accepting would: `<tool>[-legacy]-accept`, weight 4.
pub fn accept_scenario(t: &ToolProfile, g: Generation) -> ScenarioSpec {
    let kind = if t.modes().url {
        ScenarioKind::UrlFlow
    } else if t.rounds.len() > 1 {
        ScenarioKind::MultiRound
    } else {
        ScenarioKind::FormAccept
    };
    let suffix = match g {
        Generation::Modern => "",
        Generation::Legacy => "-legacy",
    };
    scenario(format!("{}{suffix}-accept", t.name), kind, 4, t, g)
}

fn scenarios_of(view: &View, mcp_url: &str, out: &mut Generated) -> Vec<ScenarioSpec> {
    let g = view.generation;
    let suffix = match g {
        Generation::Modern => "",
        Generation::Legacy => "-legacy",
    };
    let mut v = Vec::new();
    for t in &view.tools {
        if let Some(why) = left_out_reason(t, mcp_url) {
            out.left_out.push(LeftOut {
                generation: g,
                tool: t.name.clone(),
                why,
            });
            continue;
        }
        let base = &t.name;
        v.push(accept_scenario(t, g));
        v.push(scenario(
            format!("{base}{suffix}-decline"),
            ScenarioKind::FormDecline,
            1,
            t,
            g,
        ));
        if g == Generation::Modern && t.issues_state() {
            v.push(scenario(
                format!("{base}-tamper"),
                ScenarioKind::Tamper,
                1,
                t,
                g,
            ));
            if t.single_use {
                v.push(scenario(
                    format!("{base}-replay"),
                    ScenarioKind::Replay,
                    1,
                    t,
                    g,
                ));
            } else {
                out.optional.push(scenario(
                    format!("{base}-replay"),
                    ScenarioKind::Replay,
                    1,
                    t,
                    g,
                ));
            }
        }
    }
    v
}

/// Settings of a generated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Run length.
    pub duration: Duration,
    /// Goose users.
    pub users: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Bearer token of the principal (the discovery's; every user's with
    /// [`Principals::Single`]).
    pub token: String,
    /// Who the virtual users are.
    pub principals: Principals,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            duration: Duration::from_secs(10),
            users: 4,
            timeout: plan::DEFAULT_TIMEOUT,
            token: "alice".into(),
            principals: Principals::PerUser,
        }
    }
}

/// The plan every generated one starts from: `mcp_url` under `opts`, the
/// closed model with `opts.users`, default limits and thresholds, no
/// scenarios yet.
pub fn base_plan(mcp_url: &str, opts: &Options) -> Plan {
    Plan {
        name: "discovered".into(),
        source: format!("<discovered from {mcp_url}>"),
        description: format!("Generated from discovery of {mcp_url}"),
        target: TargetSpec {
            url: Some(mcp_url.to_owned()),
            more_urls: Vec::new(),
            workers: 1,
            token: opts.token.clone(),
            other_token: "mallory".into(),
            principals: opts.principals.clone(),
            // The run's --cacert / --insecure apply (see `Overrides`).
            tls: Default::default(),
        },
        duration: opts.duration,
        warmup: Duration::ZERO,
        max_requests: plan::DEFAULT_MAX_REQUESTS,
        timeout: opts.timeout,
        shape: LoadShape::Closed {
            users: opts.users,
            hatch_rate: opts.users as f64,
        },
        max_in_flight: 1024,
        in_flight_lowered_from: None,
        scenarios: Vec::new(),
        thresholds: Vec::new(),
        capacity: None,
        seed: 1,
        interval: Duration::from_secs(1),
        stall: plan::DEFAULT_STALL,
        default_thresholds: true,
        segment: crate::load::spec::segment::Segment::WHOLE,
        soak: None,
    }
}

/// The plan discovery implies. `Err` when no tool can be loaded (with the
/// reasons, one per tool).
pub fn from_discovery(d: &Discovery, opts: &Options) -> Result<Generated, NothingToLoad> {
    let mut out = Generated {
        plan: base_plan(&d.mcp_url, opts),
        left_out: Vec::new(),
        optional: Vec::new(),
    };
    let mut scenarios = Vec::new();
    for view in [&d.modern, &d.legacy].into_iter().flatten() {
        scenarios.extend(scenarios_of(view, &d.mcp_url, &mut out));
    }
    if scenarios.is_empty() {
        return Err(NothingToLoad {
            url: d.mcp_url.clone(),
            left_out: out.left_out,
        });
    }
    out.plan.scenarios = scenarios;
    Ok(out)
}

fn toml_value(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_value(v)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(toml_value).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Null => "\"\"".into(),
        other => other.to_string(),
    }
}

fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        k.to_owned()
    } else {
        Value::from(k).to_string()
    }
}

fn scenario_toml(s: &ScenarioSpec) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "[scenarios.{}]", toml_key(&s.name));
    let _ = writeln!(o, "kind = \"{}\"", s.kind.as_str());
    if s.generation == Generation::Legacy {
        let _ = writeln!(o, "generation = \"{}\"", s.generation);
    }
    let _ = writeln!(o, "weight = {}", s.weight);
    let _ = writeln!(o, "tool = {}", Value::from(s.tool.as_str()));
    let _ = writeln!(
        o,
        "arguments = {}   # required properties of its inputSchema",
        toml_value(&Value::Object(s.arguments.clone()))
    );
    if !s.answers.is_empty() {
        let _ = writeln!(
            o,
            "answers = {}   # pinned form answers; other fields are generated",
            toml_value(&Value::Object(s.answers.clone()))
        );
    }
    if s.kind == ScenarioKind::Tamper {
        let _ = writeln!(o, "mutation = \"flip_char\"");
    }
    o
}

/// The plan as commented TOML that [`plan::parse_plan`] reads back.
pub fn to_toml(g: &Generated, d: &Discovery) -> String {
    let p = &g.plan;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Generated by `elicitkit plan` from discovery of {}.\n\
         # Edit freely: every key is documented in loadtests/README.md.\n\
         # Discovery saw:",
        d.mcp_url
    );
    for line in d.tool_lines() {
        let _ = writeln!(o, "#   {line}");
    }
    for l in &g.left_out {
        let _ = writeln!(o, "# Not loaded: {} {}: {}", l.generation, l.tool, l.why);
    }
    let _ = writeln!(
        o,
        "#\n# Default thresholds apply, as when `load --target` runs without this file:\n\
         # {}.\n# Add your own below, or set default_thresholds = false.\n",
        plan::DEFAULT_THRESHOLDS
    );
    let _ = writeln!(o, "name = {}", Value::from(p.name.as_str()));
    let _ = writeln!(o, "description = {}", Value::from(p.description.as_str()));
    let _ = writeln!(o, "duration = \"{}s\"", p.duration.as_secs().max(1));
    let _ = writeln!(
        o,
        "timeout = \"{}ms\"   # per request: short, so a stalled server shows",
        p.timeout.as_millis()
    );
    let _ = writeln!(
        o,
        "stall = \"{}s\"      # no answer for this long ends the run as stalled",
        p.stall.as_secs().max(1)
    );
    let _ = writeln!(
        o,
        "thresholds = [\n    # \"p99(e2e) < 500ms\",   # a latency objective: yours to set\n]\n"
    );
    let _ = writeln!(o, "[target]");
    let _ = writeln!(
        o,
        "url = {}",
        Value::from(p.target.url.as_deref().unwrap_or(""))
    );
    match &p.target.principals {
        Principals::Single => {
            let _ = writeln!(
                o,
                "token = {}   # every user runs as this principal\n",
                Value::from(p.target.token.as_str())
            );
        }
        Principals::Pool { count } => {
            let _ = writeln!(
                o,
                "principals = {count}   # users take ek-user-NNNN names\n"
            );
        }
        Principals::File { path, .. } => {
            let _ = writeln!(
                o,
                "principal_file = {}   # one token a line, taken round robin\n",
                Value::from(path.as_str())
            );
        }
        Principals::PerUser => {
            let _ = writeln!(
                o,
                "# Each user is its own principal (ek-user-0001, …). Or: principals = N,\n\
                 # principal_file = \"tokens.txt\", or token = \"alice\" for one principal.\n"
            );
        }
    }
    if let LoadShape::Closed { users, .. } = p.shape {
        let _ = writeln!(
            o,
            "[load]\nusers = {users}   # closed model; use rate = N for an open model\n"
        );
    }
    for s in &p.scenarios {
        o.push_str(&scenario_toml(s));
        o.push('\n');
    }
    for s in &g.optional {
        let _ = writeln!(
            o,
            "# {} is not marked single-use (annotations, description): a repeated completion\n\
             # may be legitimate, so its replay scenario is off. Uncomment if it must not repeat.",
            s.tool
        );
        for line in scenario_toml(s).lines() {
            let _ = writeln!(o, "# {line}");
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::{AuthSeen, FirstReply, RoundSeen};
    use crate::protocol::capabilities::ElicitModes;
    use serde_json::json;

    fn tool(name: &str, elicits: bool, state: bool, url: Option<&str>) -> ToolProfile {
        let schema = json!({"type":"object","properties":{"confirm":{"type":"boolean"},"n":{"type":"integer"}}});
        let result = json!({"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create",
            "params":{"message":"m","requestedSchema": schema}}}});
        let round = RoundSeen {
            result: result.clone(),
            raw: result.to_string(),
            modes: ElicitModes {
                form: url.is_none(),
                url: url.is_some(),
            },
            methods: vec!["elicitation/create".into()],
            state: state.then(|| "st".into()),
            answers: Map::new(),
            urls: url.map(str::to_owned).into_iter().collect(),
        };
        ToolProfile {
            name: name.into(),
            descriptor: json!({"name": name}),
            arguments: json!({"item": "elicitkit-item-0"})
                .as_object()
                .cloned()
                .unwrap(),
            other_arguments: None,
            single_use: false,
            read_only: false,
            first: if elicits {
                FirstReply::InputRequired {
                    result,
                    raw: String::new(),
                    modes: round.modes,
                    has_state: state,
                }
            } else {
                FirstReply::Complete { is_error: false }
            },
            rounds: if elicits { vec![round] } else { Vec::new() },
            state_round: state.then_some(0),
            off_origin: None,
            elicits_on_get: false,
        }
    }

    fn discovery(tools: Vec<ToolProfile>) -> Discovery {
        Discovery {
            mcp_url: "http://127.0.0.1:9/mcp".into(),
            modern: Some(View {
                generation: Generation::Modern,
                listed: tools.iter().map(|t| t.name.clone()).collect(),
                tools,
                server: None,
                no_tools: None,
            }),
            legacy: None,
            auth: AuthSeen::default(),
            exchanges: Vec::new(),
        }
    }

    #[test]
    fn scenarios_per_eliciting_tool_and_a_toml_that_parses_back() {
        let d = discovery(vec![
            tool("order", true, true, None),
            tool("ask", true, false, None),
            tool("connect", true, true, Some("https://elsewhere.example/p")),
            tool("list", false, false, None),
        ]);
        let g = from_discovery(&d, &Options::default()).unwrap();
        let names: Vec<&str> = g.plan.scenarios.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "order-accept",
                "order-decline",
                "order-tamper",
                "ask-accept",
                "ask-decline"
            ]
        );
        assert_eq!(
            g.optional.len(),
            1,
            "the replay of a tool not marked single-use is off"
        );
        assert_eq!(g.left_out.len(), 2);
        assert!(
            g.left_out[0].why.contains("another origin"),
            "{:?}",
            g.left_out
        );
        assert!(g.left_out[1].why.contains("does not elicit"));
        let accept = &g.plan.scenarios[0];
        assert_eq!(accept.answers["confirm"], true, "booleans are pinned");
        assert!(!accept.answers.contains_key("n"));
        let text = to_toml(&g, &d);
        let back = crate::load::spec::parse::parse_plan(&text, "gen.toml", "gen")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.scenarios.len(), g.plan.scenarios.len());
        let a = back
            .scenarios
            .iter()
            .find(|s| s.name == "order-accept")
            .unwrap();
        assert_eq!(a.arguments["item"], "elicitkit-item-0");
        assert_eq!(a.answers["confirm"], true);
        assert_eq!(back.target.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        // One default: the written plan is judged as the discovered one.
        let exprs = |p: &Plan| -> Vec<String> {
            let mut e: Vec<String> = p
                .all_thresholds()
                .into_iter()
                .map(|(t, _)| t.expr)
                .collect();
            e.sort();
            e
        };
        assert_eq!(exprs(&back), exprs(&g.plan));
        assert!(exprs(&back).contains(&"service_gaps < 1".to_owned()));
        assert!(text.contains(plan::DEFAULT_THRESHOLDS), "{text}");
        assert!(text.contains("# Not loaded: 2026-07-28 list"), "{text}");
        assert!(text.contains("# [scenarios.order-replay]"), "{text}");
        let mut single = tool("order", true, true, None);
        single.single_use = true;
        let g = from_discovery(&discovery(vec![single]), &Options::default()).unwrap();
        assert!(g.plan.scenarios.iter().any(|s| s.name == "order-replay"));
    }

    #[test]
    fn nothing_to_load_is_an_error_with_reasons() {
        let d = discovery(vec![tool("list", false, false, None)]);
        let e = from_discovery(&d, &Options::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("list") && e.contains("does not elicit"), "{e}");
    }
}
