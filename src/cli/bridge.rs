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
#[command(after_help = "Examples:
  elicitkit bridge -- python server.py      # then: curl -X POST http://127.0.0.1:PORT/mcp ...
  elicitkit bridge --env MODE=test --cwd srv -- node server.mjs")]
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
