//! Tail stalls on a reused connection (latency; no spec keyword, judged
//! against the transport pages §3.2 / §4.3): a server that writes a reply in
//! two pieces with TCP_NODELAY off holds the second piece (the body, or the
//! chunked terminator) in Nagle's algorithm until the client ACKs the first,
//! and clients delay that ACK by ~40 ms. A one-shot request cannot show it
//! (fresh connections are ACKed at once), so this check sends a series of
//! cheap requests (a read-only tool call, a form tool's first round or
//! `tools/list`; on 2025-11-25 `tools/list` within a session) over one
//! keep-alive HTTP/1.1 connection and times, per reply, the gap between its
//! response head and the end of its body. When a meaningful share of the
//! replies stall 30–220 ms in their tail (the window load uses), it takes a
//! second look with each request on a fresh connection, whose first data
//! segments the client's kernel ACKs at once (so the look does not depend
//! on how soon a busy machine schedules the checker; `TCP_QUICKACK` is armed
//! as well): Nagle + delayed ACK stalls vanish then, while a busy machine's
//! or a slow server's stay. Only stalls that vanish WARN; stalls that stay
//! are INFO (slow, not the Nagle signature). These checks run alone.

use super::legacy_session::{close, open, request};
use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::RawRequest;
use crate::findings::Severity;
use crate::report::format::ms;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::time::{Duration, Instant};

/// Requests sent on the connection (the first, on a fresh connection, is
/// not counted).
pub const REQUESTS: usize = 80;
/// Requests of the second look, each on its own connection.
pub const FRESH_REQUESTS: usize = 20;
pub use crate::client::stall::{STALL_MAX, STALL_MIN};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-tail-stall",
            "§4.3 (transport latency; no spec keyword)",
            Should,
            Modern,
            "replies on a reused connection do not stall ~40 ms in their tail (TCP_NODELAY off: Nagle + delayed ACK)",
            modern,
            http("TCP segments (Nagle and delayed ACKs)"),
            alone
        ),
        check!(
            "legacy-tail-stall",
            "§3.2 (transport latency; no spec keyword)",
            Should,
            Legacy,
            "session replies on a reused connection do not stall ~40 ms in their tail (TCP_NODELAY off: Nagle + delayed ACK)",
            legacy,
            http("TCP segments (Nagle and delayed ACKs)"),
            alone
        ),
    ]
}

/// One reply's timing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Request sent → response head.
    pub head: Duration,
    /// Response head → end of body.
    pub tail: Duration,
}

