//! A lean keep-alive HTTP/1.1 connection to an MCP endpoint, `http` or
//! `https`, for the load generator's hot path.
//!
//! reqwest does per request what a load loop does not need: URL
//! re-parsing for its redirect policy, proxy matching, pool checkout and
//! header building (about a fifth of the generator's CPU on the trivial
//! endpoint). An [`H1Lane`] owns one hyper connection, keeps the
//! `Host` and `Authorization` values ready, and sends each
//! [`Outgoing`] for the MCP endpoint, or for a URL-flow page on the same
//! origin, as is. Everything else (pages elsewhere) stays on reqwest:
//! [`H1Lane::for_endpoint`] gives `None` for an endpoint it does not serve,
//! and [`H1Lane::uri_for`] `None` for a page it does not. Over `https` the
//! lane speaks TLS with the process's shared rustls configuration
//! ([`super::tls::shared`]), whose session cache lets a reconnect resume.
//!
//! The lane polls its hyper connection itself, inside the request's own
//! task, instead of spawning a task per connection: a request then costs
//! no cross-task wake-up (on two cores, every wake-up between threads is
//! a context switch the target pays for too).
//!
//! A lane connects lazily and reconnects before a request when the server
//! closed the connection; after a failed or timed-out request it drops the
//! connection (its state is unknown) and the next request opens a new one.
//! A request is never resent.

use super::http::Endpoint;
use super::leg::{Auth, Headers, HttpMethod, HttpReply, LegFailure, Outgoing, Target};
use super::outcome::{Connection as LegConnection, Opened};
use super::stream::{Stream, Tls};
use crate::protocol::body::Framing;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// The connection half that does the I/O; polled by [`drive`].
type Conn = Pin<Box<Connection<TokioIo<Stream>, Full<Bytes>>>>;

/// The response header naming the instance that answered.
const INSTANCE: HeaderName = HeaderName::from_static(crate::protocol::headers::INSTANCE);

/// An open connection: the request half and the I/O half.
struct Open {
    sender: SendRequest<Full<Bytes>>,
    conn: Conn,
    /// Set once the I/O half has finished (closed by either side).
    ended: bool,
    /// The peer's `IP:PORT`, written once per connection.
    peer: Option<HeaderValue>,
}

/// Largest response body a lane reads (an SSE stream may carry several
/// messages of up to [`crate::protocol::jsonrpc::MAX_MESSAGE_BYTES`]).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The `Authorization` value for bearer `token` (`None`: the token cannot
/// be a header value).
pub fn bearer(token: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("Bearer {token}")).ok()
}

/// One keep-alive HTTP/1.1 connection to the MCP endpoint.
pub struct H1Lane {
    addr: String,
    /// TLS for an `https` endpoint.
    tls: Option<Tls>,
    /// The connection this exchange opened, and how long that took
    /// (`None`: it went on a kept-alive one).
    opened: Option<Opened>,
    host: HeaderValue,
    /// The MCP URL, which pages are resolved against.
    base: url::Url,
    path: http::Uri,
    primary: HeaderValue,
    other: Option<HeaderValue>,
    open: Option<Open>,
    /// The last request's headers, as given and as parsed: a load run sends
    /// the same few headers (one shared list per scenario) every time, so
    /// they are parsed once. The flag: the map holds a `Content-Length` slot
    /// of ours (the given headers had none).
    parsed: Option<(Headers, http::HeaderMap, bool)>,
    /// The last `Content-Length` sent, reused while bodies keep its size.
    length: Option<(usize, HeaderValue)>,
    /// Who answered the latest request that got a reply (a copy, kept
    /// while the next replies name the same instance).
    answered: Option<HeaderValue>,
    /// Whether the last request got a reply (else nobody answered it).
    replied: bool,
}

impl std::fmt::Debug for H1Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Lane")
            .field("addr", &self.addr)
            .field("path", &self.path)
            .field("connected", &self.open.is_some())
            .finish_non_exhaustive()
    }
}

