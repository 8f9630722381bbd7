//! `elicitkit check`: conformance and security probes against an MCP server
//! that elicits, in the style of h2spec: every check names the spec rule it
//! checks (spec-digest §6) and its public spec page ([`links`]), its
//! severity (MUST → FAIL, SHOULD → WARN, INFO), and every finding carries
//! what a correct server does (Expected), what this one did (Actual) and
//! the exchanges behind the verdict.
//!
//! - [`registry`]: [`Check`] descriptors and the `check!` macro that declares
//!   them; [`all_checks`] below lists every family's in report order.
//! - [`model`]: [`Verdict`], [`CheckResult`] rows.
//! - [`probe`]: the [`Target`] discovery found and the [`Probe`] a check
//!   sends requests with (evidence is recorded as it goes).
//! - [`subject`]: the tools that issue a `requestState` in any round,
//!   walked to that round or to their end (discovery's walk).
//! - Families send with [`crate::client::raw`] (hand-built requests) and keep
//!   secrets out of evidence with [`crate::client::mask`]; [`judge`]: shared verdict logic ("rejected
//!   for the probed reason", "the same outcome as a valid answer");
//!   [`state_decode`]: reading an opaque state (re-encodings, leaks);
//!   [`control`]: the valid request of the same kind a PASS that rests on a
//!   refusal needs (without it the row is "could not tell").
//! - Discovery (generations, authentication, tools, their rounds) is
//!   [`crate::discover`], shared with `load`.
//! - [`runner`]: bounded concurrent execution with per-check timeouts;
//!   checks that read server state or time replies run alone.
//! - [`render`]: text, JSON, JUnit XML and Markdown output.
//! - One file per family of checks: [`meta_headers`], [`origin`],
//!   [`cache_hints`], [`capabilities`], [`result_type`],
//!   [`input_required_shape`], [`schema_findings`], [`flows`],
//!   [`state_tamper`], [`replay`], [`cross_instance`], [`input_responses`], [`invalid_content`],
//!   [`decline_cancel`],
//!   [`no_action`], [`url_flow`], [`secret_echo`], [`retired`], [`sse`],
//!   [`robustness`], [`tail_stall`], [`isolation`] (concurrent clients get
//!   their own replies: the load generator's ownership oracle), and the
//!   2025-11-25 families
//!   [`legacy_session`], [`legacy_elicitation`], [`legacy_get_stream`],
//!   [`legacy_principal`]; [`stdio`] (the stdio transport's rules, judged
//!   over the whole run), [`transport`] (which checks mean nothing on a
//!   stdio target); a finding names a reply's status through
//!   [`crate::client::ReplyStatus`] (never the stdio bridge's as the
//!   server's).

pub mod bad_input;
pub mod cache_hints;
pub mod capabilities;
pub mod control;
pub mod cross_instance;
pub mod decline_cancel;
pub mod errors;
pub mod flows;
pub mod identity;
pub mod input_required_shape;
pub mod input_responses;
pub mod interrupt;
pub mod invalid_content;
pub mod isolation;
pub mod judge;
pub mod legacy_elicitation;
pub mod legacy_get_stream;
pub mod legacy_principal;
pub mod legacy_session;
pub mod links;
pub mod meta_headers;
pub mod model;
pub mod no_action;
pub mod non_tool;
pub mod offered;
pub mod origin;
pub mod param_headers;
pub mod probe;
pub mod registry;
pub mod render;
pub mod replay;
pub mod result_type;
pub mod retired;
pub mod robustness;
pub mod runner;
pub mod schema_findings;
pub mod secret_echo;
pub mod server_info;
pub mod sse;
pub mod state_decode;
pub mod state_tamper;
pub mod stdio;
pub mod subject;
pub mod tail_stall;
pub mod transport;
pub mod url_flow;

pub use crate::discover::DiscoverError as CheckError;
pub use model::{CheckResult, Exchange, FailOn, Status, Tally, Verdict};
pub use probe::{Probe, Settings, Target};
pub use registry::{Check, Needs};

use crate::protocol::Generation;

