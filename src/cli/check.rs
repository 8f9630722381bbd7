//! `elicitkit check`: run the conformance checks against a server and print
//! the table. Exit 0 when no MUST check failed, 1 when one did (or timed
//! out), 2 on usage errors or a target that is unreachable or not MCP (with
//! `--format json`, a document naming the error). A server without tools
//! is checked with every check that needs none.

use super::{exit, usage_error};
use crate::check::render::{Format, render};
use crate::check::{Settings, all_checks};
use clap::Parser;
use std::process::ExitCode;
use std::time::Duration;

/// Examples and exit codes under `check --help` (example lines under 60
/// columns, so that a narrow terminal wraps none).
const CHECK_HELP: &str = "Examples:
  # the reference server, then check it
  elicitkit serve &
  elicitkit check --target http://127.0.0.1:8080/mcp
  # one generation, checks whose id starts with a prefix
  elicitkit check --target URL --generation 2026-07-28 \\
      --only mrtr-replay
  # JUnit for CI, with a tool that must complete once
  elicitkit check --target URL --single-use place_order \\
      --format junit --output check.xml
  # your own two principals' tokens
  elicitkit check --target URL --principal \"$TOKEN_A\" \\
      --other-principal \"$TOKEN_B\"
  # two instances of one deployment
  elicitkit check --target http://127.0.0.1:9001/mcp \\
      --other-instance http://127.0.0.1:9002/mcp
  # a CI gate where SHOULD rules must hold too
  elicitkit check --target URL --fail-on warn
  # state expiry, where the states do not show it
  elicitkit check --target URL --only mrtr-state-expiry \\
      --state-lifetime 60s
  # every check, its level and its spec page
  elicitkit check --list
  # a server that speaks stdio; principals through its env
  elicitkit check --target stdio -- python server.py
  elicitkit check --target stdio --identity-env USER_TOKEN \\
      --principal alice --other-principal bob \\
      -- node server.mjs

Exit codes: 0 no MUST check failed (with --fail-on warn: no WARN either); 1 a MUST check \
failed or timed out (or, with --fail-on warn, a SHOULD check warned); 2 usage error (an --only \
prefix no check id starts with, too), or a target that is unreachable or does not answer as an \
MCP server, or an --other-instance that does not answer; 3 inconclusive: the run's settings \
kept checks from telling (the --deadline cut them short, a state still taken after a --wait-expiry \
that no known lifetime backs; their rows say so); 130 interrupted by Ctrl-C (the partial report is written, marked INTERRUPTED, and the \
checks without a verdict say so).";

/// `--timeout`'s default, and what a stdio target gets when none is given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const STDIO_TIMEOUT: Duration = Duration::from_secs(30);

/// Arguments of `elicitkit check`.
#[derive(Debug, Parser)]
#[command(after_help = CHECK_HELP)]
pub struct Args {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp, or `stdio` and the
    /// server's command after `--` (checks of HTTP behaviour are then
    /// reported N/A, and the stdio transport's rules are checked).
    #[arg(help_heading = "Target", long, required_unless_present = "list")]
    pub target: Option<String>,
    /// A server that speaks stdio.
    #[command(flatten)]
    pub stdio: super::target::StdioArgs,
    /// A second instance of the same deployment (an MCP endpoint URL): the
    /// mrtr-cross-instance check seals a state on --target, completes it
    /// here, and replays it on both (shared keys, shared single use).
    #[arg(help_heading = "Target", long, value_name = "URL")]
    pub other_instance: Option<String>,
    /// Generation, principals and tools.
    #[command(flatten)]
    pub aim: super::target::AimArgs,
    /// How an https target's certificate is checked.
    #[command(flatten)]
    pub tls: super::target::TlsArgs,
    /// A read-only tool that reports the server's state, read before and
    /// after a decline to see that nothing happened (default: the first
    /// tool annotated readOnlyHint that does not elicit).
    #[arg(help_heading = "Target", long, value_name = "NAME")]
    pub state_tool: Option<String>,
    /// Run only checks whose id starts with this prefix (repeatable); a
    /// prefix no check id starts with is a usage error.
    #[arg(help_heading = "Checks", long = "only", value_name = "PREFIX")]
    pub only: Vec<String>,
    /// The lowest result that fails the run (exit 1): `fail` (a MUST check
    /// failed or timed out) or `warn` (a SHOULD check warned, too).
    #[arg(help_heading = "Checks", long, value_name = "LEVEL", default_value = "fail", value_parser = ["fail", "warn"])]
    pub fail_on: String,
    /// Output format: text, json, junit or md.
    #[arg(help_heading = "Output", long, default_value = "text")]
    pub format: Format,
    /// Write the report to this file instead of stdout.
    #[arg(help_heading = "Output", short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Per-check timeout (a hung server fails the check with `timeout`);
    /// default 10s, or 30s with --target stdio (each 2025-11-25 session
    /// there starts a process). Example: --timeout 20s
    #[arg(help_heading = "Checks", long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// Deadline for the whole run.
    #[arg(help_heading = "Checks", long, default_value = "180s", value_parser = humantime::parse_duration)]
    pub deadline: Duration,
    /// The expiry check's wait before replaying a state (default: past the
    /// expiry the state carries, or past --state-lifetime plus 6 s of clock
    /// skew). The check's timeout grows accordingly.
    #[arg(help_heading = "Checks", long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub wait_expiry: Option<Duration>,
    /// The state lifetime the server documents, for a server whose states
    /// do not show their expiry: the expiry check replays a state past it
    /// and warns if it is still taken (without it, a state still taken
    /// after --wait-expiry is INCONCLUSIVE: a longer lifetime cannot be told
    /// from none). Example: --state-lifetime 10m --deadline 15m
    #[arg(help_heading = "Checks", long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub state_lifetime: Option<Duration>,
    /// Checks run at the same time.
    #[arg(help_heading = "Checks", long, default_value_t = 4)]
    pub concurrency: usize,
    /// Show evidence for passing checks too.
    #[arg(help_heading = "Output", long, short)]
    pub verbose: bool,
    /// List the checks and exit.
    #[arg(help_heading = "Checks", long)]
    pub list: bool,
}

