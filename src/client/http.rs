//! Legs over reqwest: [`exchange`] sends one [`Outgoing`], times it (to
//! headers, to the end of the body) and enforces a per-leg timeout;
//! [`Reqwest`] is that as an [`Exchange`], and [`run_modern`] drives a
//! [`ModernFlow`] over it; [`chunks`] reads a 2025-11-25 call's streams
//! for a [`super::push::CallFlow`].

use super::drive::{Exchange, LegReply, drive};
use super::leg::{Auth, HttpMethod, HttpReply, LegFailure, Outgoing, Target};
use super::modern::ModernFlow;
use super::outcome::{RoundTrip, parse_server_timing};
use super::push::{Chunk, Head};
use crate::protocol::body::Framing;
use futures::stream::{self, BoxStream, StreamExt};
use std::borrow::Cow;
use std::convert::Infallible;
use std::time::{Duration, Instant};

/// Where a server lives and whose tokens to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub mcp_url: String,
    /// Bearer token of the principal that runs the flows.
    pub primary_token: String,
    /// Bearer token of another principal (cross-principal probes).
    pub other_token: Option<String>,
}

impl Endpoint {
    /// An endpoint with a primary token and no other principal.
    pub fn new(mcp_url: impl Into<String>, primary_token: impl Into<String>) -> Self {
        Endpoint {
            mcp_url: mcp_url.into(),
            primary_token: primary_token.into(),
            other_token: None,
        }
    }

    /// The token for `auth`, if configured.
    pub fn token(&self, auth: Auth) -> Option<&str> {
        match auth {
            Auth::Primary => Some(&self.primary_token),
            Auth::Other => self.other_token.as_deref(),
        }
    }

    /// Resolves a target: the MCP URL itself, or a page URL relative to the
    /// MCP URL's origin (absolute URLs are kept).
    pub fn resolve(&self, target: &Target) -> Result<url::Url, AddressError> {
        let base = url::Url::parse(&self.mcp_url)
            .map_err(|e| AddressError::McpUrl(self.mcp_url.clone(), e))?;
        match target {
            Target::Mcp => Ok(base),
            Target::Page { url } => base
                .join(url)
                .map_err(|e| AddressError::PageUrl(url.clone(), e)),
        }
    }

    /// Where `out` goes, and the token it carries.
    pub fn address(&self, out: &Outgoing) -> Result<(url::Url, &str), AddressError> {
        let url = self.resolve(&out.target)?;
        Ok((url, self.token(out.auth).ok_or(AddressError::NoOtherToken)?))
    }
}

/// Why a leg cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The MCP URL does not parse.
    #[error("bad MCP URL {0:?}: {1}")]
    McpUrl(String, url::ParseError),
    /// A page URL does not resolve against it.
    #[error("bad page URL {0:?}: {1}")]
    PageUrl(String, url::ParseError),
    /// A leg as the other principal, and none configured.
    #[error("no token configured for the other principal")]
    NoOtherToken,
}

/// Sends one request and reads the whole body, with a timeout on the lot.
pub async fn exchange(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    out: &Outgoing,
    timeout: Duration,
) -> Result<HttpReply, (LegFailure, Duration)> {
    exchange_answered(client, endpoint, out, timeout).await.0
}

/// [`exchange`], and who answered: the reply's `elicitkit-instance`
/// header, else the peer `IP:PORT` reqwest reports (`None` without a reply).
pub async fn exchange_answered(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    out: &Outgoing,
    timeout: Duration,
) -> (Result<HttpReply, (LegFailure, Duration)>, Option<String>) {
    let mut answered = None;
    let reply = send(client, endpoint, out, timeout, &mut answered).await;
    (reply, answered)
}

async fn send(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    out: &Outgoing,
    timeout: Duration,
    answered: &mut Option<String>,
) -> Result<HttpReply, (LegFailure, Duration)> {
    let started = Instant::now();
    let (url, token) = endpoint
        .address(out)
        .map_err(|e| (LegFailure::Transport(e.to_string()), started.elapsed()))?;
    let method = match out.method {
        HttpMethod::Post => reqwest::Method::POST,
        HttpMethod::Get => reqwest::Method::GET,
    };
    let mut req = client.request(method, url).bearer_auth(token);
    for (k, v) in out.headers.iter() {
        req = req.header(k.as_str(), v.as_str());
    }
    if out.method == HttpMethod::Post {
        req = req.body(out.body.clone());
    }
    let work = async {
        let resp = req.send().await.map_err(|e| describe(&e))?;
        let to_headers = started.elapsed();
        let status = resp.status().as_u16();
        let content_type = content_type_of(resp.headers());
        let server_timing = server_timing_of(resp.headers());
        *answered = header_text(resp.headers(), crate::protocol::headers::INSTANCE)
            .or_else(|| resp.remote_addr().map(|a| a.to_string()));
        let mut resp = resp;
        let mut first = None;
        let mut event = None;
        let sse = content_type
            .as_deref()
            .is_some_and(|c| c.starts_with(Framing::Sse.media_type()));
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
            if first.is_none() && !chunk.is_empty() {
                first = Some(started.elapsed());
            }
            if sse
                && event.is_none()
                && crate::protocol::sse::has_event_end(&[body.as_slice(), chunk.as_ref()])
            {
                event = Some(started.elapsed());
            }
            body.extend_from_slice(&chunk);
        }
        let body = bytes::Bytes::from(body);
        Ok::<_, String>(HttpReply {
            status,
            content_type,
            server_timing,
            body,
            to_headers,
            to_first_byte: first.unwrap_or(to_headers),
            total: started.elapsed(),
            connection: Default::default(),
            to_first_event: event,
        })
    };
    let result = match tokio::time::timeout(timeout, work).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err((LegFailure::Transport(e), started.elapsed())),
        Err(_) => Err((LegFailure::Timeout, started.elapsed())),
    };
    if result.is_err() {
        // Headers may have come, but the reply did not.
        *answered = None;
    }
    result
}

