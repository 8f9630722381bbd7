//! What discovery and the checker send requests through: a [`Wire`] knows
//! the endpoint, the principal, the timeout and the HTTP client, hands out
//! JSON-RPC ids, and records every exchange (discovery in its call log, a
//! check in its evidence). [`Log`] is discovery's own wire.

use crate::client::raw::{self, Exchange, RawError, RawReply, RawRequest};
use futures::future::BoxFuture;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// A recording request sender bound to one endpoint and principal.
pub trait Wire: Send + Sync {
    /// The shared HTTP client.
    fn http(&self) -> &reqwest::Client;
    /// The MCP endpoint URL.
    fn mcp_url(&self) -> &str;
    /// Bearer token of the principal the flows run as.
    fn token(&self) -> &str;
    /// Bound on every request.
    fn timeout(&self) -> Duration;
    /// Seed for generated answers and page values.
    fn seed(&self) -> u64;
    /// A fresh JSON-RPC id.
    fn next_id(&self) -> i64;
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
    http: reqwest::Client,
    mcp_url: String,
    token: String,
    timeout: Duration,
    seed: u64,
    ids: AtomicI64,
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
            http,
            mcp_url: mcp_url.to_owned(),
            token: token.to_owned(),
            timeout,
            seed,
            ids: AtomicI64::new(1),
            exchanges: Mutex::new(Vec::new()),
        }
    }

    /// Everything recorded so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.exchanges.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Wire for Log {
    fn http(&self) -> &reqwest::Client {
        &self.http
    }
    fn mcp_url(&self) -> &str {
        &self.mcp_url
    }
    fn token(&self) -> &str {
        &self.token
    }
    fn timeout(&self) -> Duration {
        self.timeout
    }
    fn seed(&self) -> u64 {
        self.seed
    }
    fn next_id(&self) -> i64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }
    fn record(&self, exchange: Exchange) {
        if let Ok(mut v) = self.exchanges.lock() {
            v.push(exchange);
        }
    }
}
