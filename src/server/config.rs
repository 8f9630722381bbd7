//! [`ServerConfig`]: everything `elicitkit serve` can be told. `Default` is a
//! correct server on an ephemeral loopback port with an in-memory store and a
//! per-process random key.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::clock::Clock;
use crate::state::{CodecName, KeyRing};

use super::auth::Principals;
use super::flaw::FlawSet;

/// How answers to requests are framed where the spec allows either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ResponseMode {
    /// `application/json` (default).
    #[default]
    Json,
    /// `text/event-stream` with one event per message.
    Sse,
}

impl std::str::FromStr for ResponseMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(ResponseMode::Json),
            "sse" => Ok(ResponseMode::Sse),
            other => Err(format!("unknown response mode {other:?}: use json or sse")),
        }
    }
}

/// Configuration of the reference server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind; port 0 picks a free port. Default `127.0.0.1:0`.
    pub listen: SocketAddr,
    /// Allow a non-loopback `listen` address.
    pub allow_remote: bool,
    /// Base URL flow links name (`None`: `http://` + the bound address);
    /// its origin and host are allowed by the guard, and https makes the
    /// flow cookies `Secure`. Required with an unspecified `listen`.
    pub public_url: Option<super::remote::PublicUrl>,
    /// Store spec: `memory`, `sqlite:PATH` or `redis://HOST:PORT/DB`.
    pub store: String,
    /// Accept a Redis store that keeps nothing across a Redis restart
    /// (see [`crate::store::open_for_serving`]).
    pub allow_volatile_store: bool,
    /// Accept a Redis store whose `maxmemory-policy` may evict any key
    /// (`allkeys-*`; see [`crate::store::open_for_serving`]).
    pub allow_evicting_store: bool,
    /// Most bytes the `memory` store's records and completion records may
    /// hold; past it new ones get 503 with `Retry-After`.
    pub store_memory_budget: u64,
    /// Codec sealing `requestState`.
    pub codec: CodecName,
    /// Keys; `None` generates one per process (and logs that it did).
    pub keys: Option<KeyRing>,
    /// Lifetime of a `requestState` and of a pending URL flow.
    pub state_ttl: Duration,
    /// How far in the future a state's issue time may lie (it never
    /// extends a lifetime).
    pub clock_skew: Duration,
    /// Where every expiry decision reads the time (states, records,
    /// claims, sessions, sign-ins, retention): the system clock; tests
    /// pass a [`Clock::offset`] and advance it instead of sleeping.
    pub clock: Clock,
    /// Token → principal mapping.
    pub principals: Principals,
    /// The principal a request without any credentials stands for; `None`
    /// (the default) answers such requests with 401.
    pub anonymous_principal: Option<String>,
    /// Origins allowed besides the defaults (`http://` + the bound address,
    /// `localhost`, `127.0.0.1`, `[::1]`, on the bound port).
    pub allowed_origins: Vec<String>,
    /// `Host` values allowed besides the defaults (the same four names on
    /// the bound port): `name` (any port) or `name:port`.
    pub allowed_hosts: Vec<String>,
    /// JSON or SSE answers.
    pub response: ResponseMode,
    /// How long a 2025-11-25 elicitation waits for its answer.
    pub elicitation_timeout: Duration,
    /// Largest request body accepted, in bytes (bigger → 413).
    pub max_body: usize,
    /// Most JSON members (object keys and array items) a request body may
    /// hold (see `json_cost`; more → 400).
    pub max_json_members: usize,
    /// Most time from a connection's accept (or the first byte after an
    /// idle spell) to a complete request head; then the connection closes.
    pub header_read_timeout: Duration,
    /// Most time to receive a request body once its head arrived (→ 408).
    pub body_read_timeout: Duration,
    /// Most request-body bytes buffered at once, server-wide; a body that
    /// would go beyond it gets 503 with `Retry-After` (see `body`).
    pub max_body_in_flight: usize,
    /// Most request-body bytes buffered at once for one principal.
    pub max_body_in_flight_per_principal: usize,
    /// At the connection cap, a connection whose request body has averaged
    /// fewer bytes a second than this (after [`Self::body_rate_grace`]) may
    /// be shed for a new one (0: never).
    pub min_body_rate: u64,
    /// How long a body may arrive at any pace before it can count as slow.
    pub body_rate_grace: Duration,
    /// Most time a kept-alive connection may sit idle between requests.
    pub keep_alive_timeout: Duration,
    /// How long the store keeps a record after its expiry and an audit
    /// entry after it was written (see [`crate::store::retention`]).
    pub retention: Duration,
    /// How often expired records are marked and the store is purged.
    pub sweep_interval: Duration,
    /// 2025-11-25 session limits: idle expiry, per-principal and total caps.
    pub sessions: super::sessions::SessionLimits,
    /// Most HTTP connections open at once (lowered to what the descriptor
    /// limit allows); at the cap the connection idle (or half-sent, or
    /// slow) the longest is shed.
    pub max_connections: usize,
    /// Most connections one principal (or the pool of callers without
    /// credentials) may hold; `None`: an eighth of the cap, at least 64
    /// (see `accept::share_of`).
    pub max_connections_per_principal: Option<usize>,
    /// Offer the demo tools (the default). Without them the server
    /// declares no `tools` capability and answers `tools/list` and
    /// `tools/call` with `-32601`; its resource and prompt stay.
    pub offer_tools: bool,
    /// Deliberate defects (empty = correct).
    pub flaws: FlawSet,
    /// How long `hang-on-cancel` hangs before answering anyway.
    pub hang_limit: Duration,
    /// Value of the [`INSTANCE_HEADER`] every response carries; `None`:
    /// `IP:PORT/PID` of this process (unique on one machine).
    pub instance_id: Option<String>,
}

