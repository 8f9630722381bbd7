//! `elicitkit bridge`: a stdio server on a loopback HTTP endpoint, the one
//! `check` and `fuzz` put in front of it ([`crate::stdio::bridge`]), so curl
//! (and a stdio finding's `repro.sh`) can talk to it. Prints one line,
//! `listening on http://127.0.0.1:PORT`, then serves until Ctrl-C or
//! SIGTERM, and stops the server.

use super::target::{STDIO, StdioArgs};
use super::{exit, usage_error};
use crate::stdio::bridge::EXITED;
use std::process::ExitCode;

/// Arguments of `elicitkit bridge`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:
  # the server behind http://127.0.0.1:PORT/mcp (printed)
  elicitkit bridge -- python server.py
  # with an environment variable and a working directory
  elicitkit bridge --env MODE=test --cwd srv -- node srv.mjs
  # each bearer token its own server processes, USER set
  elicitkit bridge --identity-env USER -- node srv.mjs

Exit codes: 0 stopped by Ctrl-C or SIGTERM (the server's own exits are listed on stderr); 2 usage \
error, or the server could not be started.",
    mut_arg("env", |a| a.help("An environment variable for the server (repeatable), e.g. --env API_MODE=test")),
    mut_arg("cwd", |a| a.help("The server's working directory")),
    mut_arg("identity_env", |a| a.help(
        "The environment variable the server reads its user from: each bearer token that \
         calls gets server processes of its own, with the variable set to the token"
    )),
    mut_arg("command", |a| a.help("The server's command and its arguments, after `--`, e.g. -- python server.py")),
)]
pub struct Args {
    /// The server's command (after `--`), environment and directory.
    #[command(flatten)]
    pub stdio: StdioArgs,
}

/// Runs `elicitkit bridge`.
pub fn run(args: Args) -> ExitCode {
    let spec = match args.stdio.spec(STDIO) {
        Ok(Some(s)) => s,
        Ok(None) => return usage_error("the server's command goes after `--`"),
        Err(e) => return usage_error(e),
    };
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let bridge = match crate::stdio::Bridge::start(spec).await {
            Ok(b) => b,
            Err(e) => return usage_error(e),
        };
        let base = bridge.mcp_url().trim_end_matches("/mcp").to_owned();
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on {base}");
            let _ = out.flush();
        }
        eprintln!("MCP endpoint: {base}/mcp (the stdio server behind it)");
        // Ctrl-C is handled by the stdio clean-up (it kills the children);
        // SIGTERM (a script's `kill`) stops them here.
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            term.recv().await;
        } else {
            let _ = tokio::signal::ctrl_c().await;
        }
        let log = bridge.log();
        bridge.stop().await;
        for e in log.crashes() {
            eprintln!(
                "elicitkit bridge: {EXITED} (pid {}, {}); its stderr ends: {}",
                e.pid,
                e.status,
                e.stderr_last(1).first().unwrap_or(&"(nothing)")
            );
        }
        exit::ok()
    })
}
