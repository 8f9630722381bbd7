//! [`NetWire`]: discovery's [`Wire`] over the network that keeps every
//! request as sent and every reply whole (the harness's [`Logged`]), so
//! oracles judge them and reproducers replay them byte for byte.

use std::sync::Mutex;

use futures::future::BoxFuture;

use crate::client::raw::{Exchange, RawError, RawReply, RawRequest};
use crate::discover::{Wire, WireCore};
use crate::fuzz::harness::wire::Logged;

/// A recording wire to one endpoint as one principal.
#[derive(Debug)]
pub struct NetWire {
    core: WireCore,
    log: Mutex<Vec<Logged>>,
    streamed: Mutex<Vec<Exchange>>,
    get_pushers: Vec<String>,
}

impl NetWire {
    /// A wire to the endpoint and as the principal of `core`.
    pub fn new(core: WireCore) -> Self {
        NetWire {
            core,
            log: Mutex::new(Vec::new()),
            streamed: Mutex::new(Vec::new()),
            get_pushers: Vec::new(),
        }
    }

    /// The same wire, knowing which tools push their 2025-11-25
    /// elicitations on the session's GET stream ([`Wire::pushes_on_get`]).
    pub fn get_pushers(self, tools: Vec<String>) -> Self {
        NetWire {
            get_pushers: tools,
            ..self
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

/// Header bytes past which a server may refuse a request and close
/// (common limits are 8 or 16 KiB in all; 4 KiB leaves room for the rest).
const BIG_HEADERS: usize = 4 * 1024;
/// Body bytes past which a server may refuse a request and close.
const BIG_BODY: usize = 32 * 1024;

fn header_bytes(req: &RawRequest) -> usize {
    req.headers.iter().map(|(k, v)| k.len() + v.len() + 4).sum()
}

/// Whether `req` is large enough that a server may refuse it (431, 413)
/// and close the connection while it is still being written.
fn oversized(req: &RawRequest) -> bool {
    header_bytes(req) > BIG_HEADERS || req.body.len() > BIG_BODY
}

impl NetWire {
    /// Whether the endpoint answers a plain `ping` POST (any HTTP status)
    /// right after `failed`: a server that refused an oversized request is
    /// alive; one that crashed is not. Not logged: it is the oracle's
    /// control, not part of the case.
    async fn answers_a_plain_request(&self, failed: &RawRequest) -> bool {
        let ping = RawRequest::new("control ping", reqwest::Method::POST, &failed.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .token(failed.token.as_deref())
            .body(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.to_vec());
        let (_, reply) = self.core.send(&ping, self.core.timeout).await;
        reply.is_ok()
    }
}

impl Wire for NetWire {
    fn core(&self) -> &WireCore {
        &self.core
    }
    fn pushes_on_get(&self, tool: &str) -> bool {
        self.get_pushers.iter().any(|t| t == tool)
    }
    fn record(&self, exchange: Exchange) {
        if let Ok(mut v) = self.streamed.lock() {
            v.push(exchange);
        }
    }
    fn send(&self, req: RawRequest) -> BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(async move {
            let (_, mut reply) = self.core.send(&req, self.core.timeout).await;
            if let Err(RawError::Transport(e)) = &reply
                && oversized(&req)
                && self.answers_a_plain_request(&req).await
            {
                reply = Err(RawError::Refused(format!(
                    "{e} (a request with {} header bytes and a {} byte body; a plain request \
                     right after was answered)",
                    header_bytes(&req),
                    req.body.len()
                )));
            }
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

#[cfg(test)]
mod tests {
    use super::super::test_http::{Read, read_request};
    use super::*;
    use crate::fuzz::blackbox::oracle::judge;
    use crate::oracle::Oracle;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    /// What the test server does with a request whose head passes 4 KiB.
    #[derive(Clone, Copy, PartialEq)]
    enum OnBig {
        /// Writes a 431 and closes before reading the body.
        Refuse,
        /// Closes before reading the body, writing nothing: what a client
        /// sees when the 431 is lost with the connection.
        Close,
        /// Closes and stops listening (a crash, as far as a client can tell).
        Die,
    }

    /// A server on loopback that answers each small request `200 {}`.
    async fn server(on_big: OnBig) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", l.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                match read_request(&mut c, 4096).await {
                    Read::Request { .. } => {}
                    Read::Truncated => continue,
                    Read::NoHead => {
                        if on_big == OnBig::Refuse {
                            let _ = c
                                .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
                                .await;
                        }
                        drop(c);
                        if on_big == OnBig::Die {
                            return;
                        }
                        continue;
                    }
                }
                let _ = c
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                    .await;
            }
        });
        url
    }

    fn wire(url: &str) -> NetWire {
        let http = reqwest::Client::builder().build().unwrap();
        NetWire::new(WireCore::new(http, url, "alice", Duration::from_secs(5), 1))
    }

    /// A JSON-RPC call with a 16 KiB header and a 1 MiB body.
    fn oversized_call(url: &str) -> RawRequest {
        RawRequest::new("tools/list", reqwest::Method::POST, url)
            .header("content-type", "application/json")
            .header("mcp-name", "n".repeat(16 * 1024))
            .body(
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
                    "a".repeat(1 << 20)
                )
                .into_bytes(),
            )
    }

    #[tokio::test]
    async fn a_server_that_refuses_an_oversized_request_and_closes_is_no_reset() {
        for on_big in [OnBig::Refuse, OnBig::Close] {
            let url = server(on_big).await;
            let w = wire(&url);
            let req = oversized_call(&url);
            let reply = w.send(req.clone()).await;
            // The refusal is read whole (431) or, when the close cut the
            // write, recognised by the control request that follows.
            let seen = match &reply {
                Ok(r) => r.status == 431,
                Err(RawError::Refused(_)) => true,
                Err(_) => false,
            };
            assert!(seen, "{reply:?}");
            if on_big == OnBig::Close {
                assert!(matches!(&reply, Err(RawError::Refused(_))), "{reply:?}");
            }
            let judged = judge(&req, &reply, &url).map(|(o, _)| o);
            assert_ne!(judged, Some(Oracle::ConnectionReset), "{reply:?}");
        }
    }

    #[tokio::test]
    async fn a_server_that_dies_on_an_oversized_request_is_still_a_reset() {
        let url = server(OnBig::Die).await;
        let w = wire(&url);
        let req = oversized_call(&url);
        let reply = w.send(req.clone()).await;
        assert!(matches!(&reply, Err(RawError::Transport(_))), "{reply:?}");
        let judged = judge(&req, &reply, &url).map(|(o, _)| o);
        assert_eq!(judged, Some(Oracle::ConnectionReset), "{reply:?}");
    }

    /// A server that answers the first request on each connection `200 {}`
    /// without `Connection: close`, then closes the connection when the
    /// next request's head arrives, answering nothing: a kept-alive
    /// connection it closed as the client reused it (hyper closes so after
    /// a reply that left the body unread). `calls` counts the answers.
    async fn closes_kept_alive(calls: Arc<AtomicUsize>) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", l.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                let calls = calls.clone();
                tokio::spawn(async move {
                    if let Read::Request { .. } = read_request(&mut c, 4096).await {
                        calls.fetch_add(1, Ordering::Relaxed);
                        let _ = c
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
                            .await;
                        let _ = read_request(&mut c, 4096).await;
                    }
                });
            }
        });
        url
    }

    /// A request sent down a kept-alive connection the server had closed
    /// goes once more on another: both calls are answered, no reset, and
    /// the second reached the server once.
    #[tokio::test]
    async fn a_kept_alive_connection_closed_by_the_server_is_no_reset() {
        let calls = Arc::new(AtomicUsize::new(0));
        let url = closes_kept_alive(calls.clone()).await;
        let w = wire(&url);
        for n in 1..=3 {
            let req = RawRequest::new("ping", reqwest::Method::POST, &url)
                .header("content-type", "application/json")
                .body(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec());
            let reply = w.send(req.clone()).await;
            assert!(matches!(&reply, Ok(r) if r.status == 200), "{n}: {reply:?}");
            let judged = judge(&req, &reply, &url).map(|(o, _)| o);
            assert_ne!(judged, Some(Oracle::ConnectionReset), "{n}");
            assert_eq!(calls.load(Ordering::Relaxed), n);
        }
    }
}