/// The `--list` table.
pub fn list_table() -> String {
    let mut out = format!(
        "{:<44} {:<10} {:<6} {:<26} {:<36} {:<46} {}\n",
        "ID", "GEN", "SEV", "RULE", "SOURCE", "CONFORMANCE SCENARIO", "CHECKS (spec page)"
    );
    for c in all_checks() {
        out.push_str(&format!(
            "{:<44} {:<10} {:<6} {:<26} {:<36} {:<46} {} ({})\n",
            c.id,
            c.generation.to_string(),
            c.severity.to_string(),
            c.rule,
            c.source,
            c.scenario.unwrap_or("-"),
            c.title,
            crate::check::links::spec_link(c.generation, c.rule)
        ));
    }
    out
}

/// The official conformance scenarios `check` covers, each with the
/// checks that judge its rules (from their `check!` rows), as the Markdown
/// table docs/check.md holds.
pub fn scenario_table() -> String {
    let mut by: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for c in all_checks() {
        if let Some(s) = c.scenario {
            by.entry(s).or_default().push(c.id);
        }
    }
    let mut out = String::from("| conformance scenario | elicitkit checks |\n|---|---|\n");
    for (scenario, ids) in by {
        let ids: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
        out.push_str(&format!("| `{scenario}` | {} |\n", ids.join(", ")));
    }
    out
}

/// Builds the settings from the arguments.
pub fn settings(args: &Args, target: &str) -> Settings {
    let mut s = Settings::new(target);
    args.aim.apply(&mut s.target);
    s.principals_given = args.aim.principal.is_some() && args.aim.other_principal.is_some();
    s.state_tool = args.state_tool.clone();
    s.target.timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT);
    s.deadline = args.deadline;
    s.wait_expiry = args.wait_expiry;
    s.state_lifetime = args.state_lifetime;
    s.concurrency = args.concurrency.max(1);
    s.other_instance = args.other_instance.clone();
    s.progress = true;
    s
}

