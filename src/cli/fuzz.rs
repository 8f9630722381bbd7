//! `elicitkit fuzz --target URL`: the black-box fuzzer
//! ([`crate::fuzz::blackbox`]) against any MCP server over HTTP, both
//! generations. Findings go to `<out>/<run-id>/fuzz/<finding>/repro.sh`,
//! the summary to `.../fuzz/summary.{json,md}` and the terminal.
//!
//! Exit codes ([`EXIT_CODES`]), as `check` and `load`: 0 no finding (or
//! warnings only); 1 a finding; 2 usage errors or a target that does not
//! answer as an MCP server; 130 / 143 stopped by Ctrl-C / SIGTERM, with
//! the summary and every finding's `repro.sh` written.

use super::{exit, usage_error};
use crate::fuzz::blackbox::{self, Settings};
use clap::Args as ClapArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The exit codes, for `--help`.
pub const EXIT_CODES: &str = "Exit codes: 0 no finding (warnings, such as a replay of a tool \
not known to be single-use, are listed but do not fail); 1 at least one finding (each has a \
repro.sh); 2 usage error, or a target that does not answer as an MCP server (nothing fuzzed); \
130 / 143 stopped by Ctrl-C / SIGTERM (summary.md, summary.json and every finding's repro.sh \
are written first; a second signal exits at once).";

/// `--help` examples.
pub const FUZZ_EXAMPLES: &str = "Examples:
  # a deliberately broken target, then 60 s of fuzzing
  elicitkit serve --flaw accept-tampered-state &
  elicitkit fuzz --target http://127.0.0.1:8080/mcp
  # longer, another seed, one tool
  elicitkit fuzz --target URL -d 10m --seed 42 --tool deploy
  # one generation; a tool that must complete once
  elicitkit fuzz --target URL --generation 2026-07-28 \\
      --single-use place_order
  # a tool documented to act on its state: a tampered state
  # it completes is a finding without a no-state control
  elicitkit fuzz --target URL --trusts-state book_trip
  # replay a finding: exit 1 reproduced, 0 not, 2 unknown
  URL=http://127.0.0.1:8080/mcp \\
      reports/<run>/fuzz/001-*/repro.sh
  # a stdio server (its exit is a finding; each repro.sh
  # starts it again behind `elicitkit bridge`)
  elicitkit fuzz --target stdio -- python server.py";

/// Arguments of `elicitkit fuzz`.
#[derive(Debug, ClapArgs)]
#[command(after_help = format!("{FUZZ_EXAMPLES}\n\n{EXIT_CODES}"))]
pub struct Args {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp, or `stdio` and the
    /// server's command after `--`. It is called for real with mutated
    /// traffic: use a test instance.
    #[arg(
        help_heading = "Target",
        long,
        value_name = "URL",
        required_unless_present = "judge"
    )]
    pub target: Option<String>,
    /// A server that speaks stdio (its exit is a finding, with its status
    /// and stderr tail; each repro.sh starts it again behind
    /// `elicitkit bridge`).
    #[command(flatten)]
    pub stdio: super::target::StdioArgs,
    /// How long to fuzz, minimising included (discovery runs before the clock starts).
    #[arg(help_heading = "Campaign", short, long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Seed of the cases: the same seed sends the same cases again.
    #[arg(help_heading = "Campaign", long, default_value_t = 1)]
    pub seed: u64,
    /// Most HTTP requests of the run.
    #[arg(help_heading = "Campaign", long, default_value_t = 100_000)]
    pub max_requests: u64,
    /// Stop once N findings are listed, e.g. 1 when the first is enough to
    /// fail a build (default: run the whole --duration).
    #[arg(help_heading = "Campaign", long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_findings: Option<u64>,
    /// Per-request timeout; a reply later than this is a `hang` finding.
    #[arg(help_heading = "Campaign", long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Generation, principals and tools.
    #[command(flatten)]
    pub aim: super::target::AimArgs,
    /// This tool acts on what its requestState holds, as the server's
    /// documentation says (repeatable): a changed state it completes is a
    /// finding on that word, even where the same answers without a state
    /// complete alike (otherwise a note: nothing shows the state bears on
    /// the result). A changed state completing like a decline stays a note.
    #[arg(help_heading = "Target", long = "trusts-state", value_name = "NAME")]
    pub trusts_state: Vec<String>,
    /// How an https target's certificate is checked.
    #[command(flatten)]
    pub tls: super::target::TlsArgs,
    /// Folder for report folders.
    #[arg(
        help_heading = "Output",
        short,
        long,
        value_name = "DIR",
        default_value = "reports"
    )]
    pub out: PathBuf,
    /// Name of the report folder (default: <UTC time>-fuzz).
    #[arg(help_heading = "Output", long, value_name = "ID")]
    pub run_id: Option<String>,
    /// No progress line.
    #[arg(help_heading = "Output", long, short)]
    pub quiet: bool,
    /// Judge the replies a finding's repro.sh wrote, as the fuzzer judged
    /// the run's (each repro.sh ends with this): DIR is the finding's
    /// folder. Exit 1 the symptom reproduced, 0 it did not, 2 it could not
    /// be told.
    #[arg(
        help_heading = "Judging a repro.sh",
        long,
        value_name = "DIR",
        conflicts_with = "target"
    )]
    pub judge: Option<PathBuf>,
    /// With --judge: the folder of the replies (repro.sh's $OUT; default
    /// DIR/rerun, the fuzzer's own re-run).
    #[arg(
        help_heading = "Judging a repro.sh",
        long,
        value_name = "OUT",
        requires = "judge"
    )]
    pub replies: Option<PathBuf>,
}

