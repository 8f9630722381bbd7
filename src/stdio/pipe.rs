//! JSON-RPC over one child's stdin and stdout: newline-delimited messages
//! out, and every line read back routed: a response to whoever waits for its
//! id (one with a null id, which names none, when no line waits for a null
//! id: to the one request in flight, if only one is), a request from the
//! server (an `elicitation/create`) to the oldest request still waiting
//! that is not held up on an unanswered one, a notification to the oldest,
//! anything that is not a JSON-RPC message into the [`Log`] as stdout
//! noise. When the child exits, every
//! waiter is released and the exit is logged with its stderr tail.

use super::StdioError;
use super::child::{self, Command, StderrTail};
use super::log::{Exit, Kind, Log};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, watch};

/// Set (to anything) to print every line written to and read from a
/// stdio server on stderr, prefixed with its pid: `>` sent, `<` read.
pub const TRACE_ENV: &str = "ELICITKIT_STDIO_TRACE";

fn tracing_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(TRACE_ENV).is_some())
}

/// `bytes` as one line of newline-delimited JSON-RPC: line breaks become
/// spaces, which JSON allows between tokens and never has inside a string.
pub fn one_line(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect()
}

/// Writes each line sent on the returned channel to `w`, newline-ended
/// and flushed, until the channel closes (then `w` is dropped: a child's
/// stdin closes) or a write fails. The task ends with the channel.
pub fn spawn_line_writer(
    w: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) -> (mpsc::UnboundedSender<Vec<u8>>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let task = tokio::spawn(async move {
        let mut w = w;
        while let Some(mut line) = rx.recv().await {
            line.push(b'\n');
            if w.write_all(&line).await.is_err() || w.flush().await.is_err() {
                break;
            }
        }
    });
    (tx, task)
}

/// The longest stdout line read as one message.
pub const MAX_LINE: usize = 16 << 20;

/// Routing key of a JSON-RPC id: its JSON text (`1`, `"a"`, `null`).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

#[derive(Default)]
struct Routes {
    /// Waiters by id key, with the order they registered in.
    waiting: HashMap<String, mpsc::UnboundedSender<Routed>>,
    order: VecDeque<String>,
    /// Server requests handed to a waiter and not answered yet, by their id
    /// key: that waiter's request is held up on its client.
    asked: HashMap<String, String>,
}

impl Routes {
    /// The request a null-id response answers when no line waits for a null
    /// id: the one request in flight, if there is exactly one (a valid
    /// request answered with id null, told at once); with several the
    /// response could be any one's, and it is dropped (theirs time out).
    fn only_in_flight(&self) -> Option<String> {
        let null = id_key(&Value::Null);
        let mut keys = self.order.iter().filter(|k| **k != null);
        match (keys.next(), keys.next()) {
            (Some(k), None) => Some(k.clone()),
            _ => None,
        }
    }

    /// The request a server request (an `elicitation/create`) belongs to:
    /// the oldest in flight not held up on an unanswered one, else the
    /// oldest. A client that stops reading a call at its elicitation leaves
    /// that call in flight until the bridge sees its stream gone, which
    /// can be after the client's next call elicits: the oldest took that
    /// elicitation, and the next call waited out the server's own timeout
    /// (30 s in a `check` over stdio, at random).
    fn for_server_request(&self) -> Option<String> {
        self.order
            .iter()
            .find(|k| !self.asked.values().any(|w| w == *k))
            .or(self.order.front())
            .cloned()
    }
}

/// One child speaking JSON-RPC on its stdio.
pub struct Pipe {
    out: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    routes: Arc<Mutex<Routes>>,
    exited: watch::Receiver<bool>,
    /// Set when we stop the child on purpose (its exit is no finding).
    stopping: Arc<AtomicBool>,
    /// Set when something was left unsettled on it (a request cancelled,
    /// a line neither answered nor read past): never handed to another
    /// session ([`super::warm`]).
    disturbed: AtomicBool,
    pid: u32,
    stderr: StderrTail,
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipe").field("pid", &self.pid).finish()
    }
}

/// A message read from the child: parsed, and the line as written.
#[derive(Debug, Clone)]
pub struct Routed {
    /// The message.
    pub msg: Value,
    /// Its line, without the line break.
    pub raw: bytes::Bytes,
}

impl Routed {
    /// Whether this is a response (it has no `method`).
    pub fn is_response(&self) -> bool {
        self.msg.get("method").is_none()
    }
}

