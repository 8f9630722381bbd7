//! A stdio server as an MCP endpoint on loopback, so every driver (discover,
//! check, fuzz, the flow clients) reaches it the way it reaches an HTTP
//! server, and nothing above the transport is written twice.
//!
//! Each POSTed message becomes one line on the child's stdin. A request's
//! reply comes back as `application/json` when the server answers straight
//! away, or as an SSE stream when it first sends messages of its own (an
//! `elicitation/create` while a 2025-11-25 `tools/call` is pending), which
//! the client answers by POSTing the response (written to stdin, `202`). A
//! request abandoned by its HTTP client is cancelled the stdio way, with
//! `notifications/cancelled`.
//!
//! Processes: a 2025-11-25 `initialize` starts a process of its own, which
//! is that session (`MCP-Session-Id` names it; `DELETE` stops it); other
//! requests share one process per principal, whose clients speak
//! 2026-07-28 and take no server requests: the bridge answers any the
//! server sends there `-32601`, as such a client would. Discovery's `server/discover`
//! is its first message, so the connection is a 2026-07-28 one from the
//! start, as a client would open it (SDKs pick a connection's generation
//! from its first messages). The principal reaches the
//! server only through the environment variable the user names
//! (`--identity-env`): then each bearer token gets its own processes with
//! that variable set to it; without it tokens are ignored. A process that
//! exits is started again for the next request, and its exit is logged
//! ([`Log`]) with its stderr tail.
//!
//! What the bridge answers on HTTP (status codes, headers, `GET`) is ours,
//! not the server's: checks of HTTP behaviour do not apply to a stdio target.

use super::StdioError;
use super::child::Command;
use super::log::Log;
use super::pipe::{Pipe, Routed, Waiter};
use super::warm::{Reuse, Warm};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt as _;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::protocol::headers::{INSTANCE, SESSION_ID};

/// Session processes kept at once; the oldest is stopped beyond this.
pub const MAX_SESSIONS: usize = 16;
/// The header of a `202` that stands for silence: the server wrote no
/// reply to a message that is not a valid request (its value says how
/// long the bridge waited).
pub const NO_REPLY: &str = "elicitkit-stdio-no-reply";
/// The header on a reply the bridge makes itself, carrying no message of
/// the server's (a blank body not sent, no such session, no standalone
/// stream, a server that could not start): what it stands for, in the
/// pipe's words. Its status is the bridge's, never the server's, so a
/// reader names this instead of the status ([`crate::client::raw::RawReply::rpc`]).
pub const BRIDGE_SAID: &str = "elicitkit-stdio-bridge";
/// How `elicitkit bridge` reports (on stderr, when it stops) each exit of
/// the server it did not ask for; a stdio `repro.sh` looks for it.
pub const EXITED: &str = "the stdio server exited on its own";
/// The line of the bridge's own `502` when the server's process was gone
/// (it exited, or closed its stdout) before it answered, found in a
/// reply's text: a status of the bridge, not of the server, which checks
/// must not read as the server's.
pub fn gone(reply: &str) -> Option<&str> {
    // In a 502's body, or as an SSE comment (`: `) ending a stream.
    let line = reply
        .lines()
        .map(|l| l.strip_prefix(": ").unwrap_or(l))
        .find(|l| l.starts_with("the stdio server ") && l.contains(" before answering"))?;
    Some(line.split("; its stderr").next().unwrap_or(line))
}

/// The bridge's `400` to a blank body, which it does not send: over stdio
/// it would be a blank line, no message at all.
pub const NOT_SENT_BLANK: &str = "elicitkit bridge: a blank body is no message over stdio (it would be a blank line); nothing was sent\n";

