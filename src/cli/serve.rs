//! `elicitkit serve`: run the reference elicitation server.
//!
//! Prints exactly one line to stdout, `listening on http://IP:PORT`, once the
//! socket is bound (so a parent process can read the port); logs go to
//! stderr via `tracing` (`RUST_LOG`), coloured only on a terminal (and not
//! with `NO_COLOR` set), and never contain secrets. Every event of a
//! request names its peer address and principal; text a client chose is
//! quoted and escaped.
//!
//! Ctrl-C and SIGTERM (what Kubernetes and systemd send) stop it the same
//! way: a log line names the signal, the listener closes, in-flight
//! requests get up to [`crate::server::accept::SHUTDOWN_GRACE`] to finish,
//! and it exits 0.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::server::{
    Flaw, FlawSet, Principals, PublicUrl, ResponseMode, ServerConfig, SessionLimits, parse_size,
};
use crate::state::{CodecName, KeyError, KeyRing};

/// Environment variable holding the state key ring (same format as `--key-file`).
pub const KEY_ENV: &str = "ELICITKIT_STATE_KEY";

/// Arguments of `elicitkit serve`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  # both generations on http://127.0.0.1:8080/mcp
  elicitkit serve
  # another port; states sealed with your own key ring
  elicitkit serve --listen 127.0.0.1:9000 --key-file k.txt
  # a deliberately broken server (see --list-flaws)
  elicitkit serve --flaw accept-tampered-state
  # two instances sharing one Redis store
  elicitkit serve --store redis://127.0.0.1:6379/0 \\
      --key-file k.txt --listen 127.0.0.1:9001
  # over stdio, as desktop clients start servers
  elicitkit check --target stdio -- elicitkit serve --stdio

Stopping: Ctrl-C or SIGTERM logs the signal, stops accepting connections, ends open SSE \
streams and gives requests in flight up to 5 s to finish, then exits 0.