/// A registration for the replies to one request; dropping it stops
/// routing to it.
pub struct Waiter {
    key: String,
    routes: Arc<Mutex<Routes>>,
    /// Messages for this request: those the server sent meanwhile, then
    /// the response. Closed when the child exits.
    pub rx: mpsc::UnboundedReceiver<Routed>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Ok(mut r) = self.routes.lock() {
            r.waiting.remove(&self.key);
            r.order.retain(|k| *k != self.key);
            r.asked.retain(|_, w| *w != self.key);
        }
    }
}

impl Pipe {
    /// Starts `cmd` and its reader. With `refuse_server_requests` (a pipe
    /// of 2026-07-28 clients, which take no requests from the server), a
    /// request the server sends is still passed on (as evidence) and is
    /// answered `-32601` at once, as such a client would; else its client
    /// answers it (a 2025-11-25 session).
    pub fn start(
        cmd: &Command,
        log: Arc<Log>,
        refuse_server_requests: bool,
    ) -> Result<Pipe, StdioError> {
        let running = child::spawn(cmd)?;
        let kind = Kind::of(!refuse_server_requests);
        log.spawned(kind);
        let child::Running {
            mut child,
            stdin,
            stdout,
            stderr,
            pid,
        } = running;
        let (out, _writer) = spawn_line_writer(stdin);
        // Weak: the reader must not keep stdin open. With a strong clone,
        // closing stdin to stop the child waited for the child's exit,
        // which waited for stdin to close, until the grace ran out and the
        // child was killed.
        let refuse = refuse_server_requests.then(|| out.downgrade());
        let routes = Arc::new(Mutex::new(Routes::default()));
        let (exited_tx, exited) = watch::channel(false);
        let stopping = Arc::new(AtomicBool::new(false));
        let (r, st, tail) = (routes.clone(), stopping.clone(), stderr.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader)
                    .take(MAX_LINE as u64)
                    .read_until(b'\n', &mut line)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tracing_on() {
                            eprintln!("[{pid}] < {}", String::from_utf8_lossy(line.trim_ascii()));
                        }
                        route(&r, (&log, kind), &line, refuse.as_ref())
                    }
                }
            }
            // End of stdout: the child is gone or going.
            let status =
                match tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await {
                    Ok(Ok(s)) => s.to_string(),
                    Ok(Err(e)) => format!("unknown ({e})"),
                    // A status the wake-up missed is still read before
                    // the kill (a loaded test process can be late).
                    Err(_) => match child.try_wait() {
                        Ok(Some(s)) => s.to_string(),
                        _ => {
                            let _ = child.start_kill();
                            "closed its stdout and did not exit within 2 s (killed)".into()
                        }
                    },
                };
            child::kill_group(pid);
            // Let the stderr reader catch up before the tail is read.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            log.exited(Exit {
                pid,
                status,
                stderr_tail: tail.text(),
                expected: st.load(Ordering::SeqCst),
                kind,
            });
            if let Ok(mut r) = r.lock() {
                r.waiting.clear();
                r.order.clear();
                r.asked.clear();
            }
            let _ = exited_tx.send(true);
        });
        Ok(Pipe {
            out: Mutex::new(Some(out)),
            routes,
            exited,
            stopping,
            disturbed: AtomicBool::new(false),
            pid,
            stderr,
        })
    }

    /// The child's pid (its process group).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the child has exited.
    pub fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }

    /// Resolves once the child has exited.
    pub async fn wait_exit(&self) {
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|e| *e).await;
    }

    /// Marks it as left unsettled: not to be reused.
    pub fn disturb(&self) {
        self.disturbed.store(true, Ordering::SeqCst);
    }

    /// The client answered the server request with id `id`: the request it
    /// came with is no longer held up on it.
    pub fn answered(&self, id: &Value) {
        if let Ok(mut r) = self.routes.lock() {
            r.asked.remove(&id_key(id));
        }
    }

    /// Whether another session may take it over: it runs, nothing waits
    /// on it, and nothing was left unsettled on it.
    pub fn reusable(&self) -> bool {
        !self.has_exited()
            && !self.disturbed.load(Ordering::SeqCst)
            && self.routes.lock().is_ok_and(|r| r.waiting.is_empty())
    }

    /// The child's stderr tail so far.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Registers for the replies to the request with id `id`. A second
    /// registration of a live id replaces the first.
    pub fn wait_for(&self, id: &Value) -> Waiter {
        let key = id_key(id);
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut r) = self.routes.lock() {
            if r.waiting.insert(key.clone(), tx).is_none() {
                r.order.push_back(key.clone());
            }
            if self.has_exited() {
                r.waiting.remove(&key);
            }
        }
        Waiter {
            key,
            routes: self.routes.clone(),
            rx,
        }
    }

    /// Writes one message (one line; line breaks inside it are spaces,
    /// which JSON allows between tokens). `false` if the child is gone.
    pub fn send(&self, bytes: &[u8]) -> bool {
        let line = one_line(bytes);
        if tracing_on() {
            eprintln!("[{}] > {}", self.pid, String::from_utf8_lossy(&line));
        }
        !self.has_exited()
            && self
                .out
                .lock()
                .is_ok_and(|o| o.as_ref().is_some_and(|o| o.send(line).is_ok()))
    }

    /// Stops the child on purpose: closes stdin, waits up to `grace` for
    /// it to exit, then kills its process group.
    pub async fn stop(self, grace: std::time::Duration) {
        self.stopping.store(true, Ordering::SeqCst);
        // Dropping the sender ends the writer task, which closes stdin.
        if let Ok(mut out) = self.out.lock() {
            out.take();
        }
        let mut rx = self.exited.clone();
        let _ = tokio::time::timeout(grace, rx.wait_for(|e| *e)).await;
        // Dropping `self` kills what is left of the group (if not reaped).
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Once reaped, its pid may belong to another process.
        if !self.has_exited() {
            child::kill_group(self.pid);
        }
    }
}