/// How long a message that is not a request (unparsable, a batch) waits
/// for an error reply with a null id before it is answered `202`.
pub const NULL_ID_WAIT: Duration = Duration::from_millis(500);
/// After a line that is not a valid request, a `ping` follows it
/// ([`Reuse::Warm`]): once the ping is answered, the server has read past
/// the line, and a reply to it has this much longer to come, or twice the
/// ping's round trip if that is longer (a server that answers lines
/// concurrently may answer the ping first, and a busy host slows both).
pub const FENCE_GRACE: Duration = Duration::from_millis(50);
/// How long a process gets to exit after its stdin closes.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long [`Bridge::start`] watches the first process for an exit.
const STARTUP_WATCH: Duration = Duration::from_millis(300);

/// How to start and reach a stdio server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spec {
    /// The command.
    pub command: Command,
    /// The environment variable the server reads its principal from, if it
    /// has principals at all.
    pub identity_env: Option<String>,
}

impl Spec {
    /// The command for `principal`'s processes.
    fn command_for(&self, principal: &str) -> Command {
        let mut c = self.command.clone();
        if let Some(var) = &self.identity_env {
            c.env.retain(|(k, _)| k != var);
            c.env.push((var.clone(), principal.to_owned()));
        }
        c
    }
}

/// Session processes by id, and the ids oldest first.
type Sessions = (HashMap<String, Arc<Pipe>>, VecDeque<String>);

struct Pool {
    spec: Spec,
    log: Arc<Log>,
    shared: Mutex<HashMap<String, Arc<Pipe>>>,
    sessions: Mutex<Sessions>,
    /// A process started ahead for each principal's next session, so a
    /// session does not wait for the interpreter to start.
    spare: Mutex<HashMap<String, Arc<Pipe>>>,
    next_session: AtomicU64,
    /// Ids the bridge puts on the wire: HTTP clients number their requests
    /// independently, one stdio client must not reuse an id in flight.
    next_wire_id: AtomicU64,
    reuse: Reuse,
    warm: Warm,
}

impl Pool {
    /// The principal a request runs as (the bearer token, when the server
    /// takes identity from the environment; else one for all).
    fn principal(&self, headers: &HeaderMap) -> String {
        if self.spec.identity_env.is_none() {
            return String::new();
        }
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default()
            .to_owned()
    }

    /// A process for `principal`: a 2025-11-25 session's (`session`),
    /// whose client answers the server's requests, or a shared one.
    fn start(&self, principal: &str, session: bool) -> Result<Arc<Pipe>, StdioError> {
        Pipe::start(
            &self.spec.command_for(principal),
            self.log.clone(),
            !session,
        )
        .map(Arc::new)
    }

    /// The shared process of `principal`, started (again) if need be.
    fn shared(&self, principal: &str) -> Result<Arc<Pipe>, StdioError> {
        let mut m = self.shared.lock().map_err(|_| StdioError::Poisoned)?;
        if let Some(p) = m.get(principal)
            && !p.has_exited()
        {
            return Ok(p.clone());
        }
        let p = self.start(principal, false)?;
        m.insert(principal.to_owned(), p.clone());
        Ok(p)
    }

    /// A new session process; the oldest is stopped past [`MAX_SESSIONS`].
    fn new_session(&self, principal: &str) -> Result<(String, Arc<Pipe>), StdioError> {
        let spare = self
            .spare
            .lock()
            .ok()
            .and_then(|mut s| s.remove(principal))
            .filter(|p| !p.has_exited());
        let p = match spare {
            Some(p) => p,
            None => self.start(principal, true)?,
        };
        if let Ok(next) = self.start(principal, true)
            && let Ok(mut s) = self.spare.lock()
        {
            s.insert(principal.to_owned(), next);
        }
        let sid = format!(
            "stdio-{}-{}",
            p.pid(),
            self.next_session.fetch_add(1, Ordering::Relaxed)
        );
        let evicted = {
            let mut s = self.sessions.lock().map_err(|_| StdioError::Poisoned)?;
            s.0.insert(sid.clone(), p.clone());
            s.1.push_back(sid.clone());
            let mut out = Vec::new();
            while s.1.len() > MAX_SESSIONS {
                if let Some(old) = s.1.pop_front()
                    && let Some(pipe) = s.0.remove(&old)
                {
                    self.warm.forget(&old);
                    out.push(pipe);
                }
            }
            out
        };
        for pipe in evicted {
            stop_soon(pipe);
        }
        Ok((sid, p))
    }