/// A response header's value as text (`None` when absent or not visible ASCII).
pub(crate) fn header_text(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A reply's `Content-Type` as [`HttpReply::content_type`] holds it: the
/// media types MCP servers answer with are borrowed, so most replies copy
/// nothing.
pub(crate) fn content_type_of(headers: &http::HeaderMap) -> Option<Cow<'static, str>> {
    let text = headers.get(http::header::CONTENT_TYPE)?.to_str().ok()?;
    let known = [Framing::Json, Framing::Sse].map(Framing::media_type);
    Some(match known.into_iter().find(|c| *c == text) {
        Some(c) => Cow::Borrowed(c),
        None => Cow::Owned(text.to_owned()),
    })
}

/// A reply's `Server-Timing` durations as [`HttpReply::server_timing`]
/// holds them.
pub(crate) fn server_timing_of(headers: &http::HeaderMap) -> (Option<Duration>, Option<Duration>) {
    headers
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .map_or((None, None), parse_server_timing)
}

/// A reqwest error with its chain of causes, on one line.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// Whether `e` is what a request meets on a kept-alive connection the
/// server had closed, before any reply: the connection closed before the
/// response began, or the write hit a closed (broken, reset) socket. A
/// server that closes after a reply without `Connection: close` leaves
/// such a connection in the pool; the request may be sent again on
/// another.
pub fn stale_connection(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut src = Some(e);
    while let Some(c) = src {
        if c.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
        {
            return true;
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            )
        {
            return true;
        }
        src = c.source();
    }
    false
}

/// The reqwest [`Exchange`]: every leg to `endpoint` (pages resolved
/// against it) over `client`, bounded by `timeout`.
#[derive(Debug, Clone, Copy)]
pub struct Reqwest<'a> {
    /// The HTTP client.
    pub client: &'a reqwest::Client,
    /// Where the MCP endpoint is and whose tokens to use.
    pub endpoint: &'a Endpoint,
    /// Bound on each leg.
    pub timeout: Duration,
}

impl Exchange for Reqwest<'_> {
    type Stop = Infallible;
    async fn send(&mut self, out: Outgoing) -> LegReply {
        exchange(self.client, self.endpoint, &out, self.timeout).await
    }
}

/// Runs `flow` to its end against `endpoint`; every leg has `timeout`.
/// The round trip's `total` is the wall-clock time of the whole flow.
pub async fn run_modern(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    flow: ModernFlow,
    timeout: Duration,
) -> RoundTrip {
    let mut ex = Reqwest {
        client,
        endpoint,
        timeout,
    };
    let Ok(rt) = drive(flow, &mut ex).await;
    rt
}

/// Sends `req` and yields, for a [`super::push::CallFlow`], its head (timed
/// from `started`), its body's chunks and its end, or the error that broke
/// it (before the head: the send's own).
pub fn chunks(
    req: reqwest::RequestBuilder,
    started: Instant,
) -> BoxStream<'static, Chunk<reqwest::Error>> {
    stream::once(req.send())
        .flat_map(move |res| match res {
            Err(e) => stream::iter([Chunk::Failed(e)]).boxed(),
            Ok(resp) => {
                let head = reply_head(resp.status().as_u16(), resp.headers(), started);
                reply_chunks(head, resp.bytes_stream())
            }
        })
        .boxed()
}

/// A streamed reply's head, timed from `started`.
pub fn reply_head(status: u16, headers: &http::HeaderMap, started: Instant) -> Head {
    Head {
        status,
        content_type: header_text(headers, "content-type"),
        timing: header_text(headers, "server-timing"),
        at: started.elapsed(),
    }
}

/// A reply as a [`super::push::CallFlow`] reads it: its head, each piece of
/// `body`, then its end (or the body's failure, then the end). Every way of
/// sending a streamed call reads through it ([`chunks`],
/// [`super::local::Local::chunks`]).
pub fn reply_chunks<E: Send + 'static>(
    head: Head,
    body: impl futures::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
) -> BoxStream<'static, Chunk<E>> {
    let body = body.map(|r| match r {
        Ok(b) => Chunk::Data(b),
        Err(e) => Chunk::Failed(e),
    });
    stream::iter([Chunk::Head(head)])
        .chain(body)
        .chain(stream::iter([Chunk::End]))
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_resolve_against_the_mcp_origin() {
        let ep = Endpoint::new("http://127.0.0.1:8080/mcp", "alice");
        assert_eq!(
            ep.resolve(&Target::Page {
                url: "/flow/abc".into()
            })
            .unwrap()
            .as_str(),
            "http://127.0.0.1:8080/flow/abc"
        );
        assert_eq!(
            ep.resolve(&Target::Page {
                url: "http://127.0.0.1:9/x".into()
            })
            .unwrap()
            .as_str(),
            "http://127.0.0.1:9/x"
        );
        assert_eq!(ep.token(Auth::Other), None);
        assert!(
            Endpoint::new("not a url", "a")
                .resolve(&Target::Mcp)
                .is_err()
        );
    }
}
