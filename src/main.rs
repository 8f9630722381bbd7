//! The `elicitkit` binary: parse the command line, dispatch, map to an exit code.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

// glibc malloc spent ~14% of the load generator's CPU (arena locks,
// consolidation); mimalloc's thread-local free lists cut that for the
// generator and the reference server alike.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns transparent huge pages off for this process. mimalloc hands
/// freed 4 KiB pages back to the kernel, but where THP is on, khugepaged
/// collapses those partly returned 2 MiB ranges into whole huge pages
/// again (Linux fills up to 511 missing pages of 512 by default), so a
/// long-running `serve` ratcheted its RSS up to the heap's high-water mark
/// instead of following what its store holds.
#[cfg(target_os = "linux")]
fn no_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integers only and touches no memory
    // of ours; on failure nothing changes.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Load-test, fuzz and conformance-check MCP servers that elicit user input.
#[derive(Parser)]
#[command(
    name = "elicitkit",
    version,
    about,
    long_about = None,
    after_help = elicitkit::cli::START_HERE
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a server against the elicitation rules (a pass/fail table for CI).
    Check(elicitkit::cli::check::Args),
    /// Fuzz a server over HTTP (both generations) and write a repro.sh per finding.
    Fuzz(elicitkit::cli::fuzz::Args),
    /// Load-test an elicitation server (default: the smoke plan against the embedded server).
    Load(Box<elicitkit::cli::load::Args>),
    /// Discover a server and write the load plan `load --target` would run.
    Plan(elicitkit::cli::load::PlanArgs),
    /// Merge HDR interval logs from several runs, or re-render a run's report.
    Report(elicitkit::cli::report::Args),
    /// Run the reference elicitation server (both protocol generations).
    Serve(elicitkit::cli::serve::Args),
    /// Choose and debug requestState sealing (benchmark codecs, inspect tokens).
    State(elicitkit::cli::state::Args),
    /// Check one elicitation message against the spec.
    Validate(elicitkit::cli::validate::Args),
    /// Put a server that speaks stdio behind a loopback HTTP endpoint (for curl, repro.sh).
    Bridge(elicitkit::cli::bridge::Args),
}

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    no_transparent_huge_pages();
    let cli: Cli = elicitkit::cli::negative::parse();
    match cli.command {
        Command::Check(args) => elicitkit::cli::check::run(args),
        Command::Bridge(args) => elicitkit::cli::bridge::run(args),
        Command::Fuzz(args) => elicitkit::cli::fuzz::run(args),
        Command::Load(args) => elicitkit::cli::load::run(*args),
        Command::Plan(args) => elicitkit::cli::load::run_plan(args),
        Command::Report(args) => elicitkit::cli::report::run(args),
        Command::Serve(args) => elicitkit::cli::serve::run(args),
        Command::State(args) => elicitkit::cli::state::run(args),
        Command::Validate(args) => elicitkit::cli::validate::run(args),
    }
}