    /// A session on an idle process ([`Warm`]) whose `initialize` params
    /// are `params`: its id, process and the reply to give (id `id`).
    fn reopen(
        &self,
        principal: &str,
        params: &Value,
        id: &Value,
    ) -> Option<(String, Arc<Pipe>, Value)> {
        if self.reuse != Reuse::Warm {
            return None;
        }
        let (p, reply) = self.warm.take(principal, params, id)?;
        self.log.session_reused();
        let sid = format!(
            "stdio-{}-{}",
            p.pid(),
            self.next_session.fetch_add(1, Ordering::Relaxed)
        );
        self.warm.reopened(&sid, principal, params, &reply);
        if let Ok(mut s) = self.sessions.lock() {
            s.0.insert(sid.clone(), p.clone());
            s.1.push_back(sid.clone());
        }
        Some((sid, p, reply))
    }

    fn session(&self, sid: &str) -> Option<Arc<Pipe>> {
        self.sessions.lock().ok()?.0.get(sid).cloned()
    }

    fn end_session(&self, sid: &str) -> Option<Arc<Pipe>> {
        let mut s = self.sessions.lock().ok()?;
        s.1.retain(|x| x != sid);
        s.0.remove(sid)
    }

    fn all(&self) -> Vec<Arc<Pipe>> {
        let mut v: Vec<Arc<Pipe>> = self
            .shared
            .lock()
            .map(|mut m| m.drain().map(|(_, p)| p).collect())
            .unwrap_or_default();
        if let Ok(mut s) = self.sessions.lock() {
            v.extend(s.0.drain().map(|(_, p)| p));
            s.1.clear();
        }
        if let Ok(mut s) = self.spare.lock() {
            v.extend(s.drain().map(|(_, p)| p));
        }
        v.extend(self.warm.drain());
        v
    }
}

/// Stops `pipe` in the background once no request holds it.
fn stop_soon(pipe: Arc<Pipe>) {
    tokio::spawn(async move {
        match Arc::try_unwrap(pipe) {
            Ok(p) => p.stop(STOP_GRACE).await,
            // Still in use: dropping our handle kills it when the last goes.
            Err(shared) => drop(shared),
        }
    });
}

/// A stdio server behind a loopback MCP endpoint.
pub struct Bridge {
    url: String,
    router: Router,
    pool: Arc<Pool>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge").field("url", &self.url).finish()
    }
}

impl Bridge {
    /// Starts the first process (an error if it cannot start or exits at
    /// once, with its stderr tail) and the endpoint on 127.0.0.1; a
    /// process per 2025-11-25 session ([`Reuse::Never`]).
    pub async fn start(spec: Spec) -> Result<Bridge, StdioError> {
        Bridge::start_with(spec, Reuse::Never).await
    }

