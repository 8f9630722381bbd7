//! The accept loop: one task per HTTP/1.1 connection, each held to the
//! timeouts of its phase ([`super::conn_phase`]), and a cap on how many are
//! open at once.
//!
//! At the cap (`--max-connections`, lowered to what the descriptor limit
//! allows), a new connection sheds the one that has been useless the
//! longest: idle, half-sent a head, or trickling a body below
//! `--min-body-rate` (see [`super::conn_phase`]); only when every open
//! connection is busy with a request (or a body within its grace) is the
//! new one refused instead (503 with `Retry-After`). Picking the one to
//! shed costs O(log n) under the registry's lock ([`super::shed_index`]),
//! so accepts stay cheap with thousands open. A failed `accept`
//! (descriptors exhausted despite the cap) also sheds one and retries
//! within milliseconds, where a plain accept loop would sleep. So
//! thousands of idle, slowloris or slow-body connections cost their
//! timeouts, never a legitimate request its answer.
//!
//! Every request runs in a `request` span naming the peer address (and,
//! once known, the principal), carries the peer as
//! `axum::extract::ConnectInfo`, and keeps its connection busy until its
//! response body ends.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tracing::Instrument as _;

use super::conn_phase::{Inbound, Phase, PhaseLimits, Registry, Tracked, Watched, lock, ms_since};
use super::log_gate::LogGate;
use super::stats::{Stats, bump, drop_one};

/// Descriptors kept free for everything but client connections (store
/// files, logs, the runtime).
pub const RESERVED_FDS: u64 = 256;

/// Connections the kernel may queue before `accept` (capped by
/// `net.core.somaxconn`): a burst of reconnects, say thousands of shed or
/// timed-out connections coming back at once, then waits in the queue
/// instead of having its SYNs dropped (which costs a legitimate client a
/// one-second retransmit).
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as a plain
/// bind does on Unix).
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// How long open connections get to finish after shutdown begins: a
/// request in flight gets its answer within it; open SSE streams end at
/// once (see `super::app::App::closing`).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The connection limits of one server.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Phase timeouts.
    pub phases: PhaseLimits,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Set `TCP_NODELAY` on accepted sockets.
    pub nodelay: bool,
}

/// The open connections, and who is woken when the last one closes.
#[derive(Default)]
struct Table {
    conns: Arc<Registry>,
    drained: Notify,
}

impl Table {
    fn len(&self) -> usize {
        lock(&self.conns).len()
    }

    fn remove(&self, id: u64) {
        let mut ix = lock(&self.conns);
        ix.remove(id);
        if ix.is_empty() {
            self.drained.notify_waiters();
        }
    }

    /// Asks the connection useless the longest at `now` to go; false when
    /// none is (every one is busy, or a body within its grace).
    fn shed_one(&self, now: u64) -> bool {
        lock(&self.conns).pick(now, |p| p.shed_check(now)).is_some()
    }

    /// Makes room for one more connection under `cap` (those already
    /// asked to go do not count).
    fn make_room(&self, cap: usize, now: u64) -> Room {
        let mut ix = lock(&self.conns);
        if ix.staying() < cap {
            Room::Free
        } else if ix.pick(now, |p| p.shed_check(now)).is_some() {
            Room::Shed
        } else {
            Room::Full
        }
    }
}

/// What [`Table::make_room`] did.
#[derive(Debug, PartialEq, Eq)]
enum Room {
    /// Below the cap.
    Free,
    /// At the cap: one connection was asked to go.
    Shed,
    /// At the cap with nothing sheddable: refuse the new one.
    Full,
}

/// The cap actually used: `wanted`, or what the descriptor limit allows
/// (raising the soft limit towards the hard one first).
pub fn effective_cap(wanted: usize) -> usize {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into the struct we own.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return wanted;
        }
        let need = (wanted as u64).saturating_add(RESERVED_FDS);
        if lim.rlim_cur < need && lim.rlim_max > lim.rlim_cur {
            let raised = libc::rlimit {
                rlim_cur: need.min(lim.rlim_max),
                rlim_max: lim.rlim_max,
            };
            // SAFETY: setrlimit reads one rlimit we own; failure leaves it unchanged.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                lim.rlim_cur = raised.rlim_cur;
            }
        }
        let allowed = lim.rlim_cur.saturating_sub(RESERVED_FDS).max(1);
        usize::try_from(allowed).map_or(wanted, |a| wanted.min(a))
    }
    #[cfg(not(unix))]
    {
        wanted
    }
}

