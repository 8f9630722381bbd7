//! The accept loop: one task per HTTP/1.1 connection, each held to the
//! timeouts of its phase ([`super::conn_phase`]), and a cap on how many are
//! open at once.
//!
//! At the cap (`--max-connections`, lowered to what the descriptor limit
//! allows), a new connection sheds the one that has been useless the
//! longest: idle, half-sent a head, or trickling a body below
//! `--min-body-rate` (see [`super::conn_phase`]). When none is, it sheds
//! under pressure one connection of the largest holder (the principal, or
//! the pool of callers without credentials, holding the most connections)
//! that is only waiting: a body still arriving, within its grace or not
//! (so churning new bodies buys no immunity), or a 2025-11-25 stream
//! waiting on its client (its call ends with a JSON-RPC error on the
//! stream, see `super::legacy`). Only when every open connection is busy
//! with a request is the new one refused (503 with `Retry-After`). Picking
//! the one to shed costs O(log n) under the registry's lock
//! ([`super::shed_index`], [`super::holder`]), so accepts stay cheap with
//! thousands open.
//!
//! Fair shares: a connection belongs to the holder of its requests
//! (worked out once per connection and token), and no holder may hold
//! more than `--max-connections-per-principal` (default an eighth of the
//! cap, at least 64 or the cap): a request that would make it one more
//! gets 429 and the connection closes. So one client cannot take the cap,
//! and a crowd of made-up principals (demo auth takes any token) is shed,
//! largest first, for newcomers. A failed `accept`
//! (descriptors exhausted despite the cap) also sheds one and retries
//! within milliseconds, where a plain accept loop would sleep. So
//! thousands of idle, slowloris or slow-body connections cost their
//! timeouts, never a legitimate request its answer.
//!
//! Every request runs in a `request` span naming the peer address (and,
//! once known, the principal), carries its connection's
//! [`super::conn_phase::Parking`] handle, and keeps its connection busy
//! until its response body ends.

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tracing::Instrument as _;

use super::conn_phase::{
    Conns, Inbound, Parking, Phase, PhaseLimits, Registry, Tracked, Watched, lock, ms_since,
};
use super::holder::{Holder, Identify, OverShare};
use super::log_gate::LogGate;
use super::reply::{self, RpcError};
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
    /// Most connections one holder may hold ([`share_of`]).
    pub per_holder: usize,
    /// Set `TCP_NODELAY` on accepted sockets.
    pub nodelay: bool,
}

/// The default share of one holder under a cap of `cap` connections: an
/// eighth, but at least 64 (or the whole cap, when that is smaller), so a
/// small cap does not shut a single client out.
pub fn share_of(cap: usize) -> usize {
    (cap / 8).max(cap.min(64)).max(1)
}

/// Most connections looked at to shed one under pressure, the largest
/// holder's first: bounds the work of one accept.
const PRESSURE_LOOKS: usize = 512;

/// The open connections, and who is woken when the last one closes.
struct Table {
    conns: Arc<Registry>,
    drained: Notify,
}

impl Table {
    /// No connection open; a holder may hold `share` of them.
    fn new(share: usize) -> Self {
        Table {
            conns: Arc::new(Registry::new(Conns::new(share))),
            drained: Notify::new(),
        }
    }

    fn len(&self) -> usize {
        lock(&self.conns).index.len()
    }

    fn remove(&self, id: u64) {
        let mut c = lock(&self.conns);
        if let Some(holder) = c.index.get(id).map(|(p, _)| p.holder()) {
            c.holders.release(id, holder);
        }
        c.index.remove(id);
        if c.index.is_empty() {
            self.drained.notify_waiters();
        }
    }

    /// Asks one connection to go (see [`Table::make_room`]); false when
    /// none can.
    fn shed_one(&self, now: u64) -> bool {
        let mut c = lock(&self.conns);
        shed_in_order(&mut c, now) != Room::Full
    }

    /// Makes room for one more connection under `cap` (those already
    /// asked to go do not count, unless [`closing_allowance`] of them are
    /// still open: then the new one is refused, so that open sockets stay
    /// bounded however fast connections are shed).
    fn make_room(&self, cap: usize, now: u64) -> Room {
        let mut c = lock(&self.conns);
        if c.index.len() >= cap + closing_allowance(cap) {
            Room::Full
        } else if c.index.staying() < cap {
            Room::Free
        } else {
            shed_in_order(&mut c, now)
        }
    }
}

/// Connections asked to go that may still be open on top of the cap
/// (half of it, at least one): they close within moments (a refusal or a
/// cut body at once, a shed stream once its error is written), and
/// beyond this many new connections are refused until they did.
pub fn closing_allowance(cap: usize) -> usize {
    (cap / 2).max(1)
}

/// How long a connection must have been useless (idle, or accepted and
/// not yet through its head) before it may be shed: one just accepted
/// has its head on the way, one just answered its next request, and
/// under churn they would otherwise be the first to go. Until then, a
/// new connection is refused rather than shed it.
const FRESH_MS: u64 = 100;

