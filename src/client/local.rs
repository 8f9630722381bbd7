//! A service called in process instead of over a socket: [`Local`] hands a
//! [`RawRequest`] to any `tower::Service` of HTTP requests (the stdio
//! bridge's router, a Rust server under the fuzz harness) and reads its reply
//! whole ([`Local::send`], as [`super::raw::send`] does over the network) or
//! as the chunks a streamed call is read in ([`Local::chunks`], as
//! [`super::http::chunks`]). No connection, no HTTP framing: what the
//! service answers is what the reader gets.

use super::http::{reply_chunks, reply_head};
use super::push::Chunk;
use super::raw::{RawError, RawReply, RawRequest, header_pairs};
use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt as _};
use futures::{FutureExt as _, TryStreamExt as _};
use http_body_util::{BodyStream, Full};
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower_service::Service;

/// What can be called in process: any `tower::Service` of
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

/// A reply's head and its body's bytes as they come (an error ends it).
type Reply = (
    http::response::Parts,
    BoxStream<'static, Result<Bytes, String>>,
);

/// One service's call, its type forgotten.
type Call =
    dyn Fn(http::Request<Full<Bytes>>) -> BoxFuture<'static, Result<Reply, String>> + Send + Sync;

/// A service requests are handed to in process. Cheap to clone.
#[derive(Clone)]
pub struct Local {
    call: Arc<Call>,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Local(in-process service)")
    }
}

impl PartialEq for Local {
    /// The same service (clones of one [`Local`]).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.call, &other.call)
    }
}

impl Local {
    /// Requests handed to `service`.
    pub fn new<S: McpService>(service: S) -> Local {
        Local {
            call: Arc::new(move |req| {
                let mut svc = service.clone();
                Box::pin(async move {
                    poll_fn(|cx| svc.ready(cx))
                        .await
                        .map_err(|e| format!("service not ready: {e}"))?;
                    let (parts, body) = svc
                        .send(req)
                        .await
                        .map_err(|e| format!("service error: {e}"))?
                        .into_parts();
                    let bytes = BodyStream::new(body)
                        .map_err(|e| format!("body error: {e}"))
                        .try_filter_map(|frame| async move { Ok(frame.into_data().ok()) })
                        .boxed();
                    Ok((parts, bytes))
                })
            }),
        }
    }

    /// The reply to `req`, read whole within `timeout`, and the panic's
    /// message when the service panicked (the reply is then a transport
    /// error saying so).
    pub async fn send(
        &self,
        req: &RawRequest,
        timeout: Duration,
    ) -> (Result<RawReply, RawError>, Option<String>) {
        let started = Instant::now();
        let http_req = match to_http(req) {
            Ok(r) => r,
            Err(e) => return (Err(e), None),
        };
        let work = async {
            let (parts, mut bytes) = (self.call)(http_req).await.map_err(RawError::Transport)?;
            let mut body = BytesMut::new();
            while let Some(b) = bytes.next().await {
                body.extend_from_slice(&b.map_err(RawError::Transport)?);
            }
            Ok(RawReply {
                status: parts.status.as_u16(),
                headers: header_pairs(&parts.headers),
                body: body.freeze(),
                elapsed: started.elapsed(),
            })
        };
        match tokio::time::timeout(timeout, AssertUnwindSafe(work).catch_unwind()).await {
            Err(_) => (Err(RawError::Timeout(timeout)), None),
            Ok(Err(p)) => {
                let text = panic_text(&*p);
                (Err(RawError::Transport(panicked(&text))), Some(text))
            }
            Ok(Ok(r)) => (r, None),
        }
    }

    /// `req`'s reply as a streamed call reads it: its head (timed from
    /// `started`), its body's chunks and its end, or the error that broke it.
    pub fn chunks(&self, req: &RawRequest, started: Instant) -> BoxStream<'static, Chunk<String>> {
        let call = self.call.clone();
        let http_req = to_http(req).map_err(|e| e.to_string());
        let reply = async move {
            let out = AssertUnwindSafe(call(http_req?)).catch_unwind().await;
            out.map_err(|p| panicked(&panic_text(&*p)))?
        };
        stream::once(reply)
            .flat_map(move |res| match res {
                Err(e) => stream::iter([Chunk::Failed(e)]).boxed(),
                Ok((parts, bytes)) => {
                    let body = AssertUnwindSafe(bytes)
                        .catch_unwind()
                        .map(|r| r.unwrap_or_else(|p| Err(panicked(&panic_text(&*p)))));
                    let head = reply_head(parts.status.as_u16(), &parts.headers, started);
                    reply_chunks(head, body)
                }
            })
            .boxed()
    }
}

