//! [`NetWire`]: discovery's [`Wire`] over the network that keeps every
//! request as sent and every reply whole (the harness's [`Logged`]), so
//! oracles judge them and reproducers replay them byte for byte.

use std::sync::Mutex;

use futures::future::BoxFuture;

use crate::client::raw::{self, Exchange, RawError, RawReply, RawRequest};
use crate::discover::{Wire, WireCore};
use crate::fuzz::harness::wire::Logged;

/// A recording wire to one endpoint as one principal.
#[derive(Debug)]
pub struct NetWire {
    core: WireCore,
    log: Mutex<Vec<Logged>>,
    streamed: Mutex<Vec<Exchange>>,
}

impl NetWire {
    /// A wire to the endpoint and as the principal of `core`.
    pub fn new(core: WireCore) -> Self {
        NetWire {
            core,
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
    fn core(&self) -> &WireCore {
        &self.core
    }
    fn record(&self, exchange: Exchange) {
        if let Ok(mut v) = self.streamed.lock() {
            v.push(exchange);
        }
    }
    fn send(&self, req: RawRequest) -> BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(async move {
            let (_, reply) = raw::send(&self.core.http, &req, self.core.timeout).await;
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