Exit codes: 0 stopped by a signal (or, with --stdio, stdin closed); 2 usage error (a bad flag, key file or store), or the address \
cannot be listened on.")]
pub struct Args {
    /// Address to listen on: IP:PORT or HOST:PORT (e.g. localhost:8080;
    /// a name is resolved once, IPv4 first). Non-loopback addresses need
    /// --allow-remote. With --stdio it serves only URL-flow pages, on any
    /// free port unless given.
    #[arg(help_heading = "Listening", 
        long,
        default_value = "127.0.0.1:8080",
        default_value_if("stdio", clap::builder::ArgPredicate::IsPresent, "127.0.0.1:0"),
        value_parser = parse_listen
    )]
    pub listen: SocketAddr,
    /// Serve MCP on stdin/stdout (one client, as desktop clients launch
    /// servers) instead of HTTP; logs stay on stderr. Flaws apply alike.
    /// Example: elicitkit check --target stdio -- elicitkit serve --stdio
    #[arg(help_heading = "Listening", long)]
    pub stdio: bool,
    /// With --stdio: the principal the stdio client acts as (the bearer
    /// token an HTTP client would send).
    #[arg(
        help_heading = "Listening",
        long,
        env = "ELICITKIT_PRINCIPAL",
        default_value = "alice",
        value_name = "TOKEN"
    )]
    pub stdio_principal: String,
    /// Allow listening on a non-loopback address. With demo auth (no
    /// --auth-tokens) the server then warns: ANY bearer token is accepted
    /// as the user it names, so anyone who reaches the port can act as
    /// anyone. Example: --allow-remote --listen 10.0.0.5:8080 --auth-tokens tokens.txt
    #[arg(help_heading = "Listening", long)]
    pub allow_remote: bool,
    /// Base URL that flow links (/flow/<id>) name, as clients and browsers
    /// reach this server (e.g. through a proxy). Its origin and host are
    /// allowed by the Origin/Host check; https makes the flow cookies
    /// Secure. Required with --listen 0.0.0.0 or [::]. Default: http://
    /// plus the bound address. Example: --public-url https://mcp.example.com
    #[arg(help_heading = "Listening", long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Tokio worker threads (1 = one core, a single-threaded runtime).
    /// Default: one per CPU.
    #[arg(help_heading = "Listening", long, value_name = "N")]
    pub workers: Option<usize>,
    /// Pending-elicitation store: `memory`, `sqlite:PATH` (survives
    /// restarts), or `redis://HOST:PORT/DB` (shared by every instance behind
    /// a load balancer: give them the same key ring too, see
    /// loadtests/nginx/README.md). Example: --store redis://127.0.0.1:6379/0
    #[arg(help_heading = "State and store", long, default_value = "memory")]
    pub store: String,
    /// Accept a Redis store that keeps nothing across its restart (no
    /// append-only file, or snapshots only). No completed request runs
    /// again after a restart that loses the data (the store's epoch
    /// changes, so retries from before it are refused as store_reset), but
    /// every request in flight then fails and its user is asked again.
    /// Without it `serve` refuses such a store at start; start Redis with
    /// --appendonly yes --appendfsync always.
    #[arg(help_heading = "State and store", long)]
    pub allow_volatile_store: bool,
    /// Accept a Redis store whose maxmemory-policy may evict any key
    /// (allkeys-lru, allkeys-lfu, allkeys-random). RISK: when Redis fills
    /// up it evicts completion records, and every retry of such a request
    /// runs it again (a second deployment, a second charge): the epoch
    /// does not notice an eviction. Without it `serve` refuses such a store
    /// at start; use maxmemory-policy noeviction (or volatile-*: this store
    /// sets no TTL on its keys).
    #[arg(help_heading = "State and store", long)]
    pub allow_evicting_store: bool,
    /// Most memory the `memory` store may hold for pending flows and
    /// completion records (about 140 B per completed request, kept for the
    /// life of its states): past it a request that would add one gets 503
    /// with Retry-After, and nothing live is forgotten early. Example:
    /// --store-memory-budget 4GiB
    #[arg(help_heading = "State and store", long, default_value = "1GiB", value_parser = parse_size)]
    pub store_memory_budget: usize,
    /// Name this instance in the `elicitkit-instance` header of every
    /// response (default: IP:PORT/PID of the process), so clients and
    /// `check --other-instance` can tell which instance answered.
    /// Example: --instance-id api-1
    #[arg(help_heading = "State and store", long, value_name = "NAME")]
    pub instance_id: Option<String>,
    /// requestState codec: hmac-sha256, blake3-keyed, aes-256-gcm,
    /// aes-256-gcm-siv, chacha20-poly1305 or xchacha20-poly1305.
    #[arg(
        help_heading = "State and store",
        long,
        default_value = "aes-256-gcm-siv"
    )]
    pub state_codec: String,
    /// Key ring file (`kid:base64url(key)` per line, current first, or one
    /// bare key). Else the ELICITKIT_STATE_KEY environment variable; else a
    /// random key per process.
    #[arg(help_heading = "State and store", long)]
    pub key_file: Option<PathBuf>,
    /// Lifetime of a requestState and of a pending URL flow. A state is
    /// refused once its TTL has passed, exactly (no grace), and so is one
    /// that would live longer than this TTL (+ --clock-skew) from now,
    /// e.g. sealed by an instance with a longer TTL. Example: --state-ttl 2m
    #[arg(help_heading = "State and store", long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub state_ttl: Duration,
    /// How far in the future a state's issue time may lie and still be
    /// accepted (another instance's clock running ahead). It never extends
    /// a state's lifetime. Example: --clock-skew 1s
    #[arg(help_heading = "State and store", long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub clock_skew: Duration,
    /// File of `token principal` lines; default: demo mode (the bearer token
    /// is the principal's name).
    #[arg(help_heading = "Who may call", long)]
    pub auth_tokens: Option<PathBuf>,
    /// Serve requests that carry no credentials at all (no Authorization
    /// header, no flow-page cookie) as principal NAME instead of answering
    /// 401. Off by default; for clients that cannot send a token, such as
    /// the official conformance runner. A request with a bad token is still
    /// refused. Example: --anonymous-principal demo
    #[arg(help_heading = "Who may call", long, value_name = "NAME")]
    pub anonymous_principal: Option<String>,
    /// Also accept requests whose Origin header is ORIGIN (repeatable).
    /// Allowed without it: http:// plus the bound address, localhost,
    /// 127.0.0.1 or [::1], on the bound port; any other Origin gets 403
    /// (DNS-rebinding defence), a request without Origin is not refused for
    /// it. Example: --allowed-origin https://inspector.example:6274
    #[arg(
        help_heading = "Who may call",
        long = "allowed-origin",
        value_name = "ORIGIN"
    )]
    pub allowed_origins: Vec<String>,
    /// Also accept requests whose Host header is HOST (repeatable): a name
    /// (any port) or name:port. Allowed without it: the bound address,
    /// localhost, 127.0.0.1 and [::1] on the bound port; any other Host gets
    /// 403. Needed behind a proxy or with --allow-remote. Example:
    /// --allowed-host mcp.internal.example:8080
    #[arg(
        help_heading = "Who may call",
        long = "allowed-host",
        value_name = "HOST"
    )]
    pub allowed_hosts: Vec<String>,
    /// Framing of answers where the spec allows either: json or sse.
    #[arg(help_heading = "Replies", long, default_value = "json")]
    pub response: ResponseMode,
    /// How long a 2025-11-25 elicitation waits for its answer.
    #[arg(help_heading = "Replies", long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub elicitation_timeout: Duration,
    /// Largest request body (e.g. 1MiB, 64kB); bigger bodies get 413.
    #[arg(help_heading = "Limits", long, default_value = "1MiB", value_parser = parse_size)]
    pub max_body: usize,
    /// Most JSON members (object keys and array items) a request body may
    /// hold; a body with more, or nested deeper than 64 levels, gets 400
    /// before it is parsed (an 88,000-key body costs about 20 times the
    /// CPU of a plain one). Example: --max-json-members 50000
    #[arg(help_heading = "Limits", long, default_value_t = crate::server::DEFAULT_MAX_JSON_MEMBERS)]
    pub max_json_members: usize,
    /// Most time from a connection's accept, or from the first byte after
    /// an idle spell, to a complete request head; then the connection is
    /// closed (slowloris, silent sockets). Example: --header-read-timeout 5s
    #[arg(help_heading = "Limits", long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,
    /// Most time to receive a request body once its head arrived; a slower
    /// body gets 408 and the connection is closed.
    /// Example: --body-read-timeout 10s
    #[arg(help_heading = "Limits", long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub body_read_timeout: Duration,
    /// Most request-body bytes held in memory at once, server-wide. A body
    /// that would go beyond it (by its Content-Length, or as it arrives)
    /// gets 503 with Retry-After; bodies count what has arrived, so a body
    /// trickled in holds only that. At least --max-body.
    /// Example: --max-body-bytes-in-flight 256MiB
    #[arg(help_heading = "Limits", long, default_value = "64MiB", value_parser = parse_size)]
    pub max_body_bytes_in_flight: usize,
    /// Most request-body bytes held in memory at once for one principal
    /// (503 with Retry-After beyond it). At least --max-body.
    /// Example: --max-body-bytes-per-principal 16MiB
    #[arg(help_heading = "Limits", long, default_value = "8MiB", value_parser = parse_size)]
    pub max_body_bytes_per_principal: usize,
    /// Bytes a second a request body must average, after a 2 s grace, not
    /// to count as slow (a body with no new byte for 2 s is slow too, however
    /// fast it began): at --max-connections a slow body's connection may
    /// be shed for a new one (credentials are checked before any body is
    /// read, so only callers with a token get that far). 0: never shed a
    /// body. Example: --min-body-rate 256
    #[arg(help_heading = "Limits", long, default_value_t = 1024)]
    pub min_body_rate: u64,
    /// Most time a kept-alive connection may sit idle between requests.
    /// Example: --keep-alive-timeout 5s
    #[arg(help_heading = "Limits", long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub keep_alive_timeout: Duration,
    /// Most HTTP connections open at once, lowered to what the file
    /// descriptor limit allows (less 256 kept for files). At the cap a new
    /// connection sheds the one idle, half-sent or slow (see
    /// --min-body-rate) the longest; only when all are busy with requests
    /// is it refused (503 with Retry-After).
    /// Example: --max-connections 2000
    #[arg(help_heading = "Limits", long, default_value_t = 8192)]
    pub max_connections: usize,
    /// Most connections one principal may hold (and the pool of callers
    /// without credentials, together); a request that would make one more
    /// gets 429 and its connection closes. Under pressure (at
    /// --max-connections, nothing idle or slow) the server also sheds the
    /// largest holder's waiting connections first (a body still arriving, a
    /// 2025-11-25 stream waiting on its client, which ends with a JSON-RPC
    /// error). Default: an eighth of --max-connections, at least 64 (or
    /// all). A load test running many users as one principal needs it
    /// raised. Example: --max-connections-per-principal 2000
    #[arg(help_heading = "Limits", long, value_name = "N")]
    pub max_connections_per_principal: Option<usize>,
    /// A 2025-11-25 session unused this long (no request, no call in
    /// flight, no GET stream open) expires; its next request gets 404.
    /// Example: --session-idle-timeout 2m
    #[arg(help_heading = "Limits", long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub session_idle_timeout: Duration,
    /// Most 2025-11-25 sessions one principal holds. One more replaces the
    /// principal's least recently used idle session; when all are in use,
    /// initialize gets 429. Example: --max-sessions-per-principal 8
    #[arg(help_heading = "Limits", long, default_value_t = 32)]
    pub max_sessions_per_principal: usize,
    /// Most 2025-11-25 sessions alive in all; initialize beyond it gets 503
    /// with Retry-After. Example: --max-sessions 10000
    #[arg(help_heading = "Limits", long, default_value_t = 50_000)]
    pub max_sessions: usize,
    /// How long the store keeps a record after its expiry (settled or
    /// abandoned) and an audit entry after it was written; one-time claims
    /// go when no state could present them any more. The sweep enforces it
    /// every --sweep-interval. Example: --retention 1h
    #[arg(help_heading = "State and store", long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub retention: Duration,
    /// How often due pending records are marked expired and the store is
    /// purged. Example: --sweep-interval 5s
    #[arg(help_heading = "State and store", long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub sweep_interval: Duration,
    /// Offer no tools: no tools capability, tools/list and tools/call
    /// answer -32601; the resource and the prompt stay (a server that only
    /// serves resources and prompts, for `check`).
    #[arg(help_heading = "Replies", long)]
    pub no_tools: bool,
    /// Switch on a deliberate defect (repeatable); see --list-flaws.
    /// Example: --flaw no-origin-check
    #[arg(
        help_heading = "Flaws (a broken server, for testing testers)",
        long = "flaw",
        value_name = "NAME"
    )]
    pub flaws: Vec<Flaw>,
    /// Print every flaw with the rule it breaks, then exit.
    #[arg(help_heading = "Flaws (a broken server, for testing testers)", long)]
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
    let public_url = args
        .public_url
        .as_deref()
        .map(PublicUrl::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    crate::server::remote_check_links(args.listen, public_url.as_ref())
        .map_err(|e| e.to_string())?;
    for (flag, d) in [
        ("--state-ttl", args.state_ttl),
        ("--header-read-timeout", args.header_read_timeout),
        ("--body-read-timeout", args.body_read_timeout),
        ("--keep-alive-timeout", args.keep_alive_timeout),
        ("--session-idle-timeout", args.session_idle_timeout),
        ("--sweep-interval", args.sweep_interval),
    ] {
        if d.is_zero() {
            return Err(format!("{flag} must be greater than zero"));
        }
    }
    if args.max_connections_per_principal == Some(0) {
        return Err("--max-connections-per-principal must be at least 1".into());
    }
    for (flag, n) in [
        ("--max-connections", args.max_connections),
        (
            "--max-sessions-per-principal",
            args.max_sessions_per_principal,
        ),
        ("--max-sessions", args.max_sessions),
    ] {
        if n == 0 {
            return Err(format!("{flag} must be at least 1"));
        }
    }
    for (flag, n) in [
        ("--max-body-bytes-in-flight", args.max_body_bytes_in_flight),
        (
            "--max-body-bytes-per-principal",
            args.max_body_bytes_per_principal,
        ),
    ] {
        if n < args.max_body {
            return Err(format!(
                "{flag} is below --max-body ({}): a body of --max-body could never be read",
                args.max_body
            ));
        }
    }
    if let Some(id) = &args.instance_id
        && !crate::server::auth::valid_word(id)
    {
        return Err(format!(
            "--instance-id {id:?}: use 1-256 visible ASCII characters, no spaces"
        ));
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
    )
    .map_err(|e| e.to_string())?;
    Ok(ServerConfig {
        listen: args.listen,
        allow_remote: args.allow_remote,
        public_url,
        store: args.store.clone(),
        allow_volatile_store: args.allow_volatile_store,
        allow_evicting_store: args.allow_evicting_store,
        store_memory_budget: args.store_memory_budget as u64,
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
        max_json_members: args.max_json_members,
        clock_skew: args.clock_skew,
        header_read_timeout: args.header_read_timeout,
        body_read_timeout: args.body_read_timeout,
        max_body_in_flight: args.max_body_bytes_in_flight,
        max_body_in_flight_per_principal: args.max_body_bytes_per_principal,
        min_body_rate: args.min_body_rate,
        keep_alive_timeout: args.keep_alive_timeout,
        max_connections: args.max_connections,
        max_connections_per_principal: args.max_connections_per_principal,
        sessions: SessionLimits {
            idle: args.session_idle_timeout,
            per_principal: args.max_sessions_per_principal,
            max: args.max_sessions,
        },
        retention: args.retention,
        sweep_interval: args.sweep_interval,
        offer_tools: !args.no_tools,
        flaws: args.flaws.iter().copied().collect::<FlawSet>(),
        instance_id: args.instance_id.clone(),
        ..ServerConfig::default()
    })
}

