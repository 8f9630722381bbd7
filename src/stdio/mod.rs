//! MCP servers that speak JSON-RPC over stdio, the transport most servers
//! ship with: started as a command, reached through a loopback endpoint so
//! `check`, `fuzz` and discovery drive them with the same clients as HTTP
//! servers.
//!
//! - [`child`]: the command, its process group, stderr tail and clean-up
//!   (drop, Ctrl-C, panic, parent death).
//! - [`pipe`]: newline-delimited JSON-RPC on one child, replies routed by id.
//! - [`log`]: what the children did besides answering (stdout noise, exits).
//! - [`bridge`]: the loopback MCP endpoint in front of the children.
//!
//! The other direction, `elicitkit serve --stdio`, is
//! [`crate::server::stdio`].

pub mod bridge;
pub mod child;
pub mod log;
pub mod pipe;

pub use bridge::{Bridge, Spec};
pub use child::Command;
pub use log::{Exit, Log};

/// What a run knows of its stdio target: how it was started, whether
/// identity reaches it, and its [`Log`].
#[derive(Debug, Clone)]
pub struct Info {
    /// The command, shell-quoted.
    pub command: String,
    /// The arguments `elicitkit bridge` starts the same server with
    /// (shell-quoted, the working directory absolute): for `repro.sh`.
    pub bridge_args: String,
    /// The variable the server takes its principal from, if named.
    pub identity_env: Option<String>,
    /// What the server's processes did besides answering.
    pub log: std::sync::Arc<Log>,
}

impl PartialEq for Info {
    /// Same command and identity (the logs are the run's, not settings).
    fn eq(&self, other: &Self) -> bool {
        self.command == other.command && self.identity_env == other.identity_env
    }
}

impl Bridge {
    /// The [`Info`] of this target.
    pub fn info(&self) -> Info {
        let spec = self.spec();
        let cwd = spec
            .command
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .and_then(|d| std::fs::canonicalize(&d).ok().or(Some(d)));
        let mut args: Vec<String> = Vec::new();
        if let Some(d) = cwd {
            args.push(format!(
                "--cwd {}",
                child::shell_quote(&d.display().to_string())
            ));
        }
        for (k, v) in &spec.command.env {
            args.push(format!("--env {}", child::shell_quote(&format!("{k}={v}"))));
        }
        if let Some(var) = &spec.identity_env {
            args.push(format!("--identity-env {}", child::shell_quote(var)));
        }
        args.push("--".into());
        args.extend(spec.command.argv.iter().map(|a| child::shell_quote(a)));
        Info {
            bridge_args: args.join(" "),
            command: self.spec().command.display(),
            identity_env: self.spec().identity_env.clone(),
            log: self.log(),
        }
    }
}