impl Timing {
    /// Whether the tail is a stall.
    pub fn stalled(&self) -> bool {
        crate::client::stall::is_stall(self.tail)
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The stalled replies' tails when they form a pattern, sorted (ms).
fn stall_pattern(timings: &[Timing]) -> Option<Vec<f64>> {
    let mut tails: Vec<f64> = timings
        .iter()
        .filter(|t| t.stalled())
        .map(|t| millis(t.tail))
        .collect();
    if !crate::client::stall::is_pattern(tails.len() as u64, timings.len() as u64) {
        return None;
    }
    tails.sort_by(f64::total_cmp);
    Some(tails)
}

/// The verdict over the timings of the counted replies (`first`) and, when
/// they stall, of the second look with immediate ACKs (`quick`: `None` when
/// it could not be taken, with the reason).
pub fn judge(first: &[Timing], quick: Option<Result<&[Timing], String>>, what: &str) -> Verdict {
    if first.is_empty() {
        return Verdict::skip("no reply was timed");
    }
    let Some(tails) = stall_pattern(first) else {
        let worst = first.iter().map(|t| t.tail).max().unwrap_or_default();
        return Verdict::pass(format!(
            "{} of {} {what} replies stalled in their tail (slowest tail {} ms)",
            first.iter().filter(|t| t.stalled()).count(),
            first.len(),
            ms(millis(worst))
        ));
    };
    let seen = format!(
        "{} of {} {what} replies on one keep-alive connection took {}–{} ms (median {} ms) \
         from their head to the end of their body",
        tails.len(),
        first.len(),
        ms(tails[0]),
        ms(tails[tails.len() - 1]),
        ms(tails[tails.len() / 2]),
    );
    let quick = match quick {
        Some(Ok(q)) if !q.is_empty() => q,
        Some(Ok(_)) => return Verdict::info(format!("{seen}; the second look timed no reply")),
        Some(Err(e)) => {
            return Verdict::info(format!(
                "{seen}; not confirmed as Nagle + delayed ACK: the second look failed: {e}"
            ));
        }
        None => {
            return Verdict::info(format!(
                "{seen}; not confirmed as Nagle + delayed ACK (no second look was taken)"
            ));
        }
    };
    let quick_stalls = quick.iter().filter(|t| t.stalled()).count();
    let share = |n: usize, of: usize| n as f64 / of as f64;
    if stall_pattern(quick).is_some()
        || share(quick_stalls, quick.len()) * 4.0 > share(tails.len(), first.len())
    {
        return Verdict::info(format!(
            "{seen}; but {quick_stalls} of {} replies stalled as well when the client ACKed \
             every segment at once, so this is not Nagle + delayed ACK: the server or the \
             machine is slow",
            quick.len()
        ));
    }
    Verdict::violation(
        Severity::Should,
        format!(
            "{}. {seen}; with the client ACKing at once, {quick_stalls} of {} did (the \
             delayed-ACK signature)",
            crate::client::stall::ADVICE,
            quick.len()
        ),
    )
    .expecting("each reply's body follows its head without a delayed-ACK wait (< 30 ms)")
}

/// A connection whose client side can ACK every segment at once
/// (`TCP_QUICKACK`, re-armed around each read and write because Linux
/// leaves quick-ACK mode on its own).
struct Conn {
    stream: tokio::net::TcpStream,
    quick_ack: bool,
}

impl Conn {
    fn arm(&self) {
        #[cfg(target_os = "linux")]
        if self.quick_ack {
            use std::os::fd::AsRawFd as _;
            let one: libc::c_int = 1;
            // SAFETY: the fd is the open socket `self.stream` owns, and the
            // option value is a c_int of the size passed.
            unsafe {
                libc::setsockopt(
                    self.stream.as_raw_fd(),
                    libc::IPPROTO_TCP,
                    libc::TCP_QUICKACK,
                    (&raw const one).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }
}

impl tokio::io::AsyncRead for Conn {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        this.arm();
        std::pin::Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Conn {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = std::pin::Pin::new(&mut this.stream).poll_write(cx, buf);
        this.arm();
        r
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// A request to send on the connection.
fn to_hyper(req: &RawRequest, host: &str) -> Option<hyper::Request<Full<Bytes>>> {
    let url = url::Url::parse(&req.url).ok()?;
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let mut b = hyper::Request::builder()
        .method(req.method.as_str())
        .uri(path)
        .header("host", host);
    if let Some(t) = &req.token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    for (k, v) in &req.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Full::new(Bytes::from(req.body.clone()))).ok()
}

/// How the replies are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Every request on one keep-alive connection; the first reply (on the
    /// fresh connection) is not counted.
    Reused,
    /// Every request on a fresh connection whose client ACKs at once: the
    /// kernel ACKs the first data segments of a connection immediately
    /// (whatever the load on the machine), and `TCP_QUICKACK` is armed too.
    Fresh,
}

/// An HTTP/1.1 connection to the target: its sender, the task driving it
/// and the `Host` value.
type Connected = (
    hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    tokio::task::JoinHandle<Result<(), hyper::Error>>,
    String,
);

async fn connect(p: &Probe, quick_ack: bool) -> Result<Connected, String> {
    let url = url::Url::parse(&p.settings().target.mcp_url).map_err(|e| e.to_string())?;
    if url.scheme() != "http" {
        return Err("tail timing needs a plain http target (TLS hides the segments)".into());
    }
    let host = url
        .host_str()
        .ok_or("the target URL has no host")?
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let authority = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.clone(),
    };
    let limit = p.settings().target.timeout;
    let stream = tokio::time::timeout(limit, tokio::net::TcpStream::connect((host.as_str(), port)))
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let io = TokioIo::new(Conn { stream, quick_ack });
    let (sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    Ok((sender, tokio::spawn(conn), authority))
}

/// Sends `make(i)` for each `i` as `look` says and times each reply. Ends
/// early once the outcome is plain (many stalls already).
async fn time_replies(
    p: &Probe,
    make: impl Fn(usize) -> RawRequest,
    look: Look,
) -> Result<Vec<Timing>, String> {
    let limit = p.settings().target.timeout;
    let (mut sender, mut driver, authority) = connect(p, look == Look::Fresh).await?;
    let started = Instant::now();
    let mut out = Vec::new();
    let mut failure = None;
    let count = match look {
        Look::Reused => REQUESTS + 1,
        Look::Fresh => FRESH_REQUESTS,
    };
    for i in 0..count {
        if started.elapsed() > limit / 2 {
            break;
        }
        if look == Look::Fresh && i > 0 {
            driver.abort();
            match connect(p, true).await {
                Ok((s, d, _)) => (sender, driver) = (s, d),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let raw = make(i);
        let Some(req) = to_hyper(&raw, &authority) else {
            failure = Some("the request does not build".to_owned());
            break;
        };
        if sender.ready().await.is_err() {
            failure = Some(format!(
                "the server closed the connection after {i} replies: it does not keep connections alive"
            ));
            break;
        }
        let t0 = Instant::now();
        let resp = match tokio::time::timeout(limit, sender.send_request(req)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                failure = Some(format!("request {}: {e}", i + 1));
                break;
            }
            Err(_) => {
                failure = Some(format!("request {}: no reply within {limit:?}", i + 1));
                break;
            }
        };
        let head = t0.elapsed();
        let t_head = Instant::now();
        let mut body = resp.into_body();
        let mut broken = false;
        loop {
            match tokio::time::timeout(limit, body.frame()).await {
                Ok(Some(Ok(_))) => {}
                Ok(None) => break,
                Ok(Some(Err(_))) | Err(_) => {
                    broken = true;
                    break;
                }
            }
        }
        if broken {
            failure = Some(format!("reply {}: the body did not end", i + 1));
            break;
        }
        if i > 0 || look == Look::Fresh {
            out.push(Timing {
                head,
                tail: t_head.elapsed(),
            });
        }
        let stalls = out.iter().filter(|t| t.stalled()).count();
        if out.len() >= 10 && stalls * 2 >= out.len() {
            break;
        }
    }
    driver.abort();
    p.record(super::model::Exchange {
        label: match look {
            Look::Reused => format!("{} requests on one keep-alive connection", out.len() + 1),
            Look::Fresh => format!(
                "second look: {} requests, each on a fresh connection the client ACKs at once",
                out.len()
            ),
        },
        request: make(0).evidence(),
        response: out
            .iter()
            .map(|t| {
                let (head, tail) = (ms(millis(t.head)), ms(millis(t.tail)));
                format!("head {head} ms, tail {tail} ms")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        status: None,
    });
    match failure {
        Some(f) if out.len() < 5 => Err(f),
        _ => Ok(out),
    }
}

/// The cheap request timed on 2026-07-28: a call of a read-only tool that
/// does not elicit (it changes nothing), else the first round of a form
/// tool (its `input_required` reply; nothing runs before an answer), else
/// `tools/list`. Calls take the path real replies take (a server may frame
/// them differently from lists).
fn cheap_request(p: &Probe) -> (String, Box<dyn Fn(usize) -> RawRequest + Send + Sync + '_>) {
    let t = p.target();
    let read_only = t.tools.iter().find(|x| x.read_only && !x.elicits());
    let form = t.form_tools().find(|x| p.target().off_origin(x).is_none());
    match read_only.or(form) {
        Some(tool) => {
            let tool = tool.clone();
            let what = format!("tools/call {}", tool.name);
            let label = what.clone();
            (
                what,
                Box::new(move |i| {
                    p.call_request(
                        format!("{label} #{}", i + 1),
                        &tool,
                        &all_modes(),
                        None,
                        None,
                    )
                }),
            )
        }
        None => (
            p.target().plain_method().into(),
            Box::new(|i| {
                let plain = p.target().plain_method();
                p.modern_request(
                    format!("{plain} #{}", i + 1),
                    plain,
                    json!({}),
                    &all_modes(),
                )
            }),
        ),
    }
}

/// Times the replies, and when they stall, takes the second look.
async fn look_twice(p: &Probe, make: impl Fn(usize) -> RawRequest, what: &str) -> Verdict {
    let first = match time_replies(p, &make, Look::Reused).await {
        Ok(t) => t,
        Err(e) => return Verdict::skip(e),
    };
    if stall_pattern(&first).is_none() {
        return judge(&first, None, what);
    }
    let quick = time_replies(p, &make, Look::Fresh).await;
    judge(&first, Some(quick.as_deref().map_err(Clone::clone)), what)
}

async fn modern(p: Probe) -> Verdict {
    let (what, make) = cheap_request(&p);
    look_twice(&p, make, &what).await
}

async fn legacy(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let make = |i: usize| {
        request(
            &p,
            &s,
            &format!("{} #{} on the session", p.target().plain_method(), i + 1),
            p.target().plain_method(),
            json!({}),
        )
    };
    let what = format!("session {}", p.target().plain_method());
    let verdict = look_twice(&p, make, &what).await;
    close(&p, &s).await;
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Timing {
        Timing {
            head: Duration::from_millis(1),
            tail: Duration::from_millis(ms),
        }
    }

    fn severity(v: &Verdict) -> Option<Option<Severity>> {
        match v {
            Verdict::Violation { severity, .. } => Some(*severity),
            _ => None,
        }
    }

    #[test]
    fn only_stalls_that_vanish_with_immediate_acks_are_a_finding() {
        let fine: Vec<Timing> = (0..60).map(|_| t(1)).collect();
        assert!(matches!(judge(&fine, None, "x"), Verdict::Pass(_)));
        // Two stalls are noise; nine of sixty are a pattern.
        let mut stalls = fine.clone();
        stalls[3] = t(41);
        stalls[9] = t(44);
        assert!(matches!(judge(&stalls, None, "x"), Verdict::Pass(_)));
        for (i, x) in stalls.iter_mut().enumerate().skip(20).take(7) {
            *x = t(40 + i as u64 % 5);
        }
        // Gone with immediate ACKs: the Nagle signature, a WARN.
        let v = judge(&stalls, Some(Ok(&fine)), "x");
        assert_eq!(severity(&v), Some(Some(Severity::Should)), "{v:?}");
        // Still there: a slow machine or server, INFO.
        let v = judge(&stalls, Some(Ok(&stalls)), "x");
        assert_eq!(severity(&v), Some(Some(Severity::Info)), "{v:?}");
        // Unconfirmed (no second look, or it failed): INFO, never a WARN.
        let v = judge(&stalls, None, "x");
        assert_eq!(severity(&v), Some(Some(Severity::Info)), "{v:?}");
        let v = judge(&stalls, Some(Err("reset".into())), "x");
        assert_eq!(severity(&v), Some(Some(Severity::Info)), "{v:?}");
        // A slow server is not a stall.
        let slow: Vec<Timing> = (0..20).map(|_| t(900)).collect();
        assert!(matches!(judge(&slow, None, "x"), Verdict::Pass(_)));
        assert!(matches!(judge(&[], None, "x"), Verdict::Skip(_)));
    }
}