/// Every check elicitkit knows, both generations, in report order.
pub fn all_checks() -> Vec<Check> {
    let mut v = Vec::new();
    v.extend(meta_headers::checks());
    v.extend(errors::checks());
    v.extend(bad_input::checks());
    v.extend(param_headers::checks());
    v.extend(server_info::checks());
    v.extend(origin::checks());
    v.extend(cache_hints::checks());
    v.extend(result_type::checks());
    v.extend(input_required_shape::checks());
    v.extend(capabilities::checks());
    v.extend(schema_findings::checks());
    v.extend(flows::checks());
    v.extend(non_tool::checks());
    v.extend(state_tamper::checks());
    v.extend(replay::checks());
    v.extend(cross_instance::checks());
    v.extend(input_responses::checks());
    v.extend(invalid_content::checks());
    v.extend(decline_cancel::checks());
    v.extend(no_action::checks());
    v.extend(url_flow::checks());
    v.extend(secret_echo::checks());
    v.extend(retired::checks());
    v.extend(sse::checks());
    v.extend(robustness::checks());
    v.extend(tail_stall::checks());
    v.extend(legacy_session::checks());
    v.extend(legacy_elicitation::checks());
    // The 2025-11-25 twins sit in the topic files beside their MRTR checks;
    // in the report they keep their place among the legacy elicitation rules.
    place_after(
        &mut v,
        "legacy-no-elicit-before-initialized",
        capabilities::legacy_checks(),
    );
    place_after(
        &mut v,
        "legacy-request-shape",
        schema_findings::legacy_checks(),
    );
    place_after(&mut v, "legacy-answer-202", flows::legacy_checks());
    place_after(&mut v, "legacy-happy-path", decline_cancel::legacy_checks());
    place_after(
        &mut v,
        "legacy-missing-session-400",
        errors::legacy_checks(),
    );
    place_after(
        &mut v,
        "legacy-unknown-tool-error",
        bad_input::legacy_checks(),
    );
    v.extend(legacy_get_stream::checks());
    v.extend(legacy_principal::checks());
    // The isolation burst runs last in each generation's part of the
    // report (it loads the server a little).
    v.extend(isolation::checks());
    // The stdio transport's rules read what the whole run did: last.
    v.extend(stdio::checks());
    v.extend(stdio::legacy_checks());
    v
}

/// Inserts `checks` right after the check `after` (at the end when there is
/// none).
fn place_after(v: &mut Vec<Check>, after: &str, checks: Vec<Check>) {
    let at = v
        .iter()
        .position(|c| c.id == after)
        .map_or(v.len(), |i| i + 1);
    v.splice(at..at, checks);
}

/// The outcome of a whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The MCP endpoint checked.
    pub target: String,
    /// The generations checked (every one the server speaks, unless narrowed).
    pub generations: Vec<Generation>,
    /// Tools checked, per generation, with what their first call did.
    pub tools: Vec<ToolSummary>,
    /// What discovery found about credentials.
    pub auth: String,
    /// One row per check (each row names its generation).
    pub results: Vec<CheckResult>,
    /// Counts per status.
    pub tally: Tally,
    /// Stopped by Ctrl-C: the rows without a verdict say so.
    pub interrupted: bool,
    /// What fails the run (`--fail-on`), for the verdict and the JUnit
    /// form of WARN rows.
    pub fail_on: FailOn,
}

/// A tool as discovery saw it, for the report header.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ToolSummary {
    /// The generation it was discovered on.
    pub generation: Generation,
    /// Name.
    pub name: String,
    /// What its calls did (`elicits (form, requestState from round 1)`, ...).
    pub elicits: String,
    /// Whether it was treated as single-use.
    pub single_use: bool,
}

impl Report {
    /// True when a MUST check failed or any check timed out (exit 1).
    pub fn failed(&self) -> bool {
        self.results.iter().any(CheckResult::is_failure)
    }

    /// True when a row fails the run at [`Report::fail_on`] (exit 1).
    pub fn fails_gate(&self) -> bool {
        self.failed() || (self.fail_on == FailOn::Warn && self.tally.warn > 0)
    }

    /// True when a check could not tell (the run's settings, a stdio
    /// process gone) and nothing failed the gate: exit 3, never 0 with a
    /// check not run.
    pub fn inconclusive(&self) -> bool {
        !self.fails_gate() && self.tally.inconclusive > 0
    }