/// Response header naming the instance that answered, so a client behind a
/// load balancer can tell which instance served each leg.
pub const INSTANCE_HEADER: &str = crate::protocol::headers::INSTANCE;

/// `--store-memory-budget`'s default: 1 GiB, about seven million completed
/// requests kept at once.
pub const DEFAULT_STORE_MEMORY_BUDGET: u64 = 1 << 30;

/// Extra time a completion record outlives the state TTL: longer than a
/// retry can take between finding the request not yet completed and
/// sealing its next state (SQLite's busy timeout is 5 s).
pub const ORIGIN_MARGIN: Duration = Duration::from_secs(10);

impl ServerConfig {
    /// The longest what a finished round trip leaves behind stays in
    /// memory: a completion record outlives the state TTL by the clock skew
    /// and [`ORIGIN_MARGIN`], then stays `retention` longer,
    /// and the sweep that forgets it runs every `sweep_interval`. A soak
    /// shorter than this sees memory grow that will level off
    /// (`crate::load::summarize::soak`).
    pub fn keeps_for(&self) -> Duration {
        self.state_ttl + self.clock_skew + ORIGIN_MARGIN + self.retention + self.sweep_interval
    }

    /// What `/stats` publishes of it (`retention`), in seconds.
    pub fn retention_json(&self) -> serde_json::Value {
        serde_json::json!({
            "state_ttl_s": self.state_ttl.as_secs_f64(),
            "clock_skew_s": self.clock_skew.as_secs_f64(),
            "retention_s": self.retention.as_secs_f64(),
            "sweep_interval_s": self.sweep_interval.as_secs_f64(),
            "keeps_for_s": self.keeps_for().as_secs_f64(),
        })
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            allow_remote: false,
            public_url: None,
            store: "memory".into(),
            allow_volatile_store: false,
            allow_evicting_store: false,
            store_memory_budget: DEFAULT_STORE_MEMORY_BUDGET,
            codec: CodecName::Aes256GcmSiv,
            keys: None,
            state_ttl: Duration::from_secs(600),
            clock_skew: Duration::from_secs(5),
            clock: Clock::system(),
            principals: Principals::Demo,
            anonymous_principal: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            response: ResponseMode::Json,
            elicitation_timeout: Duration::from_secs(30),
            max_body: 1024 * 1024,
            max_json_members: super::json_cost::DEFAULT_MAX_MEMBERS,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_body_in_flight: 64 * 1024 * 1024,
            max_body_in_flight_per_principal: 8 * 1024 * 1024,
            min_body_rate: 1024,
            body_rate_grace: Duration::from_secs(2),
            keep_alive_timeout: Duration::from_secs(30),
            max_connections: 8192,
            max_connections_per_principal: None,
            sessions: super::sessions::SessionLimits::default(),
            retention: Duration::from_secs(600),
            sweep_interval: Duration::from_secs(30),
            offer_tools: true,
            flaws: FlawSet::none(),
            hang_limit: Duration::from_secs(60),
            instance_id: None,
        }
    }
}

/// Why a byte size does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No number first.
    #[error("invalid size {0:?}: expected a number with an optional unit")]
    NotANumber(String),
    /// A unit it does not know.
    #[error("invalid size unit in {0:?}: use B, KiB, MiB, kB or MB")]
    Unit(String),
    /// Zero, or more than the address space.
    #[error("size {0:?} is zero or too large")]
    OutOfRange(String),
}

/// Parses a byte size such as `1MiB`, `512KiB`, `64kB` or `1048576`.
pub fn parse_size(s: &str) -> Result<usize, SizeError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| SizeError::NotANumber(s.to_owned()))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1024,
        "m" | "mb" => 1_000_000,
        "mib" => 1024 * 1024,
        "gib" => 1024 * 1024 * 1024,
        _ => return Err(SizeError::Unit(s.to_owned())),
    };
    n.checked_mul(mult)
        .filter(|v| *v > 0)
        .ok_or_else(|| SizeError::OutOfRange(s.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("64kB"), Ok(64_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("1 parsec").is_err());
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn default_is_loopback_and_flawless() {
        let c = ServerConfig::default();
        assert!(c.listen.ip().is_loopback());
        assert!(c.flaws.is_empty());
        assert_eq!("sse".parse::<ResponseMode>(), Ok(ResponseMode::Sse));
    }
}