impl H1Lane {
    /// A lane for `endpoint`, or `None` when its URL is not `http` or
    /// `https` with a host (or a token is not a valid header value): such
    /// targets go through reqwest.
    pub fn for_endpoint(endpoint: &Endpoint) -> Option<H1Lane> {
        let url = url::Url::parse(&endpoint.mcp_url).ok()?;
        let host = url.host_str()?;
        let tls = match url.scheme() {
            "http" => None,
            "https" => Some(Tls::to(host)?),
            _ => return None,
        };
        let port = url.port_or_known_default()?;
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        Some(H1Lane {
            base: url.clone(),
            addr: format!("{host}:{port}"),
            tls,
            opened: None,
            host: HeaderValue::from_str(&authority).ok()?,
            path: path.parse().ok()?,
            primary: bearer(&endpoint.primary_token)?,
            other: match &endpoint.other_token {
                Some(t) => Some(bearer(t)?),
                None => None,
            },
            open: None,
            parsed: None,
            length: None,
            answered: None,
            replied: false,
        })
    }

    /// Makes the next requests run as another principal: `primary` and
    /// `other` are [`bearer`] values (a load run spreads its users over
    /// many principals; a pooled lane serves whichever user takes it).
    pub fn authorize(&mut self, primary: &HeaderValue, other: &HeaderValue) {
        if self.primary != *primary {
            self.primary = primary.clone();
        }
        if self.other.as_ref() != Some(other) {
            self.other = Some(other.clone());
        }
    }

    /// The request target (path and query) of `target` when it is on this
    /// lane's origin: the MCP endpoint, or a page that resolves (against
    /// the MCP URL, as a browser would) to the same scheme, host and port.
    pub fn uri_for(&self, target: &Target) -> Option<http::Uri> {
        let Target::Page { url } = target else {
            return Some(self.path.clone());
        };
        let page = self.base.join(url).ok()?;
        let same_origin = page.scheme() == self.base.scheme()
            && page.host_str() == self.base.host_str()
            && page.port_or_known_default() == self.base.port_or_known_default();
        if !same_origin {
            return None;
        }
        match page.query() {
            Some(q) => format!("{}?{q}", page.path()).parse().ok(),
            None => page.path().parse().ok(),
        }
    }

    /// Sends `out` and reads the whole body, all within `timeout`; a target
    /// on another origin fails without sending (see [`H1Lane::uri_for`]).
    pub async fn exchange(
        &mut self,
        out: Outgoing,
        timeout: Duration,
    ) -> Result<HttpReply, (LegFailure, Duration)> {
        match self.uri_for(&out.target) {
            Some(uri) => self.exchange_at(uri, out, timeout).await,
            None => Err((
                LegFailure::Transport(format!("{:?} is not on this lane's origin", out.target)),
                Duration::ZERO,
            )),
        }
    }

    /// Who answered the last exchange: its `elicitkit-instance` response
    /// header, else the `IP:PORT` of the peer it came from; `None` after a
    /// failed exchange (nobody answered). The name is copied only when it
    /// differs from the previous reply's.
    pub fn answered_by(&self) -> Option<&[u8]> {
        self.answered
            .as_ref()
            .filter(|_| self.replied)
            .map(HeaderValue::as_bytes)
    }