/// Colour codes in the log only on a terminal, and never with `NO_COLOR`
/// (<https://no-color.org>): a log file or pipe gets plain text.
fn colour_logs() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Runs `elicitkit serve` until Ctrl-C or SIGTERM.
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
        .with_ansi(colour_logs())
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
    let (stdio, principal) = (args.stdio, args.stdio_principal.clone());
    let flaws = cfg.flaws;
    runtime.block_on(async move {
        // Listening for the signals before the server says it is up, so a
        // SIGTERM right after `listening on` is not the default (silent) exit.
        let mut stop = StopSignals::listen();
        let server = match crate::server::start(cfg).await {
            Ok(s) => s,
            Err(e) => return super::usage_error(format!("{e:#}")),
        };
        if stdio {
            // stdout carries MCP messages only.
            eprintln!(
                "serving MCP on stdin/stdout as {principal:?}; flow pages on {}",
                server.base_url()
            );
            let host = server.addr().to_string();
            let served = crate::server::stdio::serve(
                server.router(),
                host,
                principal,
                flaws,
                tokio::io::stdin(),
                tokio::io::stdout(),
            );
            tokio::select! {
                () = served => tracing::info!("stdin closed: shutting down"),
                signal = stop.next() => log_stop(signal),
            }
            server.shutdown().await;
            return super::exit::ok();
        }
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on {}", server.base_url());
            let _ = out.flush();
            // stdout keeps its one-line contract (parents parse it); people
            // read the endpoint, and what to run against it, on stderr.
            eprintln!(
                "MCP endpoint: {0}/mcp (try: elicitkit check --target {0}/mcp)",
                server.base_url()
            );
        }
        log_stop(stop.next().await);
        let t = std::time::Instant::now();
        server.shutdown().await;
        tracing::info!(took_ms = t.elapsed().as_millis() as u64, "stopped");
        super::exit::ok()
    })
}