    /// [`Bridge::start`], spending processes as `reuse` says.
    pub async fn start_with(spec: Spec, reuse: Reuse) -> Result<Bridge, StdioError> {
        super::child::install_cleanup();
        let pool = Arc::new(Pool {
            spec,
            log: Arc::new(Log::default()),
            shared: Mutex::new(HashMap::new()),
            sessions: Mutex::new((HashMap::new(), VecDeque::new())),
            spare: Mutex::new(HashMap::new()),
            next_session: AtomicU64::new(1),
            next_wire_id: AtomicU64::new(1),
            reuse,
            warm: Warm::default(),
        });
        if pool.spec.identity_env.is_none() {
            let first = pool.shared("")?;
            if tokio::time::timeout(STARTUP_WATCH, first.wait_exit())
                .await
                .is_ok()
            {
                let e = pool.log.exits().pop().unwrap_or_default();
                return Err(StdioError::ExitedAtOnce(
                    pool.spec.command.display(),
                    e.status,
                    stderr_note(&e.stderr_tail),
                ));
            }
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(StdioError::Bind)?;
        let addr = listener.local_addr().map_err(StdioError::Address)?;
        let router = Router::new()
            .route(
                "/mcp",
                post(post_mcp).get(not_on_stdio).delete(delete_session),
            )
            .with_state(pool.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let served = router.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, served)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Bridge {
            url: format!("http://{addr}/mcp"),
            router,
            pool,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// The endpoint every driver is pointed at.
    pub fn mcp_url(&self) -> &str {
        &self.url
    }

    /// The endpoint's router, for a driver that calls it in process
    /// (no socket, no HTTP framing): it answers as [`Bridge::mcp_url`] does.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// What the children did outside their replies.
    pub fn log(&self) -> Arc<Log> {
        self.pool.log.clone()
    }

    /// The command and how identity reaches it, for reports.
    pub fn spec(&self) -> &Spec {
        &self.pool.spec
    }

    /// Stops the endpoint and every process (stdin closed, then killed
    /// after [`STOP_GRACE`]).
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), t).await;
        }
        let stops = self.pool.all().into_iter().map(|p| async move {
            if let Ok(p) = Arc::try_unwrap(p) {
                p.stop(STOP_GRACE).await;
            }
        });
        futures::future::join_all(stops).await;
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Dropping the pipes kills their process groups.
        drop(self.pool.all());
    }
}

fn stderr_note(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(
            "; its stderr ends:\n{}",
            super::log::last_lines(tail, 6).join("\n")
        )
    }
}

/// A reply of the bridge's own: `status`, `body` (`said` and a newline
/// when `None`) and its [`BRIDGE_SAID`] header saying what it stands for,
/// as one line of visible ASCII (anything else becomes `?`).
fn own(status: StatusCode, said: &str, body: Option<String>) -> Response {
    let mut r = (status, body.unwrap_or_else(|| format!("{said}\n"))).into_response();
    let line: String = said
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(300)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if let Ok(v) = HeaderValue::from_str(&line) {
        r.headers_mut().insert(BRIDGE_SAID, v);
    }
    r
}

const NO_SUCH_SESSION: &str = "no stdio server process holds this session";