    /// Sends `out` to `uri` (from [`H1Lane::uri_for`]) on this lane's
    /// connection and reads the whole body, all within `timeout`.
    pub async fn exchange_at(
        &mut self,
        uri: http::Uri,
        out: Outgoing,
        timeout: Duration,
    ) -> Result<HttpReply, (LegFailure, Duration)> {
        let started = Instant::now();
        self.replied = false;
        self.opened = None;
        // From `started`: `timeout` would read the clock once more. (Capped
        // at 30 years, where tokio's own far future is, so it cannot
        // overflow.)
        let far = Duration::from_secs(86_400 * 365 * 30);
        let deadline = tokio::time::Instant::from_std(started) + timeout.min(far);
        let result = tokio::time::timeout_at(deadline, self.send(uri, out, started)).await;
        let failure = match result {
            Ok(Ok((mut reply, instance))) => {
                if let Some(o) = self.opened {
                    reply.connection = LegConnection::Opened(o);
                }
                let by = instance.or_else(|| self.open.as_ref()?.peer.clone());
                let same = self.answered.as_ref().map(HeaderValue::as_bytes)
                    == by.as_ref().map(HeaderValue::as_bytes);
                if !same {
                    // A copy: the reply's own value shares its read buffer.
                    self.answered = by.and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok());
                }
                self.replied = true;
                return Ok(reply);
            }
            Ok(Err(why)) => LegFailure::Transport(why),
            Err(_) => LegFailure::Timeout,
        };
        // The connection may hold half a response: start afresh next time.
        self.open = None;
        Err((failure, started.elapsed()))
    }

    async fn send(
        &mut self,
        uri: http::Uri,
        out: Outgoing,
        started: Instant,
    ) -> Result<(HttpReply, Option<HeaderValue>), String> {
        let req = self.request(uri, out)?;
        let open = self.ready().await?;
        let Open {
            sender,
            conn,
            ended,
            ..
        } = open;
        let work = async move {
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| super::http::describe(&e))?;
            let to_headers = started.elapsed();
            let status = resp.status().as_u16();
            let content_type = super::http::content_type_of(resp.headers());
            let server_timing = super::http::server_timing_of(resp.headers());
            let instance = resp.headers().get(&INSTANCE).cloned();
            let sse = content_type
                .as_deref()
                .is_some_and(|c| c.starts_with(Framing::Sse.media_type()));
            let (body, first, event) = read_body(resp.into_body(), started, sse).await?;
            let reply = HttpReply {
                status,
                content_type,
                server_timing,
                body,
                to_headers,
                to_first_byte: first.unwrap_or(to_headers),
                total: started.elapsed(),
                connection: LegConnection::Reused,
                to_first_event: event,
            };
            Ok((reply, instance))
        };
        drive(conn, ended, std::pin::pin!(work)).await
    }

    fn request(
        &mut self,
        uri: http::Uri,
        out: Outgoing,
    ) -> Result<http::Request<Full<Bytes>>, String> {
        // The body is moved, not copied: a leg is sent once.
        let (method, body) = match out.method {
            HttpMethod::Post => (http::Method::POST, Bytes::from(out.body)),
            HttpMethod::Get => (http::Method::GET, Bytes::new()),
        };
        let cached = self
            .parsed
            .as_ref()
            .filter(|(given, ..)| Arc::ptr_eq(given, &out.headers) || *given == out.headers);
        let (mut headers, own_length) = match cached {
            Some((_, map, own)) => (map.clone(), *own),
            None => {
                // Kept with `Host`, an `Authorization` and a `Content-Length`
                // slot, so a copy takes this request's values without
                // growing (a copy has no spare room).
                let mut map = parse_headers(&out.headers)?;
                map.insert(HOST, self.host.clone());
                map.insert(AUTHORIZATION, self.token(out.auth)?.clone());
                let own = !map.contains_key(CONTENT_LENGTH);
                if own {
                    map.insert(CONTENT_LENGTH, HeaderValue::from_static("0"));
                }
                self.parsed = Some((out.headers.clone(), map.clone(), own));
                (map, own)
            }
        };
        // The copy holds the token it was cached with: most requests are
        // that principal's, and keeping it saves a copy and an insert.
        let auth = self.token(out.auth)?;
        if headers.get(AUTHORIZATION) != Some(auth) {
            headers.insert(AUTHORIZATION, auth.clone());
        }
        if own_length {
            // What hyper would add: the length of a body that has bytes,
            // nothing for an empty one.
            if body.is_empty() {
                headers.remove(CONTENT_LENGTH);
            } else {
                headers.insert(CONTENT_LENGTH, self.content_length(body.len()));
            }
        }
        let mut req = http::Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        Ok(req)
    }

    /// The `Authorization` value for `auth`.
    fn token(&self, auth: Auth) -> Result<&HeaderValue, String> {
        match auth {
            Auth::Primary => Ok(&self.primary),
            Auth::Other => self
                .other
                .as_ref()
                .ok_or_else(|| "no token configured for the other principal".to_owned()),
        }
    }

    /// `Content-Length: len`, shared with the previous request of that size.
    fn content_length(&mut self, len: usize) -> HeaderValue {
        match &self.length {
            Some((l, v)) if *l == len => v.clone(),
            _ => {
                let v = HeaderValue::from(len);
                self.length = Some((len, v.clone()));
                v
            }
        }
    }

    /// The connection, reopened when there is none or the server closed it
    /// (nothing was sent on it yet, so opening another is safe).
    async fn ready(&mut self) -> Result<&mut Open, String> {
        if let Some(o) = self.open.as_mut() {
            // Let the I/O half notice a close that arrived while idle.
            std::future::poll_fn(|cx| {
                if !o.ended && o.conn.as_mut().poll(cx).is_ready() {
                    o.ended = true;
                }
                Poll::Ready(())
            })
            .await;
            if !o.ended {
                // Ready once the connection finished the previous exchange,
                // which takes polling its I/O half.
                let Open {
                    sender,
                    conn,
                    ended,
                    ..
                } = o;
                let poll_ready = std::pin::pin!(std::future::poll_fn(|cx| sender.poll_ready(cx)));
                let ready = drive(conn, ended, poll_ready).await;
                if ready.is_ok() && !o.ended {
                    return self.open.as_mut().ok_or_else(String::new);
                }
            }
        }
        self.open = None;
        let (stream, opened) = super::stream::open(&self.addr, self.tls.as_ref())
            .await
            .map_err(|e| e.to_string())?;
        self.opened = Some(opened);
        let peer = stream
            .peer_addr()
            .ok()
            .and_then(|a| HeaderValue::from_str(&a.to_string()).ok());
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| super::http::describe(&e))?;
        Ok(self.open.insert(Open {
            sender,
            conn: Box::pin(conn),
            ended: false,
            peer,
        }))
    }
}

