//! [`ServiceWire`]: discovery's [`Wire`] over a `tower::Service` instead of
//! a socket, so the harness drives a server in process with the same
//! request builders, walks and page completion that discovery, `check` and
//! `load` use. Every exchange lands in an in-order log the harness judges.

use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use http_body_util::{BodyExt as _, Full};
use tower_service::Service;

use crate::client::raw::{Exchange, RawError, RawReply, RawRequest};
use crate::discover::{Wire, WireCore};

/// Label prefix of requests whose HTTP framing (`Accept`, `Content-Type`)
/// was broken on purpose: a plain-text refusal of them is fair.
pub const FRAMING: &str = "[framing] ";

/// Label prefix of requests whose body is no valid JSON-RPC request (so
/// no id survives, and a reply with `id: null` is fair).
pub const MALFORMED: &str = "[malformed] ";

/// One request and what came back.
#[derive(Debug, Clone)]
pub struct Logged {
    /// The request as sent.
    pub request: RawRequest,
    /// The reply, or why there was none.
    pub reply: Result<RawReply, RawError>,
    /// A panic message, when the service panicked.
    pub panic: Option<String>,
}

impl Logged {
    /// The exchange as evidence text.
    pub fn exchange(&self) -> Exchange {
        Exchange {
            label: self.request.label.clone(),
            request: self.request.evidence(),
            response: match (&self.reply, &self.panic) {
                (_, Some(p)) => format!("the service panicked: {p}"),
                (Ok(r), None) => r.evidence(),
                (Err(e), None) => e.to_string(),
            },
            status: self.reply.as_ref().ok().map(|r| r.status),
        }
    }
}

/// What the harness can drive: any `tower::Service` of
/// `http::Request<Full<Bytes>>` answering `http::Response<B>` for a body `B`
/// of `Bytes` (an axum `Router`, rmcp's `StreamableHttpService`, ...),
/// cloneable and shareable across threads. Implemented for every such
/// service; name it only in bounds.
pub trait McpService: Clone + Send + Sync + 'static {
    /// The response body.
    type Body: http_body::Body<Data = Bytes, Error: std::fmt::Display> + Send + 'static;
    /// The service's error.
    type Error: std::fmt::Display + Send;
    /// The response future.
    type Future: std::future::Future<Output = Result<http::Response<Self::Body>, Self::Error>>
        + Send;
    /// `Service::poll_ready`.
    fn ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>>;
    /// `Service::call`.
    fn send(&mut self, req: http::Request<Full<Bytes>>) -> Self::Future;
}

impl<S, B> McpService for S
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Error: std::fmt::Display + Send,
    S::Future: Send,
    B: http_body::Body<Data = Bytes, Error: std::fmt::Display> + Send + 'static,
{
    type Body = B;
    type Error = S::Error;
    type Future = S::Future;
    fn ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        Service::poll_ready(self, cx)
    }
    fn send(&mut self, req: http::Request<Full<Bytes>>) -> Self::Future {
        Service::call(self, req)
    }
}

/// A [`Wire`] that calls a service in process.
pub struct ServiceWire<S> {
    service: S,
    core: WireCore,
    log: Mutex<Vec<Logged>>,
}

impl<S> ServiceWire<S> {
    /// A wire to `service`, which believes it is served at `mcp_url`, as
    /// the principal `token`.
    pub fn new(service: S, mcp_url: &str, token: &str, timeout: Duration, seed: u64) -> Self {
        ServiceWire {
            service,
            // Its client never sends (no socket is opened): `Wire` wants one.
            core: WireCore::new(reqwest::Client::new(), mcp_url, token, timeout, seed),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Takes everything logged since the last call.
    pub fn take_log(&self) -> Vec<Logged> {
        self.log
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }

    fn push(&self, l: Logged) {
        if let Ok(mut v) = self.log.lock() {
            v.push(l);
        }
    }
}

/// The `http::Request` for `req`: path and query of its URL, `Host` from
/// its authority, its headers, the bearer token, the body.
pub fn to_http(req: &RawRequest) -> Result<http::Request<Full<Bytes>>, String> {
    let url = url::Url::parse(&req.url).map_err(|e| format!("bad URL {}: {e}", req.url))?;
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let mut b = http::Request::builder()
        .method(req.method.as_str())
        .uri(path);
    if let Some(host) = url.host_str() {
        let host = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        b = b.header(http::header::HOST, host);
    }
    if let Some(t) = &req.token {
        b = b.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
    }
    for (k, v) in &req.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Full::new(Bytes::from(req.body.clone())))
        .map_err(|e| format!("request not representable: {e}"))
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// Calls `service` once with `req`, reading the whole body, under `timeout`.
pub async fn call<S: McpService>(
    service: &S,
    req: &RawRequest,
    timeout: Duration,
) -> (Result<RawReply, RawError>, Option<String>) {
    let started = Instant::now();
    let http_req = match to_http(req) {
        Ok(r) => r,
        Err(e) => return (Err(RawError::Transport(e)), None),
    };
    let mut svc = service.clone();
    let work = async move {
        poll_fn(|cx| svc.ready(cx))
            .await
            .map_err(|e| RawError::Transport(format!("service not ready: {e}")))?;
        let resp = McpService::send(&mut svc, http_req)
            .await
            .map_err(|e| RawError::Transport(format!("service error: {e}")))?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| RawError::Transport(format!("body error: {e}")))?
            .to_bytes();
        Ok(RawReply {
            status: parts.status.as_u16(),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body,
            elapsed: started.elapsed(),
        })
    };
    match tokio::time::timeout(timeout, AssertUnwindSafe(work).catch_unwind()).await {
        Err(_) => (Err(RawError::Timeout(timeout)), None),
        Ok(Err(p)) => {
            let text = panic_text(&*p);
            (
                Err(RawError::Transport(format!("the service panicked: {text}"))),
                Some(text),
            )
        }
        Ok(Ok(r)) => (r, None),
    }
}

impl<S: McpService> Wire for ServiceWire<S> {
    fn core(&self) -> &WireCore {
        &self.core
    }
    fn record(&self, exchange: Exchange) {
        // Hand-read streams record here; nothing of the harness does.
        let _ = exchange;
    }
    fn send(&self, req: RawRequest) -> BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(async move {
            let (reply, panic) = call(&self.service, &req, self.core.timeout).await;
            self.push(Logged {
                request: req,
                reply: reply.clone(),
                panic,
            });
            reply
        })
    }
}
