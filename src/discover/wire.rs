//! What discovery and the checker send requests through: a [`Wire`] knows
//! the endpoint, the principal, the timeout and the HTTP client (or the
//! endpoint's service, called in process: [`WireCore::in_process`]), hands
//! out JSON-RPC ids, and records every exchange (discovery in its call log,
//! a check in its evidence). What they all know is one [`WireCore`]; [`Log`]
//! is discovery's own wire; [`WireLegs`] drives an MRTR flow's legs over
//! any wire, so a walk and a check's flow leave the same evidence.

use crate::client::drive::{self, LegReply};
use crate::client::http::{self, AddressError, Endpoint};
use crate::client::leg::{HttpReply, LegFailure, Outgoing, Target};
use crate::client::local::Local;
use crate::client::modern::{Ids, WalkEnd};
use crate::client::outcome::parse_server_timing;
use crate::client::page::same_origin;
use crate::client::push::Chunk;
use crate::client::raw::{self, Exchange, RawError, RawReply, RawRequest};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt as _};
use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a request over a [`Wire`] got no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    /// No whole reply.
    #[error("{0}")]
    Send(#[from] RawError),
    /// A reply, but not the result asked for (what it was instead).
    #[error("{0}")]
    Answered(String),
}

/// Why a 2025-11-25 session could not be opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    /// `initialize` got no whole reply.
    #[error("initialize: {0}")]
    Initialize(RawError),
    /// `initialize` was answered, but not with a result.
    #[error("initialize answered {0}")]
    Refused(String),
    /// `initialize` was refused for its credentials (HTTP 401).
    #[error("initialize answered HTTP 401, {0}")]
    Unauthenticated(String),
    /// `notifications/initialized` got no whole reply.
    #[error("notifications/initialized: {0}")]
    Initialized(RawError),
}

