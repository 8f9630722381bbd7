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
}

/// Prints a one-line error to stderr and returns the usage exit code.
pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("elicitkit: {msg}");
    exit::usage()
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