async fn not_on_stdio() -> Response {
    let mut r = own(
        StatusCode::METHOD_NOT_ALLOWED,
        "a stdio server has no standalone stream",
        None,
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    r
}

async fn delete_session(State(pool): State<Arc<Pool>>, headers: HeaderMap) -> Response {
    let sid = headers.get(SESSION_ID).and_then(|v| v.to_str().ok());
    match sid.and_then(|s| pool.end_session(s).map(|p| (s, p))) {
        Some((s, p)) => {
            for p in pool.warm.release(s, p) {
                stop_soon(p);
            }
            StatusCode::NO_CONTENT.into_response()
        }
        None => own(StatusCode::NOT_FOUND, NO_SUCH_SESSION, None),
    }
}

/// What a POSTed body is to the pipe.
enum Kind {
    /// A valid request (string or integer id), with that id: wait for its
    /// response.
    Request(Value, Value),
    /// A notification, or a response to the server (with its id): no
    /// reply.
    OneWay(Option<Value>),
    /// Not a valid request (no `"jsonrpc": "2.0"`, an id of another type,
    /// not JSON, a batch): a reply, if any comes, names this id or null.
    Other(Value),
}

fn kind(msg: Option<Value>) -> Kind {
    let Some(m) = msg.filter(Value::is_object) else {
        return Kind::Other(Value::Null);
    };
    let valid = m.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && m.get("method").is_some_and(Value::is_string);
    match (m.get("method"), m.get("id")) {
        (Some(_), Some(id)) if valid && (id.is_string() || id.is_i64() || id.is_u64()) => {
            let id = id.clone();
            Kind::Request(m, id)
        }
        (Some(_), Some(id)) => Kind::Other(id.clone()),
        (Some(_), None) => Kind::OneWay(None),
        (None, Some(id)) => Kind::OneWay(Some(id.clone())),
        (None, None) => Kind::Other(Value::Null),
    }
}

async fn post_mcp(State(pool): State<Arc<Pool>>, headers: HeaderMap, body: Bytes) -> Response {
    // A blank body has no line to send: newline-delimited JSON carries no
    // empty message, and a blank line gets silence from any server (that
    // silence is no defect of the server's, so it is not asked for).
    if body.iter().all(u8::is_ascii_whitespace) {
        let said = "a blank body is no message over stdio; nothing was sent";
        return own(StatusCode::BAD_REQUEST, said, Some(NOT_SENT_BLANK.into()));
    }
    let msg = serde_json::from_slice::<Value>(&body).ok();
    let principal = pool.principal(&headers);
    let sid = headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let initialize = msg
        .as_ref()
        .and_then(|m| m.get("method"))
        .and_then(Value::as_str)
        == Some("initialize");
    let params = msg.as_ref().map(|m| m["params"].clone());
    if let (None, true, Kind::Request(_, id)) = (&sid, initialize, kind(msg.clone()))
        && let Some((s, p, reply)) =
            pool.reopen(&principal, params.as_ref().unwrap_or(&Value::Null), &id)
    {
        return with_ids(json_reply(Bytes::from(reply.to_string())), &p, Some(s));
    }
    let (pipe, new_sid) = match (&sid, initialize) {
        (Some(s), _) => match pool.session(s) {
            Some(p) => (p, None),
            None => return own(StatusCode::NOT_FOUND, NO_SUCH_SESSION, None),
        },
        (None, true) => match pool.new_session(&principal) {
            Ok((s, p)) => (p, Some(s)),
            Err(e) => return cannot_start(&e),
        },
        (None, false) => match pool.shared(&principal) {
            Ok(p) => (p, None),
            Err(e) => return cannot_start(&e),
        },
    };
    let resp = match kind(msg) {
        Kind::Request(mut m, id) => {
            let wire = Value::from(pool.next_wire_id.fetch_add(1, Ordering::Relaxed));
            m["id"] = wire.clone();
            let line = serde_json::to_vec(&m).unwrap_or_else(|_| body.to_vec());
            // A fresh session's `initialize` reply is kept, for the
            // sessions that may reuse its process.
            let opened = |reply: &Value| {
                if let (Some(s), Reuse::Warm) = (&new_sid, pool.reuse) {
                    let p = params.as_ref().unwrap_or(&Value::Null);
                    pool.warm.opened(s, &principal, p, reply);
                }
            };
            forward(&pool, pipe.clone(), (id, wire), &line, opened).await
        }
        Kind::OneWay(_)
            if initialized(&body)
                && sid
                    .as_deref()
                    .is_some_and(|s| pool.warm.skip_initialized(s)) =>
        {
            StatusCode::ACCEPTED.into_response()
        }
        Kind::OneWay(answer) => {
            if pipe.send(&body) {
                if let Some(id) = answer {
                    pipe.answered(&id);
                }
                StatusCode::ACCEPTED.into_response()
            } else {
                exited(&pool, &pipe)
            }
        }
        // Sent as is (a fuzz case): stdio SDKs often drop such a line
        // without a word, so silence is `202`, not a hang.
        Kind::Other(id) => odd_id(&pool, &pipe, &id, &body).await,
    };
    with_ids(resp, &pipe, new_sid)
}

/// Whether `body` is a `notifications/initialized`.
fn initialized(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|m| m["method"] == "notifications/initialized")
}

/// `resp` with the process that answered and a new session's id.
fn with_ids(mut resp: Response, pipe: &Pipe, new_sid: Option<String>) -> Response {
    if let Ok(v) = HeaderValue::from_str(&format!("stdio:{}", pipe.pid())) {
        resp.headers_mut().insert(INSTANCE, v);
    }
    if let Some(s) = new_sid
        && let Ok(v) = HeaderValue::from_str(&s)
    {
        resp.headers_mut().insert(SESSION_ID, v);
    }
    resp
}

fn cannot_start(why: &StdioError) -> Response {
    let said = format!("the stdio server could not start: {why}");
    own(StatusCode::BAD_GATEWAY, &said, Some(format!("{why}\n")))
}

