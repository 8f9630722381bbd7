//! What discovery and the checker send requests through: a [`Wire`] knows
//! the endpoint, the principal, the timeout and the HTTP client, hands out
//! JSON-RPC ids, and records every exchange (discovery in its call log, a
//! check in its evidence). What they all know is one [`WireCore`]; [`Log`]
//! is discovery's own wire.

use crate::client::raw::{self, Exchange, RawError, RawReply, RawRequest};
use futures::future::BoxFuture;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// What every [`Wire`] knows: the HTTP client, the endpoint, the
/// principal, the bound on each request, the seed, and the JSON-RPC ids it
/// hands out. A wire holds one and says only how it sends and records.
#[derive(Debug)]
pub struct WireCore {
    /// The shared HTTP client.
    pub http: reqwest::Client,
    /// The MCP endpoint URL.
    pub mcp_url: String,
    /// Bearer token of the principal the flows run as.
    pub token: String,
    /// Bound on every request.
    pub timeout: Duration,
    /// Seed for generated answers and page values.
    pub seed: u64,
    ids: AtomicI64,
}

impl WireCore {
    /// A core for `mcp_url` as the principal `token`; ids start at 1.
    pub fn new(
        http: reqwest::Client,
        mcp_url: &str,
        token: &str,
        timeout: Duration,
        seed: u64,
    ) -> Self {
        WireCore {
            http,
            mcp_url: mcp_url.to_owned(),
            token: token.to_owned(),
            timeout,
            seed,
            ids: AtomicI64::new(1),
        }
    }

    /// The same core with ids starting at `first_id`.
    pub fn first_id(self, first_id: i64) -> Self {
        WireCore {
            ids: AtomicI64::new(first_id),
            ..self
        }
    }

    /// A fresh JSON-RPC id.
    pub fn next_id(&self) -> i64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }
}

/// A recording request sender bound to one endpoint and principal. The
/// getters read its [`WireCore`]; a wire may bound requests tighter
/// ([`Wire::timeout`]) or send another way ([`Wire::send`]).
pub trait Wire: Send + Sync {
    /// The endpoint, principal, client, bound, seed and ids.
    fn core(&self) -> &WireCore;
    /// The shared HTTP client.
    fn http(&self) -> &reqwest::Client {
        &self.core().http
    }
    /// The MCP endpoint URL.
    fn mcp_url(&self) -> &str {
        &self.core().mcp_url
    }
    /// Bearer token of the principal the flows run as.
    fn token(&self) -> &str {
        &self.core().token
    }
    /// Bound on every request.
    fn timeout(&self) -> Duration {
        self.core().timeout
    }
    /// Seed for generated answers and page values.
    fn seed(&self) -> u64 {
        self.core().seed
    }
    /// A fresh JSON-RPC id.
    fn next_id(&self) -> i64 {
        self.core().next_id()
    }
    /// Whether `tool` is known to push its 2025-11-25 elicitations on the
    /// session's standalone GET stream ([`super::ToolProfile::elicits_on_get`]):
    /// the legacy driver then opens that stream for every call of it.
    fn pushes_on_get(&self, tool: &str) -> bool {
        let _ = tool;
        false
    }
    /// Adds an exchange to the record (streams read by hand record here).
    fn record(&self, exchange: Exchange);
    /// Sends `req` under the timeout and records the exchange.
    fn send(&self, req: RawRequest) -> BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(async move {
            let (ex, out) = raw::send(self.http(), &req, self.timeout()).await;
            self.record(ex);
            out
        })
    }
}

/// Discovery's wire: every exchange goes into an in-order log.
#[derive(Debug)]
pub struct Log {
    core: WireCore,
    exchanges: Mutex<Vec<Exchange>>,
}

impl Log {
    /// A wire to `mcp_url` as the principal `token`.
    pub fn new(
        http: reqwest::Client,
        mcp_url: &str,
        token: &str,
        timeout: Duration,
        seed: u64,
    ) -> Self {
        Log {
            core: WireCore::new(http, mcp_url, token, timeout, seed),
            exchanges: Mutex::new(Vec::new()),
        }
    }

    /// Everything recorded so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.exchanges.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Wire for Log {
    fn core(&self) -> &WireCore {
        &self.core
    }
    fn record(&self, exchange: Exchange) {
        if let Ok(mut v) = self.exchanges.lock() {
            v.push(exchange);
        }
    }
}