fn fds_exhausted(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Everything the connection tasks share.
struct Shared {
    router: Router,
    stats: Arc<Stats>,
    table: Table,
    epoch: Instant,
    /// One line at most every 10 s for closed and shed connections (a
    /// summary) and for running out of descriptors, so a flood of either
    /// shows without a line each.
    summary: LogGate,
    closing: watch::Receiver<bool>,
}

/// Serves `router` on `listener` until `closing` flips, then lets open
/// connections finish (at most [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    stats: Arc<Stats>,
    closing: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let epoch = Instant::now();
    let shared = Arc::new(Shared {
        router,
        stats,
        table: Table::default(),
        epoch,
        summary: LogGate::new(),
        closing: closing.clone(),
    });
    let mut closing = closing;
    let mut next_id = 0u64;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = closing.wait_for(|c| *c) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) if fds_exhausted(&e) => {
                if shared.summary.pass().is_some() {
                    tracing::warn!(error = %e, "out of file descriptors: shedding idle connections");
                }
                shared.table.shed_one(ms_since(shared.epoch));
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            Err(e) => {
                tracing::debug!(error = %e, "accept failed");
                continue;
            }
        };
        match shared
            .table
            .make_room(limits.max_connections, ms_since(shared.epoch))
        {
            Room::Free => {}
            Room::Shed => bump(&shared.stats.connections_shed),
            Room::Full => {
                bump(&shared.stats.connections_refused);
                tracing::debug!(%peer, "connection refused: every open connection is busy");
                refuse(stream);
                continue;
            }
        }
        let _ = stream.set_nodelay(limits.nodelay);
        next_id += 1;
        let id = next_id;
        let phase = Phase::open(&shared.table.conns, id, shared.epoch, limits.phases);
        bump(&shared.stats.connections_open);
        let shared = shared.clone();
        tokio::spawn(async move {
            connection(&shared, stream, peer, phase).await;
            drop_one(&shared.stats.connections_open);
            shared.table.remove(id);
        });
    }
    drop(listener);
    let drained = shared.table.drained.notified();
    let open = shared.table.len();
    if open > 0 {
        tracing::info!(
            open,
            grace_s = SHUTDOWN_GRACE.as_secs(),
            "no longer accepting; waiting for the requests in flight"
        );
        let t = Instant::now();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_millis(500), drained).await;
        match shared.table.len() {
            0 => tracing::info!(
                took_ms = t.elapsed().as_millis() as u64,
                "every connection finished"
            ),
            left => tracing::warn!(left, "connections still open after the grace: closed"),
        }
    }
    Ok(())
}

/// The answer on a connection refused at the cap, in place of a bare close.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    Retry-After: 1\r\nConnection: close\r\n\
    Content-Type: text/plain; charset=utf-8\r\nContent-Length: 40\r\n\r\n\
    too many connections; try again shortly\n";

/// Answers a connection refused at the cap with [`REFUSED`] and closes it,
/// without a task or a wait: whatever the client already sent is read
/// first (closing with unread data sends RST, which can discard the
/// answer), then one non-blocking write, then FIN.
fn refuse(stream: TcpStream) {
    use std::io::{Read as _, Write as _};
    let Ok(mut s) = stream.into_std() else {
        return;
    };
    let mut scratch = [0u8; 4096];
    for _ in 0..16 {
        if !matches!(s.read(&mut scratch), Ok(n) if n > 0) {
            break;
        }
    }
    let _ = s.write(REFUSED);
    let _ = s.shutdown(std::net::Shutdown::Write);
}

/// Serves one connection until it ends, outstays its phase, is shed, or
/// the server's shutdown grace runs out.
async fn connection(shared: &Shared, stream: TcpStream, peer: SocketAddr, phase: Arc<Phase>) {
    let svc = Svc {
        router: TowerToHyperService::new(shared.router.clone()),
        phase: phase.clone(),
        peer,
    };
    let io = TokioIo::new(Watched::new(stream, phase.clone()));
    let conn = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, svc);
    tokio::pin!(conn);
    let mut closing = shared.closing.clone();
    let mut stop_at: Option<tokio::time::Instant> = None;
    loop {
        let deadline = match stop_at {
            Some(t) => Some(t),
            None => phase.deadline().map(tokio::time::Instant::from_std),
        };
        let wait = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            () = wait => {
                if stop_at.is_some() {
                    return;
                }
                if phase.deadline().is_some_and(|d| Instant::now() >= d) {
                    bump(&shared.stats.connections_timed_out);
                    tracing::debug!(%peer, phase = phase.name(), "closing a connection that outstayed its timeout");
                    if shared.summary.pass().is_some() {
                        let s = &shared.stats;
                        tracing::info!(
                            timed_out = s.connections_timed_out.load(Ordering::Relaxed),
                            shed = s.connections_shed.load(Ordering::Relaxed),
                            refused = s.connections_refused.load(Ordering::Relaxed),
                            "connections closed for idling or sending too slowly (totals so far)"
                        );
                    }
                    return;
                }
            }
            () = phase.changed.notified() => {}
            () = phase.evict.notified() => {
                if phase.may_leave() {
                    tracing::debug!(%peer, phase = phase.name(), "shed a connection: the server is at --max-connections");
                    return;
                }
                phase.spared();
            }
            _ = closing.wait_for(|c| *c), if stop_at.is_none() => {
                conn.as_mut().graceful_shutdown();
                stop_at = Some(tokio::time::Instant::now() + SHUTDOWN_GRACE);
            }
        }
    }
}

