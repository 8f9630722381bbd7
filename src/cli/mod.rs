//! The subcommands behind the `elicitkit` binary. Each module holds one
//! subcommand's clap arguments and its `run` function; `main.rs` only parses
//! and dispatches.

use std::process::ExitCode;

/// `elicitkit --help` after the command list: where to start, and the exit
/// codes every command shares (example lines under 60 columns).
pub const START_HERE: &str = "Start here (each ends at a verdict in under a minute):
  # a server author: run the reference server, check it
  elicitkit serve &
  elicitkit check --target http://127.0.0.1:8080/mcp
  # an operator: 10 s of load, then 20 users on your server
  elicitkit load
  elicitkit load --target URL -u 20 -d 30s
  # a security engineer: seal states, fuzz a broken server
  elicitkit state bench --quick
  elicitkit serve --listen 127.0.0.1:8081 \\
      --flaw accept-tampered-state &
  elicitkit fuzz --target http://127.0.0.1:8081/mcp -d 20s
  # each command's options, in groups, with examples
  elicitkit load --help

Exit codes, every command: 0 passed; 1 failed (a MUST rule, a threshold, a finding); 2 usage \
error, or a target that does not answer as an MCP server (nothing measured); 3 inconclusive \
(load: the generator could not back the verdict); 130 / 143 stopped by Ctrl-C / SIGTERM (what \
was measured is written, marked INTERRUPTED). Each command's --help says what its codes mean.

The README has quick starts per user; docs/<command>.md the details.";

/// Exit status conventions shared by every subcommand.
pub mod exit {
    use std::process::ExitCode;
    /// Success: nothing failed.
    pub fn ok() -> ExitCode {
        ExitCode::SUCCESS
    }
    /// A MUST finding, a failed check, or a breached threshold.
    pub fn failed() -> ExitCode {
        ExitCode::from(1)
    }
    /// Usage error, unreadable input, unreachable target.
    pub fn usage() -> ExitCode {
        ExitCode::from(2)
    }
    /// Stopped by Ctrl-C (after writing what it has, marked so).
    pub fn interrupted() -> ExitCode {
        ExitCode::from(130)
    }

    /// 3: the run's own settings (`check --deadline`) left checks without
    /// a verdict, and nothing failed.
    pub fn inconclusive() -> ExitCode {
        ExitCode::from(3)
    }
}

/// Prints a one-line error to stderr and returns the usage exit code.
pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("elicitkit: {msg}");
    exit::usage()
}

/// The multi-threaded runtime a subcommand runs on, or the usage error
/// that says why there is none.
pub fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| usage_error(format!("cannot start the async runtime: {e}")))
}

pub mod bridge;
pub mod capacity;
pub mod check;
pub mod fuzz;
pub mod load;
pub mod negative;
pub mod report;
pub mod serve;
pub mod state;
pub mod target;
pub mod validate;