/// Header names and values most MCP requests carry, kept static: the lane
/// copies its header map for every request, and copying a static name or
/// value touches no reference count (a parsed one costs an atomic
/// increment and decrement per request).
const STATIC_NAMES: [&str; 4] = [
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
];
const STATIC_VALUES: [&str; 9] = [
    Framing::Json.media_type(),
    crate::protocol::body::ACCEPT_BOTH,
    crate::protocol::version::MODERN,
    crate::protocol::version::LEGACY,
    crate::protocol::mrtr::METHOD_TOOLS_CALL,
    crate::protocol::mrtr::METHOD_TOOLS_LIST,
    crate::protocol::mrtr::METHOD_PROMPTS_GET,
    crate::protocol::mrtr::METHOD_RESOURCES_READ,
    crate::protocol::mrtr::METHOD_DISCOVER,
];

/// The headers of an [`Outgoing`] as a header map, with room for three more.
fn parse_headers(given: &[(String, String)]) -> Result<http::HeaderMap, String> {
    let mut map = http::HeaderMap::with_capacity(given.len() + 3);
    for (k, v) in given {
        let known = STATIC_NAMES.iter().find(|n| n.eq_ignore_ascii_case(k));
        let name = if k.eq_ignore_ascii_case("content-type") {
            CONTENT_TYPE
        } else if let Some(n) = known {
            HeaderName::from_static(n)
        } else {
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?
        };
        let value = match STATIC_VALUES.iter().find(|x| **x == v.as_str()) {
            Some(x) => HeaderValue::from_static(x),
            None => HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?,
        };
        map.append(name, value);
    }
    Ok(map)
}

/// Runs `work` (a request on `conn`'s sender) while polling `conn`, the
/// I/O half, in the same task. When the connection ends first, `work`
/// still finishes: hyper fails a request whose connection is gone.
/// `work` is pinned by the caller: taken by value, an async fn would hold
/// it twice (argument and local), and every round trip's future with it.
fn drive<'a, F: Future>(
    conn: &'a mut Conn,
    ended: &'a mut bool,
    mut work: Pin<&'a mut F>,
) -> impl Future<Output = F::Output> + 'a {
    std::future::poll_fn(move |cx| {
        // Twice: I/O progress may complete the work within one wake-up.
        for _ in 0..2 {
            if let Poll::Ready(v) = work.as_mut().poll(cx) {
                return Poll::Ready(v);
            }
            if !*ended && conn.as_mut().poll(cx).is_ready() {
                *ended = true;
            }
        }
        Poll::Pending
    })
}

