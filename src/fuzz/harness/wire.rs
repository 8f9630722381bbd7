//! [`ServiceWire`]: discovery's [`Wire`] over a `tower::Service` instead of
//! a socket, so the harness drives a server in process with the same
//! request builders, walks and page completion that discovery, `check` and
//! `load` use. Every exchange lands in an in-order log the harness judges.

use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::client::local::Local;
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

/// What the harness can drive ([`crate::client::local::McpService`]).
pub use crate::client::local::McpService;

/// A [`Wire`] that calls a service in process.
pub struct ServiceWire {
    service: Local,
    core: WireCore,
    log: Mutex<Vec<Logged>>,
}

impl ServiceWire {
    /// A wire to `service`, which believes it is served at `mcp_url`, as
    /// the principal `token`.
    pub fn new<S: McpService>(
        service: S,
        mcp_url: &str,
        token: &str,
        timeout: Duration,
        seed: u64,
    ) -> Self {
        let service = Local::new(service);
        ServiceWire {
            // Every request to `mcp_url`'s origin goes to the service, read
            // whole or streamed; no socket is opened.
            core: WireCore::new(reqwest::Client::new(), mcp_url, token, timeout, seed)
                .in_process(Some(service.clone())),
            service,
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

impl Wire for ServiceWire {
    fn core(&self) -> &WireCore {
        &self.core
    }
    fn record(&self, exchange: Exchange) {
        // Hand-read streams record here; nothing of the harness does.
        let _ = exchange;
    }
    fn send(&self, req: RawRequest) -> BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(async move {
            let (reply, panic) = self.service.send(&req, self.core.timeout).await;
            self.push(Logged {
                request: req,
                reply: reply.clone(),
                panic,
            });
            reply
        })
    }
}