/// `502`: the child exited before it answered; the body says how, with its
/// stderr tail.
fn exited(pool: &Pool, pipe: &Pipe) -> Response {
    (StatusCode::BAD_GATEWAY, gone_text(pool, pipe)).into_response()
}

/// How the child went before it answered: its exit status, or a closed
/// stdout, with its stderr tail (the line [`gone`] reads back).
fn gone_text(pool: &Pool, pipe: &Pipe) -> String {
    let exit = pool
        .log
        .exits()
        .into_iter()
        .rev()
        .find(|e| e.pid == pipe.pid());
    match exit {
        Some(e) => format!(
            "the stdio server exited before answering ({}){}\n",
            e.status,
            stderr_note(&e.stderr_tail)
        ),
        None => format!(
            "the stdio server closed its stdout before answering{}\n",
            stderr_note(&pipe.stderr_tail())
        ),
    }
}

fn json_reply(raw: Bytes) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        raw,
    )
        .into_response()
}

/// A message that is not a valid request: answered by the first response
/// naming its id (if it has one) or a null one, within [`NULL_ID_WAIT`],
/// else `202`. With [`Reuse::Warm`] a `ping` follows it: once the ping is
/// answered (and [`FENCE_GRACE`] more, or twice the ping's round trip) the
/// server has read past the line without a reply, which is the same
/// silence, told sooner; a process that answers neither within the wait is
/// not reused.
async fn odd_id(pool: &Pool, pipe: &Pipe, id: &Value, body: &[u8]) -> Response {
    let mut null = pipe.wait_for(&Value::Null);
    let mut own = (!id.is_null()).then(|| pipe.wait_for(id));
    if !pipe.send(body) {
        return exited(pool, pipe);
    }
    let mut fence = (pool.reuse == Reuse::Warm).then(|| {
        let wire = Value::from(pool.next_wire_id.fetch_add(1, Ordering::Relaxed));
        let w = pipe.wait_for(&wire);
        pipe.send(
            json!({"jsonrpc": "2.0", "id": wire, "method": "ping"})
                .to_string()
                .as_bytes(),
        );
        (w, Instant::now())
    });
    let first = async {
        loop {
            let m = match own.as_mut() {
                Some(own) => tokio::select! {
                    m = own.rx.recv() => m,
                    m = null.rx.recv() => m,
                },
                None => null.rx.recv().await,
            };
            match m {
                Some(m) if !m.is_response() => {}
                other => return other,
            }
        }
    };
    // Ends after the ping's reply and the grace, which it returns.
    let fenced = async {
        let Some((f, sent)) = fence.as_mut() else {
            return std::future::pending().await;
        };
        loop {
            match f.rx.recv().await {
                Some(m) if m.is_response() => break,
                Some(_) => {}
                // The process is gone: `first` says so.
                None => return std::future::pending().await,
            }
        }
        let grace = FENCE_GRACE.max(sent.elapsed() * 2);
        tokio::time::sleep(grace).await;
        grace
    };
    let silence = |waited: String| (StatusCode::ACCEPTED, [(NO_REPLY, waited)]).into_response();
    tokio::select! {
        biased;
        r = tokio::time::timeout(NULL_ID_WAIT, first) => match r {
            Ok(Some(m)) => json_reply(m.raw),
            Ok(None) => exited(pool, pipe),
            Err(_) => {
                if fence.is_some() {
                    pipe.disturb();
                }
                silence(format!("nothing within {} ms", NULL_ID_WAIT.as_millis()))
            }
        },
        grace = fenced => silence(format!(
            "nothing before its reply to a ping sent after it, and {} ms more",
            grace.as_millis()
        )),
    }
}

/// A request on the pipe whose response has not come: dropped unanswered
/// (its HTTP client went away), it is cancelled with
/// `notifications/cancelled`, as stdio clients cancel.
struct Pending {
    pipe: Arc<Pipe>,
    /// The client's id, put back on the response.
    id: Value,
    /// The id on the wire.
    wire: Value,
    waiter: Waiter,
    answered: bool,
}

