//! `elicitkit serve`: run the reference elicitation server.
//!
//! Prints exactly one line to stdout, `listening on http://IP:PORT`, once the
//! socket is bound (so a parent process can read the port); logs go to
//! stderr via `tracing` (`RUST_LOG`), and never contain secrets.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::server::{Flaw, FlawSet, Principals, ResponseMode, ServerConfig, parse_size};
use crate::state::{CodecName, KeyError, KeyRing};

/// Environment variable holding the state key ring (same format as `--key-file`).
pub const KEY_ENV: &str = "ELICITKIT_STATE_KEY";

/// Arguments of `elicitkit serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Address to listen on. Non-loopback addresses need --allow-remote.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Allow listening on a non-loopback address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Tokio worker threads (1 = one core, a single-threaded runtime).
    /// Default: one per CPU.
    #[arg(long)]
    pub workers: Option<usize>,
    /// Pending-elicitation store: `memory`, or `sqlite:PATH` (survives restarts).
    #[arg(long, default_value = "memory")]
    pub store: String,
    /// requestState codec: hmac-sha256, blake3-keyed, aes-256-gcm,
    /// aes-256-gcm-siv, chacha20-poly1305 or xchacha20-poly1305.
    #[arg(long, default_value = "aes-256-gcm-siv")]
    pub state_codec: String,
    /// Key ring file (`kid:base64url(key)` per line, current first, or one
    /// bare key). Else the ELICITKIT_STATE_KEY environment variable; else a
    /// random key per process.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Lifetime of a requestState and of a pending URL flow (e.g. 10m, 30s).
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub state_ttl: Duration,
    /// File of `token principal` lines; default: demo mode (the bearer token
    /// is the principal's name).
    #[arg(long)]
    pub auth_tokens: Option<PathBuf>,
    /// Serve requests that carry no credentials at all (no Authorization
    /// header, no flow-page cookie) as principal NAME instead of answering
    /// 401. Off by default; for clients that cannot send a token, such as
    /// the official conformance runner. A request with a bad token is still
    /// refused. Example: --anonymous-principal demo
    #[arg(long, value_name = "NAME")]
    pub anonymous_principal: Option<String>,
    /// Also accept requests whose Origin header is ORIGIN (repeatable).
    /// Allowed without it: http:// plus the bound address, localhost,
    /// 127.0.0.1 or [::1], on the bound port; any other Origin gets 403
    /// (DNS-rebinding defence), a request without Origin is not refused for
    /// it. Example: --allowed-origin https://inspector.example:6274
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Also accept requests whose Host header is HOST (repeatable): a name
    /// (any port) or name:port. Allowed without it: the bound address,
    /// localhost, 127.0.0.1 and [::1] on the bound port; any other Host gets
    /// 403. Needed behind a proxy or with --allow-remote. Example:
    /// --allowed-host mcp.internal.example:8080
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Framing of answers where the spec allows either: json or sse.
    #[arg(long, default_value = "json")]
    pub response: ResponseMode,
    /// How long a 2025-11-25 elicitation waits for its answer.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub elicitation_timeout: Duration,
    /// Largest request body (e.g. 1MiB, 64kB); bigger bodies get 413.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub max_body: usize,
    /// Switch on a deliberate defect (repeatable); see --list-flaws.
    /// Example: --flaw no-origin-check
    #[arg(long = "flaw", value_name = "NAME")]
    pub flaws: Vec<Flaw>,
    /// Print every flaw with the rule it breaks, then exit.
    #[arg(long)]
    pub list_flaws: bool,
}