/// The per-connection service: marks the connection busy (in its body
/// phase first, when a body is coming), names the peer, and runs the
/// router inside the request's span. A response given without reading
/// its request's body to the end says `Connection: close`: hyper closes
/// such a connection, and a client told nothing would reuse it.
#[derive(Clone)]
struct Svc {
    router: TowerToHyperService<Router>,
    phase: Arc<Phase>,
    peer: SocketAddr,
}

type SvcFuture = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = SvcFuture;

    fn call(&self, req: Request<Incoming>) -> SvcFuture {
        let has_body = !hyper::body::Body::is_end_stream(req.body());
        let busy = self.phase.begin(has_body);
        let mut req = req.map(|b| Inbound::new(b, self.phase.clone()));
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let span = tracing::info_span!(
            "request",
            peer = %self.peer,
            principal = tracing::field::Empty
        );
        let fut = self.router.call(req);
        let phase = self.phase.clone();
        Box::pin(
            async move {
                let mut resp = fut.await?;
                if phase.body_unread() {
                    // Said, so that a client does not send its next
                    // request down a connection that closes after this.
                    resp.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok(resp.map(|b| Tracked::new(b, busy)))
            }
            .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_fits_the_descriptor_limit() {
        let cap = effective_cap(usize::MAX / 2);
        assert!((1..usize::MAX / 2).contains(&cap));
        assert_eq!(effective_cap(10), 10);
    }

    const LIMITS: PhaseLimits = PhaseLimits {
        header_read: Duration::from_secs(10),
        keep_alive: Duration::from_secs(60),
        body_grace: Duration::from_secs(1),
        min_body_rate: 1000,
    };

    #[test]
    fn shedding_picks_the_idle_then_the_slow_and_spares_busy_ones() {
        let epoch = Instant::now() - Duration::from_secs(100);
        let t = Table::default();
        let open = |id| Phase::open(&t.conns, id, epoch, LIMITS);
        let (busy, idle_a, body, idle_b) = (open(1), open(2), open(3), open(4));
        let _held = busy.begin(false);
        let _reading = body.begin(true);
        let now = ms_since(epoch);
        assert_eq!(t.make_room(5, now), Room::Free);
        // The idle ones are filed from when they became so, the body from
        // when it becomes slow (1 s after its head at the earliest).
        let later = now + 60_000;
        assert_eq!(t.make_room(4, later), Room::Shed);
        assert!(t.shed_one(later));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let asked = |p: &Arc<Phase>| {
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(20), p.evict.notified())
                    .await
                    .is_ok()
            })
        };
        assert!(asked(&idle_a) && asked(&idle_b) && !asked(&body));
        assert!(t.shed_one(later), "then the slow body");
        assert!(asked(&body) && body.may_leave());
        assert!(!t.shed_one(later), "only a busy one left");
        assert!(!asked(&busy));
        assert_eq!(t.make_room(1, later), Room::Full);
        for id in 1..=4 {
            t.remove(id);
        }
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_body_within_its_grace_is_not_shed_and_a_full_table_refuses() {
        let epoch = Instant::now();
        let t = Table::default();
        let p = Phase::open(&t.conns, 1, epoch, LIMITS);
        let _reading = p.begin(true);
        let now = ms_since(epoch);
        assert_eq!(t.make_room(1, now), Room::Full, "within the grace");
        assert!(!t.shed_one(now + 500));
        assert!(t.shed_one(now + 5_000), "slow once the grace is over");
        assert_eq!(t.make_room(1, now + 5_000), Room::Free, "it is leaving");
        p.spared();
        assert_eq!(t.make_room(1, now + 5_000), Room::Shed);
    }
}
