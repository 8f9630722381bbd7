//! [`NetWire`]: discovery's [`Wire`] over the network that keeps every
//! request as sent and every reply whole (the harness's [`Logged`]), so
//! oracles judge them and reproducers replay them byte for byte.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;

use crate::client::raw::{self, Exchange, RawError, RawReply, RawRequest};
use crate::discover::Wire;
use crate::fuzz::harness::wire::Logged;

/// A recording wire to one endpoint as one principal.
#[derive(Debug)]
pub struct NetWire {
    http: reqwest::Client,
    mcp_url: String,
    token: String,
    timeout: Duration,
    seed: u64,
    ids: AtomicI64,
    log: Mutex<Vec<Logged>>,
    streamed: Mutex<Vec<Exchange>>,
}

impl NetWire {
    /// A wire to `mcp_url` as `token`; ids start at `first_id`.
    pub fn new(
        http: reqwest::Client,
        mcp_url: &str,
        token: &str,
        timeout: Duration,
        seed: u64,
        first_id: i64,
    ) -> Self {
        NetWire {
            http,
            mcp_url: mcp_url.to_owned(),
            token: token.to_owned(),
            timeout,
            seed,
            ids: AtomicI64::new(first_id),
            log: Mutex::new(Vec::new()),
            streamed: Mutex::new(Vec::new()),
        }
    }

    /// Takes the whole requests and replies logged since the last call.
    pub fn take_log(&self) -> Vec<Logged> {
        self.log
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }

    /// Takes the exchanges of streams read by hand (2025-11-25 calls).
    pub fn take_streamed(&self) -> Vec<Exchange> {
        self.streamed
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

impl Wire for NetWire {
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
        if let Ok(mut v) = self.streamed.lock() {
            v.push(exchange);
        }
    }
    fn send(&self, req: RawRequest) -> BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(async move {
            let (_, reply) = raw::send(&self.http, &req, self.timeout).await;
            if let Ok(mut v) = self.log.lock() {
                v.push(Logged {
                    request: req,
                    reply: reply.clone(),
                    panic: None,
                });
            }
            reply
        })
    }
}