/// Reads a whole body (at most [`MAX_BODY_BYTES`]), noting when its first
/// byte arrived and, for an SSE stream (`sse`), when its first whole event
/// had. A body of one frame is kept without a copy.
async fn read_body(
    body: hyper::body::Incoming,
    started: Instant,
    sse: bool,
) -> Result<(Bytes, Option<Duration>, Option<Duration>), String> {
    let mut body = Limited::new(body, MAX_BODY_BYTES);
    let mut first: Option<Duration> = None;
    let mut event: Option<Duration> = None;
    let mut one: Option<Bytes> = None;
    let mut many: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(
                |e| match e.downcast_ref::<http_body_util::LengthLimitError>() {
                    Some(_) => format!("response body larger than {MAX_BODY_BYTES} bytes"),
                    None => super::http::describe(e.as_ref()),
                },
            )?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        if first.is_none() {
            first = Some(started.elapsed());
        }
        if sse && event.is_none() {
            // The event ends at the first blank line of the stream so far.
            let ended = match (&one, many.is_empty()) {
                (Some(prev), true) => {
                    crate::protocol::sse::has_event_end(&[prev.as_ref(), data.as_ref()])
                }
                _ => crate::protocol::sse::has_event_end(&[many.as_slice(), data.as_ref()]),
            };
            if ended {
                event = Some(started.elapsed());
            }
        }
        match one.take() {
            None if many.is_empty() => one = Some(data),
            None => many.extend_from_slice(&data),
            Some(prev) => {
                many.extend_from_slice(&prev);
                many.extend_from_slice(&data);
            }
        }
    }
    let bytes = one.unwrap_or_else(|| Bytes::from(many));
    Ok((bytes, first, event))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_parsed_headers_read_the_same() {
        let given: Vec<(String, String)> = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "stats"),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("X-Other", "tools/call "),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let map = parse_headers(&given).unwrap();
        assert_eq!(map.len(), given.len());
        for (k, v) in &given {
            assert_eq!(map.get(k.as_str()).unwrap(), v.as_str(), "{k}");
        }
        // The lowercase names are the protocol's header names.
        use crate::protocol::headers::{METHOD, NAME, PROTOCOL_VERSION, SESSION_ID};
        for (ours, theirs) in STATIC_NAMES
            .iter()
            .zip([PROTOCOL_VERSION, METHOD, NAME, SESSION_ID])
        {
            assert!(ours.eq_ignore_ascii_case(theirs), "{ours} vs {theirs}");
        }
        let bad = vec![("Mcp-Name".to_string(), "a\nb".to_string())];
        assert!(
            parse_headers(&bad).is_err(),
            "a value not from the table is still checked"
        );
    }

    #[test]
    fn http_and_https_targets_get_a_lane() {
        let lane = H1Lane::for_endpoint(&Endpoint::new("http://127.0.0.1:8080/mcp?x=1", "alice"));
        let lane = lane.expect("plain http has a lane");
        assert_eq!(lane.addr, "127.0.0.1:8080");
        assert_eq!(lane.host, "127.0.0.1:8080");
        assert_eq!(lane.path, "/mcp?x=1");
        assert_eq!(lane.primary, "Bearer alice");
        assert!(lane.other.is_none());
        let v6 = H1Lane::for_endpoint(&Endpoint::new("http://[::1]/mcp", "a")).unwrap();
        assert_eq!(v6.addr, "[::1]:80");
        let tls = H1Lane::for_endpoint(&Endpoint::new("https://localhost/mcp", "a")).unwrap();
        assert_eq!(
            (tls.addr.as_str(), tls.tls.is_some()),
            ("localhost:443", true)
        );
        assert!(lane.tls.is_none());
        assert!(H1Lane::for_endpoint(&Endpoint::new("ftp://127.0.0.1/mcp", "a")).is_none());
        assert!(H1Lane::for_endpoint(&Endpoint::new("not a url", "a")).is_none());
        assert!(H1Lane::for_endpoint(&Endpoint::new("http://127.0.0.1/", "bad\ntoken")).is_none());
        let page = |url: &str| lane.uri_for(&Target::Page { url: url.into() });
        assert_eq!(lane.uri_for(&Target::Mcp).unwrap(), "/mcp?x=1");
        assert_eq!(page("/flow/a?b=1#frag").unwrap(), "/flow/a?b=1");
        assert_eq!(page("flow/a").unwrap(), "/flow/a");
        assert_eq!(page("http://127.0.0.1:8080/p").unwrap(), "/p");
        assert!(page("http://127.0.0.1:8081/p").is_none());
        assert!(page("https://127.0.0.1:8080/p").is_none());
        assert!(page("http://localhost:8080/p").is_none());
    }
}
