//! The subcommands behind the `elicitkit` binary. Each module holds one
//! subcommand's clap arguments and its `run` function; `main.rs` only parses
//! and dispatches.

use std::process::ExitCode;

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
pub mod report;
pub mod serve;
pub mod state;
pub mod target;
pub mod validate;