/// Writes `text` to `--output`, or to stdout.
fn write_out(args: &Args, text: &str) -> Result<(), String> {
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// Runs `elicitkit check`.
pub fn run(args: Args) -> ExitCode {
    if args.list {
        print!("{}", list_table());
        return exit::ok();
    }
    let Some(target) = args.target.clone() else {
        return usage_error("--target is required");
    };
    let generation = match args.aim.generation() {
        Ok(g) => g,
        Err(e) => return usage_error(e),
    };
    if let Err(e) = args.tls.install() {
        return usage_error(e);
    }
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Err(e) = known_prefixes(&args.only) {
        return usage_error(e);
    }
    let stdio = match args.stdio.spec(&target) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let mut settings = settings(&args, &target);
    if stdio.is_some() && args.timeout.is_none() {
        settings.target.timeout = STDIO_TIMEOUT;
    }
    if settings.deadline < settings.target.timeout {
        return usage_error(format!(
            "--deadline {:?} is shorter than one check's --timeout {:?}: no check could use its \
             timeout, and the report would blame the server for the setting; give --deadline at \
             least the timeout (the default is 120s)",
            settings.deadline, settings.target.timeout
        ));
    }
    if let (Some(w), Some(l)) = (args.wait_expiry, args.state_lifetime)
        && w < l
    {
        return usage_error(format!(
            "--wait-expiry {w:?} is shorter than --state-lifetime {l:?}: a state that young has \
             not expired yet; leave --wait-expiry out (the check waits the lifetime plus 6s of \
             clock skew) or give it at least the lifetime"
        ));
    }
    let shown = stdio.as_ref().map_or_else(
        || target.clone(),
        |s| format!("stdio: {}", s.command.display()),
    );
    eprintln!(
        "elicitkit check: calls every tool of {shown} for real (accepting, declining, \
         replaying); run it against a test instance, not production."
    );
    crate::stdio::child::caller_exits_on_interrupt();
    let outcome = runtime.block_on(async {
        // Ctrl-C ends the checks still running and writes the partial
        // report; a second one exits at once.
        tokio::spawn(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "elicitkit check: interrupted; writing the partial report (Ctrl-C again \
                     to quit now)"
                );
                crate::check::interrupt::raise();
                if tokio::signal::ctrl_c().await.is_ok() {
                    crate::stdio::child::kill_all();
                    std::process::exit(130);
                }
            }
        });
        let resolved = super::target::resolve(&target, stdio, crate::stdio::Reuse::Never).await?;
        settings.target.mcp_url.clone_from(&resolved.url);
        settings.stdio = resolved.bridge.as_ref().map(crate::stdio::Bridge::info);
        // Over stdio the error names the command and the process's exit.
        let report = crate::check::run(settings, generation, &args.only)
            .await
            .map_err(|e| resolved.explain(e.to_string(), &shown));
        if let Some(b) = resolved.bridge {
            b.stop().await;
        }
        report.map(|mut r| {
            r.target.clone_from(&shown);
            r
        })
    });
    let report = match outcome {
        Ok(r) => r,
        Err(e) => {
            let interrupted = crate::check::interrupt::raised();
            let e = if interrupted {
                format!("interrupted (Ctrl-C) before the checks began: {e}")
            } else {
                e.to_string()
            };
            // A JSON consumer still gets a document saying why there is no report.
            if args.format == Format::Json {
                let doc = serde_json::json!({
                    "target": target, "error": e, "interrupted": interrupted,
                });
                let _ = write_out(&args, &format!("{doc:#}\n"));
            }
            let code = usage_error(e);
            return if interrupted {
                exit::interrupted()
            } else {
                code
            };
        }
    };
    let mut report = report;
    if args.fail_on == "warn" {
        report.fail_on = crate::check::FailOn::Warn;
    }
    let text = render(&report, args.format, args.verbose);
    if let Err(e) = write_out(&args, &text) {
        return usage_error(e);
    }
    if report.interrupted {
        exit::interrupted()
    } else if report.fails_gate() {
        exit::failed()
    } else if report.inconclusive() {
        exit::inconclusive()
    } else {
        exit::ok()
    }
}

/// Checks that every `--only` prefix selects a check: a typo would run
/// nothing and pass. `Err` names the prefix and the ids it may have meant.
pub fn known_prefixes(only: &[String]) -> Result<(), String> {
    let ids: Vec<&str> = all_checks().iter().map(|c| c.id).collect();
    for p in only {
        if ids.iter().any(|id| id.starts_with(p.as_str())) {
            continue;
        }
        let family = p.split('-').next().unwrap_or_default();
        let near: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| {
                p.split('-')
                    .filter(|w| w.len() > 2 && *w != family)
                    .any(|w| id.contains(w))
            })
            .take(8)
            .collect();
        return Err(format!(
            "--only {p:?}: no check id starts with it ({}); `elicitkit check --list` lists them",
            if near.is_empty() {
                "ids start with mrtr- or legacy-".to_owned()
            } else {
                format!("did you mean {}?", near.join(", "))
            }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_docs_hold_the_scenario_table_of_the_checks() {
        let docs = include_str!("../../docs/check.md");
        let table = super::scenario_table();
        assert!(
            docs.contains(&table),
            "docs/check.md lacks the current scenario table:\n{table}"
        );
    }
}