/// `elicitkit fuzz --judge DIR`: repro.sh's verdict on its own replies.
fn judge(dir: &std::path::Path, replies: Option<&std::path::Path>) -> ExitCode {
    use crate::fuzz::blackbox::summary::Reproduced;
    let v = crate::fuzz::blackbox::verdict_file::judge(dir, replies);
    println!("reproduced: {} ({})", v.reproduced, v.detail);
    match v.reproduced {
        Reproduced::Yes => exit::failed(),
        Reproduced::No => exit::ok(),
        Reproduced::Unknown => exit::usage(),
    }
}

/// Runs `elicitkit fuzz`.
pub fn run(args: Args) -> ExitCode {
    if let Some(dir) = &args.judge {
        return judge(dir, args.replies.as_deref());
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
    if args.duration.is_zero() || args.max_requests == 0 {
        return usage_error("--duration and --max-requests must be positive");
    }
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let id = args.run_id.clone().unwrap_or_else(|| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("{}-fuzz", crate::load::run::utc_stamp(now))
    });
    let stdio = match args.stdio.spec(&target) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let shown = stdio.as_ref().map_or_else(
        || target.clone(),
        |s| format!("stdio: {}", s.command.display()),
    );
    let mut s = Settings::new(target.clone());
    args.aim.apply(&mut s.target);
    s.other_given = args.aim.other_principal.is_some();
    s.generation = generation;
    s.duration = args.duration;
    s.max_requests = args.max_requests;
    s.max_findings = args
        .max_findings
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    s.target.timeout = args.timeout;
    s.target.seed = args.seed;
    s.trusts_state = args.trusts_state.clone();
    s.out_dir = crate::report::fresh_run_dir(&args.out, &id).0.join("fuzz");
    s.progress = (!args.quiet).then_some(Duration::from_secs(5));
    eprintln!(
        "elicitkit fuzz: sends mutated traffic to every tool of {shown} for real; run it against \
         a test instance, not production."
    );
    let summary = runtime.block_on(async {
        // Ctrl-C and SIGTERM end the campaign with its summary written.
        crate::interrupt::listen();
        // A case is a session: warm processes, not one started per case.
        let resolved =
            super::target::resolve(&target, stdio.clone(), crate::stdio::Reuse::Warm).await?;
        s.target.mcp_url.clone_from(&resolved.url);
        s.stdio = resolved.bridge.as_ref().map(crate::stdio::Bridge::info);
        // Over stdio the error names the command and the process's exit.
        let target = blackbox::prepare(&s)
            .await
            .map_err(|e| resolved.explain(e.to_string(), &shown))
            .and_then(|t| Ok(t.knows(&s.trusts_state, "--trusts-state").map(|()| t)?));
        let summary = match target {
            Ok(target) => blackbox::run(&s, &target)
                .await
                .map(|x| (x, target.modern.is_empty() && target.legacy.is_empty()))
                .map_err(|e| format!("cannot write under {}: {e}", s.out_dir.display())),
            Err(e) => Err(e),
        };
        if let Some(b) = resolved.bridge {
            b.stop().await;
        }
        let (summary, no_tools) = summary?;
        // No tool listed: the listing replies were judged; with nothing
        // found there, there was nothing to fuzz.
        if no_tools && summary.findings.is_empty() {
            return Err(format!("{shown}: no tool to fuzz"));
        }
        Ok(summary)
    });
    let summary = match summary {
        Ok(x) => x,
        Err(e) => return usage_error(e),
    };
    print!("{}", summary.text());
    println!("report: {}", s.out_dir.join("summary.md").display());
    if let Some(sig) = crate::interrupt::received() {
        return ExitCode::from(sig.exit_code());
    }
    if summary.failed() {
        exit::failed()
    } else {
        exit::ok()
    }
}