/// The `http::Request` for `req`: path and query of its URL, `Host` from
/// its authority, its headers, the bearer token, the body. A request that
/// cannot be sent is a transport error, as the network client's would be.
fn to_http(req: &RawRequest) -> Result<http::Request<Full<Bytes>>, RawError> {
    let url = url::Url::parse(&req.url)
        .map_err(|e| RawError::Transport(format!("bad URL {}: {e}", req.url)))?;
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
        .map_err(|e| RawError::Transport(format!("request not representable: {e}")))
}

fn panicked(text: &str) -> String {
    format!("the service panicked: {text}")
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "non-string panic payload".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::response::IntoResponse as _;
    use axum::routing::post;

    /// `/mcp` echoes the body with a header; `/sse` streams two events;
    /// `/boom` panics.
    fn service() -> Local {
        let router = Router::new()
            .route(
                "/mcp",
                post(|headers: http::HeaderMap, body: Bytes| async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-")
                        .to_owned();
                    ([("X-Seen-Auth", auth)], body).into_response()
                }),
            )
            .route(
                "/sse",
                post(|| async {
                    let parts = ["data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n"]
                        .map(|p| Ok::<_, std::convert::Infallible>(Bytes::from(p)));
                    (
                        [("content-type", "text/event-stream")],
                        Body::from_stream(stream::iter(parts)),
                    )
                }),
            )
            .route(
                "/boom",
                post(|| async {
                    if true {
                        panic!("boom");
                    }
                    "unreached"
                }),
            );
        Local::new(router)
    }

    fn req(path: &str) -> RawRequest {
        RawRequest::new(
            "t",
            reqwest::Method::POST,
            format!("http://127.0.0.1:1{path}"),
        )
        .token(Some("alice"))
        .body(b"{\"x\":1}".to_vec())
    }

    #[tokio::test]
    async fn a_reply_is_read_whole_with_its_headers() {
        let (reply, panic) = service().send(&req("/mcp"), Duration::from_secs(5)).await;
        let reply = reply.unwrap();
        assert_eq!(panic, None);
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("x-seen-auth"), Some("Bearer alice"));
        assert!(
            reply
                .headers
                .iter()
                .all(|(k, _)| *k == k.to_ascii_lowercase())
        );
        assert_eq!(&reply.body[..], b"{\"x\":1}");
        let (missing, _) = service()
            .send(&req("/nowhere"), Duration::from_secs(5))
            .await;
        assert_eq!(missing.unwrap().status, 404);
    }

    #[tokio::test]
    async fn a_stream_comes_as_head_chunks_and_end() {
        let got: Vec<_> = service()
            .chunks(&req("/sse"), Instant::now())
            .collect()
            .await;
        let Some(Chunk::Head(head)) = got.first() else {
            panic!("{got:?}")
        };
        assert!(head.is_sse() && head.status == 200, "{head:?}");
        let data: Vec<u8> = got
            .iter()
            .filter_map(|c| match c {
                Chunk::Data(b) => Some(b.to_vec()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(data, b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\n");
        assert!(matches!(got.last(), Some(Chunk::End)), "{got:?}");
    }

    #[tokio::test]
    async fn a_panicking_service_is_a_transport_failure_saying_so() {
        let (reply, panic) = service().send(&req("/boom"), Duration::from_secs(5)).await;
        assert_eq!(panic.as_deref(), Some("boom"));
        assert!(
            matches!(&reply, Err(RawError::Transport(e)) if e == "the service panicked: boom"),
            "{reply:?}"
        );
        let got: Vec<_> = service()
            .chunks(&req("/boom"), Instant::now())
            .collect()
            .await;
        assert!(
            matches!(&got[..], [Chunk::Failed(e)] if e == "the service panicked: boom"),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn a_reply_later_than_the_bound_is_a_timeout() {
        let slow = Local::new(Router::new().route(
            "/mcp",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        ));
        let bound = Duration::from_millis(50);
        let (reply, _) = slow.send(&req("/mcp"), bound).await;
        assert_eq!(reply.unwrap_err(), RawError::Timeout(bound));
    }
}