/// Asks one connection to go: one useless for longer than [`FRESH_MS`]
/// (the longest first), else a waiting one of the largest holder;
/// [`Room::Full`] when none can go.
fn shed_in_order(c: &mut Conns, now: u64) -> Room {
    if c.index
        .pick(now.saturating_sub(FRESH_MS), |p| p.shed_check(now))
        .is_some()
    {
        Room::Shed
    } else if shed_largest(c) {
        Room::ShedUnderPressure
    } else {
        Room::Full
    }
}

/// Sheds under pressure one connection of the largest holder that has one
/// only waiting (a body arriving, a response waiting on its client); false
/// when none of the first [`PRESSURE_LOOKS`] in that order is.
fn shed_largest(c: &mut Conns) -> bool {
    let candidates = c.holders.largest_first(PRESSURE_LOOKS);
    let found = candidates.iter().find_map(|&id| {
        let (p, leaving) = c.index.get(id)?;
        (!leaving && p.sheddable_under_pressure()).then(|| (id, p.clone()))
    });
    let Some((id, phase)) = found else {
        return false;
    };
    c.index.mark_leaving(id);
    phase.shed_under_pressure();
    true
}

/// What [`Table::make_room`] did.
#[derive(Debug, PartialEq, Eq)]
enum Room {
    /// Below the cap.
    Free,
    /// At the cap: an idle, half-sent or slow connection was asked to go.
    Shed,
    /// At the cap, nothing idle: a waiting connection of the largest
    /// holder was asked to go.
    ShedUnderPressure,
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
    identify: Arc<Identify>,
    limits: ConnLimits,
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
/// connections finish (at most [`SHUTDOWN_GRACE`]). `identify` names the
/// holder of each request.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    identify: Arc<Identify>,
    limits: ConnLimits,
    stats: Arc<Stats>,
    closing: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let epoch = Instant::now();
    let shared = Arc::new(Shared {
        router,
        identify,
        limits,
        stats,
        table: Table::new(limits.per_holder),
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
        match room_within(&shared, &mut closing).await {
            Room::Free => {}
            Room::Shed => bump(&shared.stats.connections_shed),
            Room::ShedUnderPressure => bump(&shared.stats.connections_shed_under_pressure),
            Room::Full => {
                bump(&shared.stats.connections_refused);
                tracing::debug!(%peer, "connection refused: every open connection is busy");
                refuse(stream);
                continue;
            }
        }
        let _ = stream.set_nodelay(limits.nodelay);
        if *closing.borrow() {
            break;
        }
        next_id += 1;
        let id = next_id;
        let phase = Phase::open(&shared.table.conns, id, shared.epoch, limits.phases);
        #[cfg(unix)]
        phase.watch_socket(std::os::fd::AsRawFd::as_raw_fd(&stream));
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

/// How long a connection accepted at a full table waits for room before
/// it is refused: what is open is busy for moments as a rule (a request
/// being handled, a stream getting to its wait, a connection getting to
/// [`FRESH_MS`]). Meanwhile no other connection is accepted: they wait in
/// the listen backlog, in order, which also slows a client that churns
/// connections to keep the table full.
const ROOM_WAIT: Duration = Duration::from_millis(250);

/// [`Table::make_room`], retried every few milliseconds while the table
/// is full, for at most [`ROOM_WAIT`] (or until shutdown begins).
async fn room_within(shared: &Shared, closing: &mut watch::Receiver<bool>) -> Room {
    let cap = shared.limits.max_connections;
    let until = tokio::time::Instant::now() + ROOM_WAIT;
    loop {
        let room = shared.table.make_room(cap, ms_since(shared.epoch));
        if room != Room::Full || tokio::time::Instant::now() >= until {
            return room;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
            _ = closing.wait_for(|c| *c) => return Room::Full,
        }
    }
}

/// How long a stream shed under pressure gets to send its error and end.
const SHED_DRAIN: Duration = Duration::from_secs(2);

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
        identify: shared.identify.clone(),
        stats: shared.stats.clone(),
        limits: shared.limits,
        token: RefCell::new(None),
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
                if phase.is_shed() {
                    // Its waiting response ends with an error; then it closes.
                    tracing::debug!(%peer, "shed a waiting stream: the server is at --max-connections");
                    if stop_at.is_none() {
                        conn.as_mut().graceful_shutdown();
                        stop_at = Some(tokio::time::Instant::now() + SHED_DRAIN);
                    }
                    continue;
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

/// The per-connection service: works out the request's holder (and
/// refuses it, 429, past its share), marks the connection busy (in its
/// body phase first, when a body is coming), names the peer, hands the
/// handler its [`Parking`], and runs the router inside the request's span.
/// A response given without reading its request's body to the end says
/// `Connection: close`: hyper closes such a connection, and a client told
/// nothing would reuse it.
struct Svc {
    router: TowerToHyperService<Router>,
    identify: Arc<Identify>,
    stats: Arc<Stats>,
    limits: ConnLimits,
    /// The last `Authorization` value on this connection and its holder.
    token: RefCell<Option<(HeaderValue, Holder)>>,
    phase: Arc<Phase>,
    peer: SocketAddr,
}

type SvcFuture = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

impl Svc {
    /// 429 for a request of a holder that holds its share already.
    fn over_share(&self, held: usize) -> Response<axum::body::Body> {
        bump(&self.stats.connections_over_share);
        super::log_gate::gated!(
            info,
            held,
            "request refused: its principal holds its share of connections"
        );
        let e = RpcError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            crate::protocol::codes::SERVER_ERROR,
            format!(
                "this principal holds {held} connections, its share of the server's \
                 (--max-connections-per-principal {}); reuse them or close some",
                self.limits.per_holder
            ),
        )
        // An idle connection of its own closes within the keep-alive timeout.
        .retry_after(self.limits.phases.keep_alive.as_secs().max(1));
        let mut r = reply::error(None, &e);
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        r
    }
}

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = SvcFuture;

    fn call(&self, req: Request<Incoming>) -> SvcFuture {
        let has_body = !hyper::body::Body::is_end_stream(req.body());
        let holder = self.identify.of_cached(
            &mut self.token.borrow_mut(),
            req.headers(),
            req.uri().path(),
        );
        let busy = self.phase.begin(has_body);
        if let Err(OverShare(held)) = self.phase.claim(holder) {
            let resp = self.over_share(held).map(|b| Tracked::new(b, busy));
            return Box::pin(std::future::ready(Ok(resp)));
        }
        let mut req = req.map(|b| Inbound::new(b, self.phase.clone()));
        req.extensions_mut()
            .insert(Parking::new(self.phase.clone()));
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
        let t = Table::new(64);
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
    fn under_pressure_the_largest_holder_is_shed_first_and_never_past_its_share() {
        let epoch = Instant::now();
        let t = Table::new(3);
        let open = |id| Phase::open(&t.conns, id, epoch, LIMITS);
        let (a, b) = (Holder::from_raw(10), Holder::from_raw(20));
        // Three bodies within their grace: two of a, one of b.
        let conns: Vec<Arc<Phase>> = (1..=3).map(open).collect();
        let _busy: Vec<_> = conns.iter().map(|p| p.begin(true)).collect();
        for (p, h) in conns.iter().zip([a, a, b]) {
            p.claim(h).unwrap();
        }
        let now = ms_since(epoch);
        assert_eq!(t.make_room(3, now), Room::ShedUnderPressure);
        let shed: Vec<usize> = (0..3).filter(|&i| conns[i].is_shed()).collect();
        assert!(matches!(shed[..], [0] | [1]), "one of a's: {shed:?}");
        assert!(conns[shed[0]].may_leave(), "a body goes at once");
        assert_eq!(t.make_room(3, now), Room::Free, "its place is free");
        // A share of 3: a third connection of a is allowed, a fourth not.
        let (third, fourth) = (open(4), open(5));
        assert_eq!(third.claim(a), Ok(()));
        assert_eq!(fourth.claim(a), Err(OverShare(3)));
        assert_eq!(fourth.claim(b), Ok(()));
        for id in 1..=5 {
            t.remove(id);
        }
        let c = lock(&t.conns);
        assert!(c.index.is_empty() && c.holders.is_empty());
    }

    #[tokio::test]
    async fn a_parked_stream_is_shed_under_pressure_and_its_handler_told() {
        let epoch = Instant::now();
        let t = Table::new(64);
        let (busy, streaming) = (
            Phase::open(&t.conns, 1, epoch, LIMITS),
            Phase::open(&t.conns, 2, epoch, LIMITS),
        );
        let _b1 = busy.begin(false);
        let _b2 = streaming.begin(false);
        busy.claim(Holder::from_raw(10)).unwrap();
        streaming.claim(Holder::from_raw(20)).unwrap();
        let now = ms_since(epoch);
        assert_eq!(t.make_room(2, now), Room::Full, "both busy");
        let parked = Parking::new(streaming.clone()).park();
        assert_eq!(t.make_room(2, now), Room::ShedUnderPressure);
        tokio::time::timeout(Duration::from_secs(1), parked.shed())
            .await
            .expect("the handler is told");
        assert!(streaming.is_shed() && !busy.is_shed());
        assert!(!streaming.may_leave(), "it ends its response first");
        drop(parked);
        assert_eq!(t.make_room(2, now), Room::Free, "it no longer counts");
        t.remove(1);
        t.remove(2);
    }

    #[test]
    fn a_body_within_its_grace_is_not_shed_and_a_full_table_refuses() {
        let epoch = Instant::now();
        let t = Table::new(64);
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
