//! The rmcp interop server (`tests/rmcp_server/`) as a process, for the
//! launch contract of `tests/interop/README.md`:
//!
//! ```text
//! interop_rmcp [--port N] [--nodelay on|off]
//! ```
//!
//! Binds 127.0.0.1 only (`--port 0`, the default, picks a free port), prints
//! `listening on http://127.0.0.1:PORT/mcp` on stdout once it accepts
//! connections, logs to stderr (`RUST_LOG`, default `info`), and ends on
//! SIGTERM or SIGINT. `--nodelay off` leaves Nagle's algorithm on for
//! accepted sockets (default `on`: TCP_NODELAY set).

#[path = "../tests/rmcp_server/mod.rs"]
mod rmcp_server;

use std::io::Write;
use std::process::ExitCode;

fn usage(problem: &str) -> ExitCode {
    eprintln!("interop_rmcp: {problem}\nusage: interop_rmcp [--port N] [--nodelay on|off]");
    ExitCode::from(2)
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<rmcp_server::Options, String> {
    let mut opts = rmcp_server::Options::default();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--port" => {
                let v = value()?;
                opts.port = v.parse().map_err(|_| format!("bad port {v:?}"))?;
            }
            "--nodelay" => {
                opts.nodelay = match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("--nodelay takes on or off, not {other:?}")),
                }
            }
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(opts)
}

#[tokio::main]
async fn main() -> ExitCode {
    let opts = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();

    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("interop_rmcp: cannot watch SIGTERM: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = rmcp_server::start_with(opts).await;
    tracing::info!(
        nodelay = opts.nodelay,
        "rmcp interop server on {}",
        server.url
    );
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {}", server.url);
        let _ = out.flush();
    }

    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM, stopping"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT, stopping"),
    }
    // Open streams end with the server's cancellation; do not linger on a
    // connection that will not close.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), server.shutdown()).await;
    ExitCode::SUCCESS
}
