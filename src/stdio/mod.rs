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
//! - [`warm`]: session processes handed from session to session (`fuzz`).
//!
//! The other direction, `elicitkit serve --stdio`, is
//! [`crate::server::stdio`].

pub mod bridge;
pub mod child;
pub mod log;
pub mod pipe;
pub mod warm;

pub use bridge::{Bridge, Spec};
pub use warm::Reuse;

/// Why a stdio server could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// Nothing after `--`.
    #[error("no command given (after `--`)")]
    NoCommand,
    /// The program could not be started.
    #[error("cannot start `{0}`: {1}")]
    Spawn(String, std::io::Error),
    /// The child's stdio was not piped.
    #[error("the child's pipes were not opened")]
    NoPipes,
    /// It exited while the bridge watched its start: the command, the
    /// status and its stderr's last lines.
    #[error("`{0}` exited at once ({1}){2}")]
    ExitedAtOnce(String, String, String),
    /// The loopback endpoint could not be opened.
    #[error("cannot bind the stdio bridge on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    /// Its address could not be read.
    #[error("cannot read the bridge's address: {0}")]
    Address(std::io::Error),
    /// A thread holding the bridge's state panicked.
    #[error("bridge lock poisoned")]
    Poisoned,
}
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
    /// The bridge's router: a driver may call it in process instead of
    /// over loopback HTTP ([`Bridge::router`]).
    pub router: axum::Router,
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
            router: self.router(),
        }
    }
}