/// Ctrl-C and SIGTERM, listened for from [`StopSignals::listen`] on.
struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn listen() -> Self {
        StopSignals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// Waits for the first of them; names it.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        if let Some(term) = &mut self.term {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => "Ctrl-C",
                _ = term.recv() => "SIGTERM",
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

fn log_stop(signal: &str) {
    tracing::info!(
        signal,
        grace_s = crate::server::accept::SHUTDOWN_GRACE.as_secs(),
        "shutting down: draining the requests in flight"
    );
}

/// `--listen`: an IP:PORT, or a HOST:PORT resolved now (IPv4 first, so
/// `localhost:8080` binds 127.0.0.1).
fn parse_listen(v: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = v.parse::<SocketAddr>() {
        return Ok(a);
    }
    use std::net::ToSocketAddrs as _;
    let addrs: Vec<SocketAddr> = v
        .to_socket_addrs()
        .map_err(|e| format!("{v:?} is neither IP:PORT nor a HOST:PORT that resolves: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{v:?} resolves to no address"))
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
            "--header-read-timeout",
            "3s",
            "--body-read-timeout",
            "4s",
            "--keep-alive-timeout",
            "5s",
            "--max-connections",
            "100",
            "--max-connections-per-principal",
            "30",
            "--max-body-bytes-in-flight",
            "32MiB",
            "--max-body-bytes-per-principal",
            "2MiB",
            "--min-body-rate",
            "100",
            "--session-idle-timeout",
            "1m",
            "--max-sessions-per-principal",
            "4",
            "--max-sessions",
            "99",
            "--retention",
            "2h",
            "--sweep-interval",
            "7s",
            "--clock-skew",
            "1s",
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
        assert_eq!(
            (
                c.header_read_timeout,
                c.body_read_timeout,
                c.keep_alive_timeout
            ),
            (
                Duration::from_secs(3),
                Duration::from_secs(4),
                Duration::from_secs(5)
            )
        );
        assert_eq!(c.max_connections, 100);
        assert_eq!(c.max_connections_per_principal, Some(30));
        assert_eq!(
            (
                c.max_body_in_flight,
                c.max_body_in_flight_per_principal,
                c.min_body_rate
            ),
            (32 << 20, 2 << 20, 100)
        );
        assert_eq!(
            c.sessions,
            SessionLimits {
                idle: Duration::from_secs(60),
                per_principal: 4,
                max: 99
            }
        );
        assert_eq!(c.retention, Duration::from_secs(7200));
        assert_eq!(c.sweep_interval, Duration::from_secs(7));
        assert_eq!(c.clock_skew, Duration::from_secs(1));
        assert!(T::try_parse_from(["t", "--flaw", "nope"]).is_err());
    }

    #[test]
    fn listen_takes_host_names() {
        let t = T::try_parse_from(["t", "--listen", "localhost:8080"]).unwrap();
        assert_eq!(t.a.listen, "127.0.0.1:8080".parse().unwrap());
        assert!(config(&t.a).is_ok(), "localhost is loopback");
        let t = T::try_parse_from(["t", "--listen", "[::1]:9"]).unwrap();
        assert_eq!(t.a.listen, "[::1]:9".parse().unwrap());
        let Err(e) = T::try_parse_from(["t", "--listen", "localhost"]) else {
            panic!("a name without a port is refused");
        };
        assert!(e.to_string().contains("HOST:PORT"), "{e}");
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
        let t = T::try_parse_from(["t", "--listen", "0.0.0.0:8080", "--allow-remote"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--public-url"));
        let t = T::try_parse_from([
            "t",
            "--listen",
            "0.0.0.0:8080",
            "--allow-remote",
            "--public-url",
            "https://mcp.example.com",
        ])
        .unwrap();
        assert_eq!(
            config(&t.a).unwrap().public_url.unwrap().base(),
            "https://mcp.example.com"
        );
        let t = T::try_parse_from(["t", "--public-url", "mcp.example.com"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--public-url"));
        let t = T::try_parse_from(["t", "--keep-alive-timeout", "0s"]).unwrap();
        assert!(config(&t.a).unwrap_err().contains("--keep-alive-timeout"));
        let t = T::try_parse_from(["t", "--max-body-bytes-per-principal", "64KiB"]).unwrap();
        assert!(
            config(&t.a)
                .unwrap_err()
                .contains("--max-body-bytes-per-principal is below --max-body")
        );
        let t = T::try_parse_from(["t", "--max-sessions-per-principal", "0"]).unwrap();
        assert!(
            config(&t.a)
                .unwrap_err()
                .contains("--max-sessions-per-principal")
        );
    }
}