/// The answer of a client that takes no server requests.
pub const REFUSAL: &str = "this client takes no requests from the server (2026-07-28)";

/// Routes one stdout line; a server request is also answered `-32601` on
/// `refuse` when given.
fn route(
    routes: &Mutex<Routes>,
    (log, kind): (&Log, Kind),
    line: &[u8],
    refuse: Option<&mpsc::WeakUnboundedSender<Vec<u8>>>,
) {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return;
    }
    let msg = match serde_json::from_slice::<Value>(trimmed) {
        Ok(v) if is_jsonrpc(&v) => v,
        _ => {
            log.noise(kind, trimmed);
            return;
        }
    };
    if let (Some(out), Some(id)) = (refuse.and_then(|w| w.upgrade()), msg.get("id"))
        && msg.get("method").is_some()
    {
        let no = serde_json::json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": REFUSAL}});
        let _ = out.send(no.to_string().into_bytes());
    }
    let Ok(mut r) = routes.lock() else { return };
    let is_response = msg.get("method").is_none();
    // A request from the server, on a pipe whose clients take them: its id
    // key, recorded against the request it goes to until it is answered.
    let asking = msg
        .get("id")
        .filter(|_| !is_response && refuse.is_none())
        .map(id_key);
    let target = if is_response {
        // A response with a null id names no request; when nothing waits
        // for one (a line that was not a request) and one request is in
        // flight, it is that one's, and it gets it as it came: a finding,
        // not a wait until the client's timeout.
        msg.get("id").map(id_key).and_then(|k| {
            if msg["id"].is_null() && !r.waiting.contains_key(&k) {
                r.only_in_flight()
            } else {
                Some(k)
            }
        })
    } else if asking.is_some() {
        // A request from the server belongs to a request in flight (one
        // call at a time is the stdio norm; the bridge gives each
        // 2025-11-25 session its own process).
        r.for_server_request()
    } else {
        // A notification: the oldest request still waiting.
        r.order.front().cloned()
    };
    let delivered = target
        .as_ref()
        .and_then(|k| r.waiting.get(k))
        .is_some_and(|tx| {
            tx.send(Routed {
                msg: msg.clone(),
                raw: bytes::Bytes::copy_from_slice(trimmed),
            })
            .is_ok()
        });
    if delivered && let (Some(id), Some(k)) = (asking, target) {
        r.asked.insert(id, k);
    }
    if !delivered && tracing_on() {
        eprintln!("(no request waits for it: dropped)");
    }
}