impl Pending {
    /// A message for the HTTP client: a response gets the client's id back;
    /// one that came with another id (null, routed here as the oldest
    /// request in flight) keeps it, so the client sees what the server
    /// sent.
    fn for_client(&self, m: Routed) -> Routed {
        if !m.is_response() || self.id == self.wire || m.msg.get("id") != Some(&self.wire) {
            return m;
        }
        let mut msg = m.msg;
        msg["id"] = self.id.clone();
        let raw = serde_json::to_vec(&msg).map(Bytes::from).unwrap_or(m.raw);
        Routed { msg, raw }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.answered && !self.pipe.has_exited() {
            self.pipe.disturb();
            let cancel = json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": self.wire, "reason": "the client went away"},
            });
            self.pipe.send(cancel.to_string().as_bytes());
        }
    }
}

/// Sends a request whose client id is `ids.0` as `ids.1` and answers with
/// what comes back for it.
/// `answered` sees the response when it comes straight away.
async fn forward(
    pool: &Arc<Pool>,
    pipe: Arc<Pipe>,
    ids: (Value, Value),
    body: &[u8],
    answered: impl FnOnce(&Value),
) -> Response {
    let (id, wire) = ids;
    let waiter = pipe.wait_for(&wire);
    if !pipe.send(body) {
        return exited(pool, &pipe);
    }
    let mut pending = Pending {
        pipe: pipe.clone(),
        id,
        wire,
        waiter,
        answered: false,
    };
    let Some(first) = pending.waiter.rx.recv().await else {
        pending.answered = true;
        return exited(pool, &pipe);
    };
    if first.is_response() {
        pending.answered = true;
        let reply = pending.for_client(first);
        answered(&reply.msg);
        return json_reply(reply.raw);
    }
    // The server speaks first: stream everything up to the response.
    // A stream the process's end cuts short ends with an SSE comment (no
    // event to a client) saying so, as the bridge's 502 does.
    let pool = pool.clone();
    let events = futures::stream::unfold((Some(first), Some(pending)), move |(next, pending)| {
        let pool = pool.clone();
        async move {
            let mut pending = pending?;
            let m = match next {
                Some(m) => m,
                None => match pending.waiter.rx.recv().await {
                    Some(m) => m,
                    None => {
                        pending.answered = true;
                        let text = gone_text(&pool, &pending.pipe);
                        let comment: String = text.lines().map(|l| format!(": {l}\n")).collect();
                        return Some((Ok(Bytes::from(comment + "\n")), (None, None)));
                    }
                },
            };
            let done = m.is_response();
            pending.answered |= done;
            let event = sse_event(&pending.for_client(m));
            Some((
                Ok::<_, std::convert::Infallible>(event),
                (None, (!done).then_some(pending)),
            ))
        }
    });
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(events.boxed()),
    )
        .into_response()
}

fn sse_event(m: &Routed) -> Bytes {
    Bytes::from(crate::protocol::sse::encode_event(
        None,
        &String::from_utf8_lossy(&m.raw),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bridges_own_502_is_told_from_a_servers() {
        let reply = "HTTP 502\n\nthe stdio server exited before answering (exit status: 3); \
                     its stderr ends:\n  boom\n";
        assert_eq!(
            gone(reply),
            Some("the stdio server exited before answering (exit status: 3)")
        );
        let closed = "HTTP 502\n\nthe stdio server closed its stdout before answering\n";
        assert!(gone(closed).is_some());
        // A stream the exit cut short ends with it as an SSE comment.
        let stream = "HTTP 200\n\nevent: message\ndata: {}\n\n: the stdio server exited before \
                      answering (exit status: 3)\n: its stderr ends:\n";
        assert_eq!(
            gone(stream),
            Some("the stdio server exited before answering (exit status: 3)")
        );
        // A server's own 502 (or any other text) is the server's.
        assert_eq!(gone("HTTP 502\n\nupstream unavailable\n"), None);
    }
}