/// The message of an error, where a verdict or a report states it.
macro_rules! message_of {
    ($($error:ty),*) => {$(
        impl From<$error> for String {
            fn from(e: $error) -> String {
                e.to_string()
            }
        }
    )*};
}
pub(crate) use message_of;
message_of!(WireError, SessionError);

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
    /// The endpoint is the stdio bridge: its statuses are not the server's
    /// (a flow through it words them as the pipe saw them).
    pub stdio: bool,
    /// The endpoint's service, called in process instead of over the
    /// network ([`WireCore::in_process`]).
    local: Option<Local>,
    ids: Ids,
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
            stdio: false,
            local: None,
            ids: Ids::starting_at(1),
        }
    }

    /// The same core, handing requests for the endpoint's origin to `local`
    /// in process (no socket, no HTTP framing) when given; requests for
    /// other origins (a flow's page elsewhere) still go over the network.
    pub fn in_process(self, local: Option<Local>) -> Self {
        WireCore { local, ..self }
    }

    /// Sends `req` under `timeout`, in process or over the network; the
    /// exchange as evidence and the outcome.
    pub async fn send(
        &self,
        req: &RawRequest,
        timeout: Duration,
    ) -> (Exchange, Result<RawReply, RawError>) {
        match self.local_for(&req.url) {
            Some(local) => {
                let (out, _) = local.send(req, timeout).await;
                (Exchange::of(req, &out), out)
            }
            None => raw::send(&self.http, req, timeout).await,
        }
    }

    /// `req` sent, its reply as a streamed call reads it ([`http::chunks`]),
    /// timed from now; unbounded (the reader keeps the deadline).
    pub fn chunks(&self, req: &RawRequest) -> BoxStream<'static, Chunk<String>> {
        let started = Instant::now();
        match self.local_for(&req.url) {
            Some(local) => local.chunks(req, started),
            None => http::chunks(req.builder(&self.http), started)
                .map(|c| c.map_err(|e| e.to_string()))
                .boxed(),
        }
    }

    fn local_for(&self, url: &str) -> Option<&Local> {
        let local = self.local.as_ref()?;
        same_origin(&self.mcp_url, url).is_ok().then_some(local)
    }

    /// The same core, naming the stdio bridge's statuses as such when
    /// `stdio`.
    pub fn over_stdio(self, stdio: bool) -> Self {
        WireCore { stdio, ..self }
    }

    /// The same core with ids starting at `first_id`.
    pub fn first_id(self, first_id: i64) -> Self {
        WireCore {
            ids: Ids::starting_at(first_id),
            ..self
        }
    }

    /// A fresh JSON-RPC id.
    pub fn next_id(&self) -> i64 {
        self.ids.next()
    }

    /// The ids it hands out, for a flow that sends through it.
    pub fn ids(&self) -> &Ids {
        &self.ids
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
            let (ex, out) = self.core().send(&req, self.timeout()).await;
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

    /// The same wire, calling `local` in process when given
    /// ([`WireCore::in_process`]).
    pub fn in_process(self, local: Option<Local>) -> Self {
        Log {
            core: self.core.in_process(local),
            ..self
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

/// A flow's legs over a [`Wire`] ([`drive::Exchange`]): each leg goes out
/// with [`Wire::send`], under the wire's bound and recorded as its evidence,
/// as the wire's principal (or `other`'s, for [`crate::client::Auth::Other`]).
#[derive(Debug)]
pub struct WireLegs<'w, W: Wire + ?Sized> {
    wire: &'w W,
    endpoint: Endpoint,
    tool: Option<String>,
    /// The body of every MCP reply, in order.
    pub bodies: Vec<Bytes>,
    /// The stdio bridge's silence on the last reply (how long it waited).
    silence: Option<String>,
}

impl<'w, W: Wire + ?Sized> WireLegs<'w, W> {
    /// Legs over `wire`; `other` is the token of the other principal.
    pub fn new(wire: &'w W, other: Option<&str>) -> Self {
        WireLegs {
            endpoint: Endpoint {
                mcp_url: wire.mcp_url().to_owned(),
                primary_token: wire.token().to_owned(),
                other_token: other.map(str::to_owned),
            },
            wire,
            tool: None,
            bodies: Vec::new(),
            silence: None,
        }
    }

    /// Names `tool` in the evidence label of each call
    /// (`tools/call deploy #2 retry`).
    pub fn naming(mut self, tool: &str) -> Self {
        self.tool = Some(tool.to_owned());
        self
    }

    /// Says a walk that ended on the stdio bridge's silence the way a
    /// raw read says it ([`RawReply::rpc`]).
    pub fn explain(&self, end: &mut WalkEnd) {
        if let (WalkEnd::Other(why), Some(waited)) = (end, &self.silence) {
            *why = raw::no_reply(waited);
        }
    }

    fn request(&self, out: &Outgoing) -> Result<RawRequest, AddressError> {
        let (url, token) = self.endpoint.address(out)?;
        let mut req = RawRequest::from_outgoing(out, url, Some(token));
        if let (Some(tool), Target::Mcp) = (&self.tool, &out.target)
            && let Some(rest) = out.leg.strip_prefix("tools/call ")
        {
            req.label = format!("tools/call {tool} {rest}");
        }
        Ok(req)
    }
}

impl<W: Wire + ?Sized> drive::Exchange for WireLegs<'_, W> {
    type Stop = Infallible;
    async fn send(&mut self, out: Outgoing) -> LegReply {
        let started = Instant::now();
        let req = self
            .request(&out)
            .map_err(|e| (LegFailure::Transport(e.to_string()), started.elapsed()))?;
        let reply = match self.wire.send(req).await {
            Ok(r) => r,
            Err(RawError::Timeout(bound)) => return Err((LegFailure::Timeout, bound)),
            Err(e) => return Err((LegFailure::Transport(e.to_string()), started.elapsed())),
        };
        self.silence = reply
            .header(crate::stdio::bridge::NO_REPLY)
            .map(str::to_owned);
        if out.target == Target::Mcp {
            self.bodies.push(reply.body.clone());
        }
        Ok(HttpReply {
            status: reply.status,
            content_type: reply
                .header("content-type")
                .map(|c| Cow::Owned(c.to_owned())),
            server_timing: reply
                .header("server-timing")
                .map_or((None, None), parse_server_timing),
            to_headers: reply.elapsed,
            to_first_byte: reply.elapsed,
            total: reply.elapsed,
            connection: Default::default(),
            to_first_event: None,
            body: reply.body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;

    fn core(mcp_url: &str) -> WireCore {
        let local = Local::new(axum::Router::new().route("/mcp", post(|| async { "in process" })));
        WireCore::new(
            reqwest::Client::new(),
            mcp_url,
            "alice",
            Duration::from_secs(5),
            1,
        )
        .in_process(Some(local))
    }

    /// Requests for the endpoint's origin go to the service in process;
    /// others (a flow's page elsewhere) over the network.
    #[tokio::test]
    async fn only_the_endpoints_origin_is_called_in_process() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let elsewhere = format!("http://{}/page", l.local_addr().unwrap());
        let app = axum::Router::new().route("/page", post(|| async { "over the network" }));
        tokio::spawn(async move { axum::serve(l, app).await });
        // Nothing listens at the endpoint's own address.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mcp_url = format!("http://{}/mcp", closed.local_addr().unwrap());
        drop(closed);
        let c = core(&mcp_url);
        let here = RawRequest::new("here", reqwest::Method::POST, &mcp_url);
        let (ex, reply) = c.send(&here, c.timeout).await;
        assert_eq!(&reply.unwrap().body[..], b"in process");
        assert_eq!(ex.status, Some(200));
        let there = RawRequest::new("there", reqwest::Method::POST, &elsewhere);
        let (_, reply) = c.send(&there, c.timeout).await;
        assert_eq!(&reply.unwrap().body[..], b"over the network");
        let streamed: Vec<_> = c.chunks(&here).collect().await;
        assert!(
            matches!(&streamed[..], [Chunk::Head(h), Chunk::Data(b), Chunk::End] if h.status == 200 && &b[..] == b"in process"),
            "{streamed:?}"
        );
    }
}