    /// The last line of the terminal report: the run's verdict, what made
    /// it, and the exit status it gives.
    pub fn verdict_line(&self) -> String {
        let t = self.tally;
        // `n` of `what` (a noun), then `did`: "2 MUST checks failed".
        let counted = |n: usize, what: &str, did: &str| match n {
            0 => None,
            1 => Some(format!("1 {what} {did}")),
            n => Some(format!("{n} {what}s {did}")),
        };
        let mut why: Vec<String> = [
            counted(t.fail, "MUST check", "failed"),
            counted(t.timeout, "check", "timed out"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let warned = counted(t.warn, "SHOULD check", "warned");
        if self.interrupted {
            return "VERDICT: INTERRUPTED (Ctrl-C): the report is partial (exit 130)".into();
        }
        if self.fail_on == FailOn::Warn {
            why.extend(warned.clone());
        }
        if !why.is_empty() {
            return format!("VERDICT: FAIL: {} (exit 1)", why.join(", "));
        }
        if let Some(cut) = counted(t.inconclusive, "check", "could not tell") {
            return format!(
                "VERDICT: INCONCLUSIVE: {cut} (--deadline, --wait-expiry, a \
                 stdio process gone: see their rows); the others found no failure (exit 3)"
            );
        }
        match warned {
            Some(w) => format!(
                "VERDICT: PASS with warnings: no MUST check failed; {w} (exit 0; --fail-on warn \
                 fails on them)"
            ),
            None => "VERDICT: PASS: no MUST check failed, no SHOULD check warned (exit 0)".into(),
        }
    }

    /// The row of a check, by id (the first generation that has it).
    pub fn get(&self, id: &str) -> Option<&CheckResult> {
        self.results.iter().find(|r| r.id == id)
    }
}

fn summarize(g: Generation, t: &probe::ToolProfile) -> ToolSummary {
    ToolSummary {
        generation: g,
        name: t.name.clone(),
        elicits: t.describe_on(g),
        single_use: t.single_use,
    }
}

/// Tools whose first rounds ask for an input the client never declared
/// (`sampling/createMessage`, `roots/list`): one finding, reported by
/// `mrtr-cap-undeclared-input`; the checks that would only repeat it skip
/// those tools.
fn root_causes(target: &Target) -> Vec<probe::RootCause> {
    if target.generation != Generation::Modern {
        return Vec::new();
    }
    target
        .tools
        .iter()
        .filter_map(|t| {
            let others = t.other_inputs();
            (!others.is_empty()).then(|| probe::RootCause {
                tool: t.name.clone(),
                check: capabilities::UNDECLARED_INPUT,
                what: format!(
                    "asks a client that declared only elicitation for {}",
                    others.join(" and ")
                ),
            })
        })
        .collect()
}

/// Discovers the target and runs every applicable check (all of
/// [`all_checks`], or those whose id starts with one of `only`) on every
/// generation it speaks (or the one asked for), in one table.
pub async fn run(
    settings: Settings,
    generation: Option<Generation>,
    only: &[String],
) -> Result<Report, CheckError> {
    let found = crate::discover::discover(&settings.discovery(generation)).await?;
    let http = crate::discover::http_client()?;
    let (tail, checks): (Vec<Check>, Vec<Check>) = all_checks()
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.id.starts_with(o.as_str())))
        .partition(|c| c.needs.whole_run);
    if checks.iter().any(|c| c.id == cross_instance::ID)
        && found.generations().contains(&Generation::Modern)
    {
        cross_instance::reachable(&settings, &http).await?;
    }
    let deadline = std::time::Instant::now() + settings.deadline;
    let mut results = Vec::new();
    let mut tools = Vec::new();
    let mut targets = Vec::new();
    let t = &settings.target;
    let identity = crate::discover::identity::evidence(
        &found,
        http.clone(),
        &t.principal,
        &t.other_principal,
        t.timeout,
        None,
    )
    .await;
    for g in found.generations() {
        let Some(view) = found.view(g) else { continue };
        let mut target = Target::from_view(settings.clone(), http.clone(), view, found.auth);
        target.identity.clone_from(&identity);
        target.generations = found.generations();
        target.root_causes = root_causes(&target);
        tools.extend(target.tools.iter().map(|t| summarize(g, t)));
        let target = std::sync::Arc::new(target);
        results.extend(runner::run_checks_until(target.clone(), &checks, deadline).await);
        targets.push(target);
    }
    // The stdio rules judge what the processes did over the whole run,
    // after everything else: each generation's rules in its part of the
    // report, over its own processes ([`stdio`]).
    for target in targets.into_iter().filter(|t| t.settings.stdio.is_some()) {
        results.extend(runner::run_checks_until(target, &tail, deadline).await);
    }
    let mut auth = match (found.auth.anonymous_refused, found.auth.checks_tokens) {
        (true, _) => "refuses anonymous requests",
        (false, true) => "serves anonymous requests, refuses unknown tokens",
        (false, false) => "serves anonymous requests and any token alike",
    }
    .to_owned();
    if settings.principals_given {
        auth.push_str("; users: as named by --principal and --other-principal");
    } else if identity.is_empty() {
        auth.push_str("; users: no sign the server knows them, so cross-principal probes skip");
    } else {
        auth.push_str(&format!("; users: known, because {}", identity.join("; ")));
    }
    Ok(Report {
        target: settings.target.mcp_url.clone(),
        generations: found.generations(),
        tools,
        auth,
        tally: Tally::of(&results),
        results,
        interrupted: interrupt::raised(),
        fail_on: FailOn::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over stdio no status is the server's: a check that runs there (it
    /// needs no part of HTTP) words its rule without one, in its title or
    /// in its `; stdio` title. A status is `HTTP`, `5xx`, or a common status
    /// code as a word (`-32601`, a JSON-RPC code, is not one).
    #[test]
    fn no_check_that_runs_over_stdio_names_an_http_status() {
        const STATUSES: [&str; 14] = [
            "200", "202", "400", "401", "403", "404", "405", "406", "409", "413", "415", "500",
            "502", "503",
        ];
        let names_status = |t: &str| {
            t.contains("HTTP")
                || t.contains("5xx")
                || t.split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                    .any(|w| STATUSES.contains(&w))
        };
        let named: Vec<_> = all_checks()
            .into_iter()
            .filter(|c| c.needs.http.is_none())
            .map(|c| c.worded_for(true))
            .filter(|c| names_status(c.title))
            .map(|c| format!("{}: {}", c.id, c.title))
            .collect();
        assert!(named.is_empty(), "{named:#?}");
        // The test can tell: an HTTP title that runs over stdio is caught.
        assert!(names_status("gets HTTP 400 and -32602"));
        assert!(names_status("never 404/-32601"));
        assert!(!names_status("gets -32602"));
    }

    /// Checks whose id does not carry a word of their file's name: each is
    /// listed with its file, so finding it is one look-up and moving it
    /// fails this test until the list says where it went.
    #[rustfmt::skip]
    const ELSEWHERE: &[(&str, &str)] = &[
        ("mrtr-version-unsupported", "meta_headers"),
        ("mrtr-removed-methods", "meta_headers"),
        ("mrtr-get-delete-405", "meta_headers"),
        ("mrtr-no-session-id", "meta_headers"),
        ("mrtr-input-required-scope", "result_type"),
        ("mrtr-happy-path", "flows"),
        ("legacy-happy-path", "flows"),
        ("mrtr-multi-round-new-state", "flows"),
        ("mrtr-cross-principal", "replay"),
        ("mrtr-state-expiry", "replay"),
        ("mrtr-request-state-shape", "input_responses"),
        ("mrtr-oversized-state", "robustness"),
        ("mrtr-many-input-responses", "robustness"),
        ("mrtr-cancel-by-disconnect", "robustness"),
        ("mrtr-retry-same-id", "robustness"),
        ("legacy-handshake", "legacy_session"),
        ("legacy-bad-version-400", "legacy_session"),
        ("legacy-request-shape", "legacy_elicitation"),
        ("legacy-answer-202", "legacy_elicitation"),
        ("legacy-error-reply", "legacy_elicitation"),
        ("legacy-invalid-answers", "legacy_elicitation"),
        ("legacy-stream-rules", "legacy_elicitation"),
        ("legacy-complete-notification", "legacy_elicitation"),
        ("legacy-url-required-error", "legacy_elicitation"),
        ("mrtr-one-message-per-body", "bad_input"),
        ("mrtr-tool-argument-types", "bad_input"),
        ("legacy-one-message-per-body", "bad_input"),
        ("legacy-tool-argument-types", "bad_input"),
    ];

    /// The file stem of a `check!` source path.
    fn stem(source: &str) -> &str {
        let name = source.rsplit(['/', '\\']).next().unwrap_or(source);
        name.strip_suffix(".rs").unwrap_or(name)
    }

    #[test]
    fn every_id_is_found_by_its_file_name_or_listed() {
        let mut wrong = Vec::new();
        for c in all_checks() {
            assert!(c.source.starts_with("src/check/"), "{}: {}", c.id, c.source);
            let file = stem(c.source);
            let words = c.id.split('-').skip(1).collect::<Vec<_>>();
            let named = file.split('_').filter(|w| *w != "legacy").any(|w| {
                words
                    .iter()
                    .any(|iw| iw.starts_with(w) || w.starts_with(iw))
            });
            let listed = ELSEWHERE.iter().find(|(id, _)| *id == c.id);
            match (named, listed) {
                (true, None) => {}
                (false, Some((_, f))) if *f == file => {}
                (true, Some(_)) => wrong.push(format!("{} is named by {file}.rs: unlist it", c.id)),
                _ => wrong.push(format!("(\"{}\", \"{file}\"),", c.id)),
            }
        }
        assert!(
            wrong.is_empty(),
            "ids and files disagree:\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn ids_are_unique_and_every_check_names_a_rule() {
        let mut seen = std::collections::HashSet::new();
        for c in all_checks() {
            assert!(seen.insert(c.id), "duplicate id {}", c.id);
            assert!(c.rule.contains('§'), "{} has no spec reference", c.id);
            assert!(!c.title.is_empty());
            let prefix_ok = match c.generation {
                Generation::Modern => c.id.starts_with("mrtr-"),
                Generation::Legacy => c.id.starts_with("legacy-"),
            };
            assert!(
                prefix_ok,
                "{} has the wrong prefix for its generation",
                c.id
            );
            let link = links::spec_link(c.generation, c.rule);
            assert!(
                link.starts_with(&format!("{}/{}/", links::SPEC_BASE, c.generation.version())),
                "{}: {link}",
                c.id
            );
        }
    }

    #[test]
    fn the_plain_request_is_one_the_server_offers() {
        let settings = Settings::new("http://127.0.0.1:9/mcp");
        let mut t = Target::new(settings, reqwest::Client::new(), Generation::Modern);
        assert_eq!(t.plain_method(), "tools/list");
        t.no_tools = Some("the server offers no tools".into());
        assert_eq!(t.plain_method(), "server/discover");
        t.discover = Some(serde_json::json!({"capabilities":{"resources":{}}}));
        assert_eq!(t.plain_method(), "resources/list");
        t.generation = Generation::Legacy;
        t.discover = Some(serde_json::json!({"capabilities":{}}));
        assert_eq!(t.plain_method(), "ping");
    }

    #[test]
    fn flow_pages_on_another_origin_are_recognised() {
        let settings = Settings::new("http://127.0.0.1:9/mcp");
        let http = reqwest::Client::new();
        let t = Target::new(settings, http, Generation::Modern);
        let mut tool = crate::discover::ToolProfile {
            name: "connect".into(),
            descriptor: serde_json::json!({"name":"connect"}),
            arguments: Default::default(),
            other_arguments: None,
            single_use: false,
            read_only: false,
            first: probe::FirstReply::Other("-".into()),
            rounds: vec![crate::discover::RoundSeen {
                result: serde_json::Value::Null,
                raw: String::new(),
                modes: Default::default(),
                methods: Vec::new(),
                state: None,
                answers: Default::default(),
                urls: vec!["/connect/1".into()],
            }],
            state_round: None,
            off_origin: None,
            elicits_on_get: false,
        };
        assert_eq!(
            t.off_origin(&tool),
            None,
            "a relative page is on the origin"
        );
        tool.rounds[0].urls = vec!["https://auth.example.com/connect/1".into()];
        assert_eq!(
            t.off_origin(&tool).as_deref(),
            Some("https://auth.example.com")
        );
    }
}