/// A JSON-RPC 2.0 message: an object with `"jsonrpc": "2.0"` and a method
/// or an id.
fn is_jsonrpc(v: &Value) -> bool {
    v.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && (v.get("method").is_some() || v.get("id").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sh(script: &str) -> Command {
        Command::new(["sh", "-c", script])
    }

    #[tokio::test]
    async fn replies_reach_their_waiter_and_noise_is_logged() {
        for refuse in [false, true] {
            replies_reach_their_waiter(refuse).await;
        }
    }

    async fn replies_reach_their_waiter(refuse_server_requests: bool) {
        let log = Arc::new(Log::default());
        // Echoes each line back as the response to id 7, after one line of noise.
        let p = Pipe::start(
            &sh(r#"echo 'hello from print()'; while read l; do echo '{"jsonrpc":"2.0","id":7,"result":{}}'; done"#),
            log.clone(),
            refuse_server_requests,
        )
        .unwrap();
        let mut w = p.wait_for(&json!(7));
        assert!(p.send(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#));
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), w.rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.msg["id"], 7);
        assert!(got.is_response());
        assert_eq!(log.noise_lines(), vec!["hello from print()".to_owned()]);
        p.stop(std::time::Duration::from_secs(2)).await;
        let exits = log.exits();
        assert_eq!(exits.len(), 1);
        assert!(exits[0].expected, "{exits:?}");
        // Closing stdin ended it: it exited by itself, not killed at the
        // end of the grace (the reader once held stdin open).
        assert_eq!(exits[0].status, "exit status: 0", "{exits:?}");
    }

    async fn wait(w: &mut Waiter) -> Routed {
        tokio::time::timeout(std::time::Duration::from_secs(5), w.rx.recv())
            .await
            .expect("delivered, not left to a timeout")
            .unwrap()
    }

    #[tokio::test]
    async fn a_null_id_reply_answers_the_one_request_in_flight() {
        let log = Arc::new(Log::default());
        // Answers a line holding "own" as id 2, every other with an error
        // whose id is null.
        let p = Pipe::start(
            &sh(r#"while read l; do case "$l" in *own*) echo '{"jsonrpc":"2.0","id":2,"result":{}}';; *) echo '{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"x"}}';; esac; done"#),
            log,
            true,
        )
        .unwrap();
        // One request in flight: the reply is its own, at once.
        let mut first = p.wait_for(&json!(1));
        assert!(p.send(br#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#));
        assert!(wait(&mut first).await.msg["id"].is_null());
        drop(first);
        // Two in flight: it could be either's, so it is neither's.
        let mut second = p.wait_for(&json!(2));
        let mut third = p.wait_for(&json!(3));
        assert!(p.send(br#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#));
        assert!(p.send(br#"{"jsonrpc":"2.0","id":2,"method":"own"}"#));
        assert_eq!(wait(&mut second).await.msg["id"], 2);
        assert!(third.rx.try_recv().is_err(), "not guessed");
        drop((second, third));
        // A line that waits for a null id (one that was not a request)
        // gets it first.
        let mut null = p.wait_for(&Value::Null);
        let mut fourth = p.wait_for(&json!(4));
        assert!(p.send(b"not json"));
        assert!(wait(&mut null).await.msg["id"].is_null());
        assert!(fourth.rx.try_recv().is_err());
        p.stop(std::time::Duration::from_secs(2)).await;
    }

    /// A call left holding an unanswered elicitation (its client stopped
    /// reading) does not take the next call's: that goes to the call not
    /// held up; with both held up, the oldest; an answered one is free
    /// again.
    #[tokio::test]
    async fn a_server_request_goes_to_the_call_not_held_up_on_one() {
        let log = Arc::new(Log::default());
        // Each request line gets an elicitation/create with the request's
        // own id number as its id ("e1" for id 1, ...).
        let p = Pipe::start(
            &sh(r#"while read l; do case "$l" in *'"id":1,'*) n=1;; *'"id":2,'*) n=2;; *) continue;; esac; echo '{"jsonrpc":"2.0","id":"e'$n'","method":"elicitation/create","params":{}}'; done"#),
            log,
            false,
        )
        .unwrap();
        let mut first = p.wait_for(&json!(1));
        let mut second = p.wait_for(&json!(2));
        assert!(p.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#));
        assert_eq!(wait(&mut first).await.msg["id"], "e1");
        // The first is held up on e1: the next elicitation is the second's.
        assert!(p.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#));
        assert_eq!(wait(&mut second).await.msg["id"], "e2");
        assert!(first.rx.try_recv().is_err());
        // Both held up: the oldest, as before.
        assert!(p.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#));
        assert_eq!(wait(&mut first).await.msg["id"], "e1");
        assert!(second.rx.try_recv().is_err());
        // The second's answered: it is free again, the first still held.
        p.answered(&json!("e2"));
        assert!(p.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#));
        assert_eq!(wait(&mut second).await.msg["id"], "e2");
        assert!(first.rx.try_recv().is_err());
        p.stop(std::time::Duration::from_secs(2)).await;
    }

    #[tokio::test]
    async fn an_exit_releases_waiters_and_keeps_the_stderr_tail() {
        let log = Arc::new(Log::default());
        let p = Pipe::start(
            &sh("read l; echo 'boom: bad input' >&2; exit 3"),
            log.clone(),
            false,
        )
        .unwrap();
        let mut w = p.wait_for(&json!(1));
        p.send(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let r = tokio::time::timeout(std::time::Duration::from_secs(5), w.rx.recv()).await;
        assert!(r.unwrap().is_none(), "the waiter is released, not answered");
        p.wait_exit().await;
        let e = &log.exits()[0];
        assert!(!e.expected);
        assert!(e.status.contains('3'), "{e:?}");
        assert!(e.stderr_tail.contains("boom"), "{e:?}");
        assert!(!p.send(b"{}"));
    }
}