fn load_keys(args: &Args) -> Result<Option<KeyRing>, KeyError> {
    if let Some(path) = &args.key_file {
        return KeyRing::from_file(path).map(Some);
    }
    match KeyRing::from_env(KEY_ENV) {
        Ok(k) => Ok(Some(k)),
        Err(KeyError::EnvMissing(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Builds the server configuration from the arguments.
pub fn config(args: &Args) -> Result<ServerConfig, String> {
    let codec: CodecName = args
        .state_codec
        .parse()
        .map_err(|e| format!("--state-codec: {e}"))?;
    let keys = load_keys(args).map_err(|e| format!("state key: {e}"))?;
    let principals = match &args.auth_tokens {
        Some(p) => Principals::from_file(p).map_err(|e| e.to_string())?,
        None => Principals::Demo,
    };
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        return Err(format!(
            "--listen {} is not a loopback address; add --allow-remote to serve other machines",
            args.listen
        ));
    }
    if args.state_ttl.is_zero() {
        return Err("--state-ttl must be greater than zero".into());
    }
    if let Some(name) = &args.anonymous_principal
        && !crate::server::auth::valid_word(name)
    {
        return Err(format!(
            "--anonymous-principal {name:?}: use 1-256 visible ASCII characters, no spaces"
        ));
    }
    // Checked here so a typo is a usage error, not a failed start.
    crate::server::origin::AllowedOrigins::new(
        args.listen,
        &args.allowed_origins,
        &args.allowed_hosts,
    )?;
    Ok(ServerConfig {
        listen: args.listen,
        allow_remote: args.allow_remote,
        store: args.store.clone(),
        codec,
        keys,
        state_ttl: args.state_ttl,
        principals,
        anonymous_principal: args.anonymous_principal.clone(),
        allowed_origins: args.allowed_origins.clone(),
        allowed_hosts: args.allowed_hosts.clone(),
        response: args.response,
        elicitation_timeout: args.elicitation_timeout,
        max_body: args.max_body,
        flaws: args.flaws.iter().copied().collect::<FlawSet>(),
        ..ServerConfig::default()
    })
}

/// Runs `elicitkit serve` until Ctrl-C.
pub fn run(args: Args) -> ExitCode {
    if args.list_flaws {
        print!("{}", Flaw::table());
        return super::exit::ok();
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let cfg = match config(&args) {
        Ok(c) => c,
        Err(e) => return super::usage_error(e),
    };
    let runtime = match args.workers {
        Some(0) => return super::usage_error("--workers must be at least 1"),
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => return super::usage_error(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(async move {
        let server = match crate::server::start(cfg).await {
            Ok(s) => s,
            Err(e) => return super::usage_error(format!("{e:#}")),
        };
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on {}", server.base_url());
            let _ = out.flush();
        }
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
        server.shutdown().await;
        super::exit::ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: Args,
    }

    #[test]
    fn parses_every_flag() {
        let t = T::try_parse_from([
            "t",
            "--listen",
            "127.0.0.1:0",
            "--state-ttl",
            "30s",
            "--max-body",
            "64KiB",
            "--flaw",
            "no-expiry",
            "--flaw",
            "crash-on-decline",
            "--response",
            "sse",
            "--state-codec",
            "hmac-sha256",
            "--workers",
            "1",
            "--anonymous-principal",
            "demo",
            "--allowed-origin",
            "https://app.example",
            "--allowed-host",
            "mcp.example:8080",
            "--allowed-host",
            "gw.example",
        ])
        .unwrap();
        let c = config(&t.a).unwrap();
        assert_eq!(c.state_ttl, Duration::from_secs(30));
        assert_eq!(c.max_body, 64 * 1024);
        assert!(c.flaws.has(Flaw::NoExpiry) && c.flaws.has(Flaw::CrashOnDecline));
        assert_eq!(c.response, ResponseMode::Sse);
        assert_eq!(c.anonymous_principal.as_deref(), Some("demo"));
        assert_eq!(c.allowed_origins, ["https://app.example"]);
        assert_eq!(c.allowed_hosts, ["mcp.example:8080", "gw.example"]);
        assert!(T::try_parse_from(["t", "--flaw", "nope"]).is_err());
    }

    #[test]
    fn refuses_remote_without_consent() {
        let t = T::try_parse_from(["t", "--listen", "0.0.0.0:8080"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--allow-remote"));
        let t = T::try_parse_from(["t", "--state-codec", "rot13"]).unwrap();
        assert!(config(&t.a).is_err());
        let t = T::try_parse_from(["t", "--anonymous-principal", "two words"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--anonymous-principal"));
        let t = T::try_parse_from(["t", "--allowed-origin", "app.example"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--allowed-origin"));
        let t = T::try_parse_from(["t", "--allowed-host", "http://x/"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--allowed-host"));
    }
}
