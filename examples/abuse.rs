//! The abuse benchmark's driver (run by `loadtests/abuse.sh`), against an
//! `elicitkit serve` on 127.0.0.1:
//!
//! ```text
//! abuse slowloris --target URL [--conns 4000] [--baseline 10s] [--attack 30s]
//!                 [--reconnect-rate 0]
//! abuse slow-bodies --target URL --pid PID [--conns 4000] [--declared 1048575]
//!                 [--token NAME | --tokens K | --login] [--burst 0] [--legit 80]
//!                 [--spread 20s] [--reconnect-after 1s]
//! abuse streams   --target URL --pid PID [--conns 400] [--tokens 1] [--legit 80]
//!                 [--spread 20s]
//! abuse store     --target URL --pid PID [--tokens 1] [--concurrency 16]
//!                 [--fill 10s] [--legit 80] [--spread 20s]
//! abuse costly    --target URL --pid PID [--n 40] [--keys 88000]
//! abuse evict     --target URL --redis redis://127.0.0.1:PORT/0 [--n 200]
//!                 [--junk-mb 64]
//! abuse retries   --target URL [--n 1000]
//! abuse forget    --target URL --pid PID [--db PATH] [--flows N] [--legacy N]
//!                 [--concurrency 16] [--rate 0] [--window 90s] [--max-time 60m]
//! ```
//!
//! Every mode is bounded in time and count, refuses a non-loopback
//! target, writes one JSON object of results to stdout (`--out FILE` as
//! well), and stops everything it started before it returns.
//!
//! - `slowloris`: legitimate `tools/list` latency (one kept-alive client,
//!   one new connection per request) first alone, then while `--conns`
//!   attacker connections (half silent, half dribbling a header byte every
//!   2 s, each reopened as soon as the server closes it, or at most
//!   `--reconnect-rate` reopenings a second in all) are held open.
//! - `slow-bodies`: `--conns` attacker connections that each send an MCP
//!   POST head declaring `--declared` body bytes (with `--token` as bearer
//!   token, `--tokens K` made-up names `made-up-0` … round robin, or none;
//!   `--login`: a sign-in form POST with a forged Origin and CSRF cookie),
//!   then `--burst` body bytes at once, then one byte a second, each
//!   reopened `--reconnect-after` the server answered or closed it;
//!   meanwhile `--legit` `tools/list` requests, each as its own user on a
//!   new connection, spread evenly over `--spread`: how many were
//!   answered, their latency, what the attackers got, and the server's
//!   RSS before, at its peak and at the end.
//! - `streams`: `--conns` attacker slots each holding a 2025-11-25
//!   `tools/call deploy` stream whose elicitation is never answered
//!   (reopened 10 ms after the server ends it), on one session per name:
//!   one name (`--tokens 1`, the default) or `--tokens K` made-up ones;
//!   the legitimate requests, RSS and connections as for `slow-bodies`.
//! - `store`: `--concurrency` attackers starting `connect_billing` URL
//!   flows (pending records) as fast as they go, as one name or `--tokens
//!   K` made-up ones, `--fill` alone and then while `--legit` legitimate
//!   users each start one: how many legitimate flows started, the store's
//!   counters and RSS.
//! - `costly`: `--n` bodies of `--keys` JSON object keys (a `tools/list`
//!   under the 1 MiB body limit), and `--n` plain bodies of the same size,
//!   one at a time: the server's CPU per body (from `/proc/PID/stat`) and
//!   the statuses.
//! - `evict`: `--n` deployments completed through a server on a Redis
//!   store with a `maxmemory` limit, then `--junk-mb` of other keys written
//!   to that Redis (so it evicts what its policy lets it) while other users
//!   keep completing requests, then every completed request's final retry
//!   again: how many deployed a second time, and how many keys Redis
//!   evicted.
//! - `retries`: per side-effecting tool, one confirmation brought to its
//!   final retry, then `--n` copies of that retry at once: how many
//!   completed, how many got the recorded outcome, whether every outcome
//!   is identical, and the tool's side-effect counter before and after.
//! - `forget`: URL flows (call, page, submit, final retry) and legacy calls
//!   (initialize, call, answer, DELETE) as fast as `--concurrency` workers
//!   go (or `--rate` per second), sampling the server's RSS and the SQLite file (plus WAL) every
//!   second; flatness is judged on the samples after `--window`.

#[path = "../tests/it/support/server.rs"]
#[allow(unused_imports)]
mod server_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use server_support::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

#[derive(Parser)]
#[command(about = "Abuse benchmark driver for elicitkit serve (loopback only)")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
    /// Also write the JSON result here.
    #[arg(long, global = true)]
    out: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Mode {
    /// Legitimate tools/list latency under idle and slowloris connections.
    Slowloris {
        #[arg(long)]
        target: String,
        #[arg(long, default_value_t = 4000)]
        conns: usize,
        #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
        baseline: Duration,
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        attack: Duration,
        /// Most reconnects a second across all attacker slots (0: each
        /// slot reconnects at once), for a churn rate that does not grow
        /// with how fast the server sheds.
        #[arg(long, default_value_t = 0)]
        reconnect_rate: u64,
    },
    /// Legitimate requests among connections trickling large bodies.
    SlowBodies(SlowBodyOpts),
    /// Legitimate requests among 2025-11-25 streams waiting on their client.
    Streams(StreamOpts),
    /// Legitimate URL flows while attackers fill the store with pending ones.
    Store(StoreOpts),
    /// The server's CPU per body: many JSON keys against a plain body.
    Costly(CostlyOpts),
    /// Completed requests run again after Redis evicts keys?
    Evict {
        #[arg(long)]
        target: String,
        #[arg(long)]
        redis: String,
        #[arg(long, default_value_t = 200)]
        n: usize,
        #[arg(long, default_value_t = 64)]
        junk_mb: usize,
    },
    /// Concurrent retries of one confirmation of each side-effecting tool.
    Retries {
        #[arg(long)]
        target: String,
        #[arg(long, default_value_t = 1000)]
        n: usize,
    },
    /// Steady URL flows and legacy calls; RSS and SQLite file over time.
    Forget(ForgetOpts),
}

#[derive(clap::Args)]
struct SlowBodyOpts {
    #[arg(long)]
    target: String,
    #[arg(long)]
    pid: u32,
    #[arg(long, default_value_t = 4000)]
    conns: usize,
    #[arg(long, default_value_t = 1_048_575)]
    declared: usize,
    /// The attackers' bearer token (default: no Authorization header).
    #[arg(long)]
    token: Option<String>,
    /// Made-up names `made-up-0` … `made-up-(K-1)` as the attackers'
    /// tokens, round robin (instead of --token).
    #[arg(long, conflicts_with = "token")]
    tokens: Option<usize>,
    /// Sign-in form POSTs (`/login`, a forged Origin and CSRF cookie, no
    /// credentials) instead of MCP POSTs.
    #[arg(long, conflicts_with_all = ["token", "tokens"])]
    login: bool,
    /// Body bytes each attacker sends at once after its head.
    #[arg(long, default_value_t = 0)]
    burst: usize,
    #[arg(long, default_value_t = 80)]
    legit: usize,
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    spread: Duration,
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    reconnect_after: Duration,
}

#[derive(clap::Args)]
struct StreamOpts {
    #[arg(long)]
    target: String,
    #[arg(long)]
    pid: u32,
    #[arg(long, default_value_t = 400)]
    conns: usize,
    /// Attacker names: 1 (`mallory`) or K made-up ones, round robin.
    #[arg(long, default_value_t = 1)]
    tokens: usize,
    #[arg(long, default_value_t = 80)]
    legit: usize,
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    spread: Duration,
}

#[derive(clap::Args)]
struct StoreOpts {
    #[arg(long)]
    target: String,
    #[arg(long)]
    pid: u32,
    /// Attacker names: 1 (`mallory`) or K made-up ones, round robin.
    #[arg(long, default_value_t = 1)]
    tokens: usize,
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// How long the attackers run alone before the legitimate users come.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    fill: Duration,
    #[arg(long, default_value_t = 80)]
    legit: usize,
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    spread: Duration,
}

#[derive(clap::Args)]
struct CostlyOpts {
    #[arg(long)]
    target: String,
    #[arg(long)]
    pid: u32,
    #[arg(long, default_value_t = 40)]
    n: usize,
    #[arg(long, default_value_t = 88_000)]
    keys: usize,
}

#[derive(clap::Args)]
struct ForgetOpts {
    #[arg(long)]
    target: String,
    #[arg(long)]
    pid: u32,
    #[arg(long)]
    db: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 1_000_000)]
    flows: u64,
    #[arg(long, default_value_t = 1_000_000)]
    legacy: u64,
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Operations started per second (0: as fast as the workers go). A
    /// steady rate keeps the live set, and so the memory it needs, steady.
    #[arg(long, default_value_t = 0)]
    rate: u64,
    #[arg(long, default_value = "90s", value_parser = humantime::parse_duration)]
    window: Duration,
    #[arg(long, default_value = "60m", value_parser = humantime::parse_duration)]
    max_time: Duration,
}

fn loopback(target: &str) -> Result<String, String> {
    let base = target
        .trim_end_matches('/')
        .trim_end_matches("/mcp")
        .to_owned();
    let addr: std::net::SocketAddr = base
        .strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("--target {target:?}: use http://127.0.0.1:PORT"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("--target {target:?} is not a loopback address"));
    }
    Ok(base)
}

/// Percentiles of latencies, in milliseconds.
fn summary(mut lat: Vec<Duration>, errors: u64) -> Value {
    lat.sort_unstable();
    let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    let q = |p: f64| {
        if lat.is_empty() {
            Value::Null
        } else {
            let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
            json!(ms(lat[i]))
        }
    };
    json!({
        "requests": lat.len(),
        "errors": errors,
        "p50_ms": q(0.50), "p90_ms": q(0.90), "p99_ms": q(0.99),
        "max_ms": lat.last().map(|d| json!(ms(*d))).unwrap_or(Value::Null),
    })
}

fn client(pooled: bool) -> reqwest::Client {
    let b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(5));
    let b = if pooled {
        b
    } else {
        b.pool_max_idle_per_host(0)
    };
    b.build().expect("client")
}

fn srv(base: &str, pooled: bool) -> Srv {
    let mut s = remote(base);
    s.http = client(pooled);
    s
}

/// A legitimate 2026-07-28 `tools/list` as `token`, ready to send.
fn tools_list(s: &Srv, token: &str) -> reqwest::RequestBuilder {
    let body =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": meta(&json!({}))}})
            .to_string();
    s.http
        .post(&s.url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/list")
        .body(body)
}

/// Sequential legitimate `tools/list` calls until `stop`; latencies and errors.
async fn legit(s: Srv, stop: Arc<AtomicBool>) -> (Vec<Duration>, u64) {
    let (mut lat, mut errors) = (Vec::new(), 0);
    while !stop.load(Ordering::Relaxed) {
        let req = tools_list(&s, "legit");
        let t = Instant::now();
        let r = req.send().await;
        let ok = match r {
            Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
            _ => false,
        };
        if ok {
            lat.push(t.elapsed());
        } else {
            errors += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (lat, errors)
}

async fn measure(base: &str, secs: Duration) -> Value {
    let stop = Arc::new(AtomicBool::new(false));
    let kept = tokio::spawn(legit(srv(base, true), stop.clone()));
    let fresh = tokio::spawn(legit(srv(base, false), stop.clone()));
    tokio::time::sleep(secs).await;
    stop.store(true, Ordering::Relaxed);
    let (a, ea) = kept.await.expect("kept-alive client");
    let (b, eb) = fresh.await.expect("fresh-connection client");
    let mut all = a.clone();
    all.extend_from_slice(&b);
    json!({
        "all": summary(all, ea + eb),
        "kept_alive": summary(a, ea),
        "new_connection_each": summary(b, eb),
    })
}

/// One attacker slot: connect, misbehave until the server closes the
/// connection, reconnect; until `stop`. Counts reconnects.
async fn attacker(
    addr: std::net::SocketAddr,
    dribble: bool,
    stop: Arc<AtomicBool>,
    opened: Arc<AtomicU64>,
    pace: Option<Arc<tokio::sync::Semaphore>>,
) {
    let mut first = true;
    while !stop.load(Ordering::Relaxed) {
        if let (Some(p), false) = (&pace, first)
            && let Ok(permit) = p.acquire().await
        {
            permit.forget();
        }
        first = false;
        let Ok(mut c) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        opened.fetch_add(1, Ordering::Relaxed);
        if dribble
            && c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .await
                .is_err()
        {
            continue;
        }
        let mut buf = [0u8; 512];
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            // Wait up to 2 s for the server to close us; then one more byte.
            match tokio::time::timeout(Duration::from_secs(2), c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(_)) => break, // an answer (408/400): the slot starts over
                Err(_) => {
                    if dribble && c.write_all(b"a").await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

async fn open_connections(base: &str) -> Option<u64> {
    let s = srv(base, true);
    let r = s
        .http
        .get(format!("{base}/stats"))
        .bearer_auth("bench")
        .send()
        .await
        .ok()?;
    let v: Value = r.json().await.ok()?;
    v["connections"]["open"].as_u64()
}

/// Permits for `rate` reconnects a second, handed out every 10 ms (at
/// most a second's worth banked), until `stop`.
fn pacer(rate: u64, stop: Arc<AtomicBool>) -> Option<Arc<tokio::sync::Semaphore>> {
    if rate == 0 {
        return None;
    }
    let sem = Arc::new(tokio::sync::Semaphore::new(0));
    let s = sem.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        let (mut due, start) = (0u64, Instant::now());
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let should = rate * start.elapsed().as_millis() as u64 / 1000;
            let add = (should - due).min(rate) as usize;
            due = should;
            if s.available_permits() < rate as usize {
                s.add_permits(add);
            }
        }
        s.close();
    });
    Some(sem)
}

async fn slowloris(
    base: String,
    conns: usize,
    baseline: Duration,
    attack: Duration,
    reconnect_rate: u64,
) -> Value {
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("addr");
    let before = measure(&base, baseline).await;
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicU64::new(0));
    let pace = pacer(reconnect_rate, stop.clone());
    let mut slots = Vec::new();
    for i in 0..conns {
        slots.push(tokio::spawn(attacker(
            addr,
            i % 2 == 1,
            stop.clone(),
            opened.clone(),
            pace.clone(),
        )));
        if i % 200 == 199 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Until the server holds (nearly) all of them, at most 30 s.
    let ramp = Instant::now();
    while ramp.elapsed() < Duration::from_secs(30) {
        if open_connections(&base).await.unwrap_or(0) as usize >= conns * 95 / 100 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let sampling = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (base, sampling) = (base.clone(), sampling.clone());
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while !sampling.load(Ordering::Relaxed) {
                if let Some(n) = open_connections(&base).await {
                    seen.push(n);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            seen
        })
    };
    let under = measure(&base, attack).await;
    sampling.store(true, Ordering::Relaxed);
    let seen = sampler.await.unwrap_or_default();
    stop.store(true, Ordering::Relaxed);
    for s in slots {
        s.abort();
        let _ = s.await;
    }
    json!({
        "attack_connections": conns,
        "reconnect_rate": reconnect_rate,
        "ramp_s": ramp.elapsed().as_secs_f64().min(30.0),
        "server_open_connections_during_attack": {
            "min": seen.iter().min(), "max": seen.iter().max(),
            "mean": if seen.is_empty() { 0.0 } else { seen.iter().sum::<u64>() as f64 / seen.len() as f64 },
        },
        "attacker_connects": opened.load(Ordering::Relaxed),
        "baseline": before,
        "under_attack": under,
    })
}

/// What the slow-body attackers saw, shared by their slots.
#[derive(Default)]
struct Seen {
    connects: AtomicU64,
    heads_sent: AtomicU64,
    answers: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

/// One slow-body slot: a POST head (and a burst), then a body byte a second until the
/// server answers or closes; again `reconnect_after` later; until `stop`.
async fn slow_body(
    addr: std::net::SocketAddr,
    head: Arc<Vec<u8>>,
    reconnect_after: Duration,
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut c) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        seen.connects.fetch_add(1, Ordering::Relaxed);
        if c.write_all(&head).await.is_ok() {
            seen.heads_sent.fetch_add(1, Ordering::Relaxed);
        }
        let mut buf = [0u8; 512];
        let outcome = loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match tokio::time::timeout(Duration::from_secs(1), c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break "closed".to_owned(),
                Ok(Ok(n)) => {
                    let line = String::from_utf8_lossy(&buf[..n.min(12)]).into_owned();
                    break line.trim().to_owned();
                }
                Err(_) => {
                    if c.write_all(b" ").await.is_err() {
                        break "write failed".to_owned();
                    }
                }
            }
        };
        if let Ok(mut a) = seen.answers.lock() {
            *a.entry(outcome).or_default() += 1;
        }
        tokio::time::sleep(reconnect_after).await;
    }
}

/// One legitimate `tools/list` as `user` on a new connection: its latency
/// when answered, else what happened.
async fn legit_once(s: &Srv, user: &str) -> Result<Duration, String> {
    let req = tools_list(s, user);
    let t = Instant::now();
    let r = req.send().await.map_err(|e| {
        if e.is_timeout() {
            "timeout".to_owned()
        } else {
            "connection error".to_owned()
        }
    })?;
    let status = r.status();
    let text = r.text().await.map_err(|_| "body cut off".to_owned())?;
    if status.is_success() && text.contains("\"tools\"") {
        Ok(t.elapsed())
    } else {
        Err(format!("HTTP {}", status.as_u16()))
    }
}

/// The name of attacker slot `i`: `token`, else made-up name `i mod
/// tokens`, else none.
fn attacker_name(token: Option<&str>, tokens: Option<usize>, i: usize) -> Option<String> {
    match (token, tokens) {
        (Some(t), _) => Some(t.to_owned()),
        (None, Some(k)) => Some(format!("made-up-{}", i % k.max(1))),
        (None, None) => None,
    }
}

/// RSS and open connections of the server, sampled every second until
/// [`Sampler::stop`].
struct Sampler {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(Vec<u64>, Vec<u64>)>,
}

impl Sampler {
    fn start(base: &str, pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let (base, flag) = (base.to_owned(), stop.clone());
        let task = tokio::spawn(async move {
            let (mut rss, mut open) = (Vec::new(), Vec::new());
            while !flag.load(Ordering::Relaxed) {
                rss.extend(rss_kib(pid));
                open.extend(open_connections(&base).await);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            (rss, open)
        });
        Sampler { stop, task }
    }

    async fn stop(self) -> (Vec<u64>, Vec<u64>) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or_default()
    }
}

/// `n` legitimate requests (`each(i)`, each on a new connection), spread
/// evenly over `spread`: their latencies when answered, and what the others
/// got.
async fn legit_spread<F, Fut>(
    n: usize,
    spread: Duration,
    each: F,
) -> (Vec<Duration>, std::collections::BTreeMap<String, u64>)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<Duration, String>> + Send + 'static,
{
    let every = spread / u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let call = each(i);
            tokio::spawn(async move {
                tokio::time::sleep(every * u32::try_from(i).unwrap_or(0)).await;
                call.await
            })
        })
        .collect();
    let (mut lat, mut failures) = (Vec::new(), std::collections::BTreeMap::<String, u64>::new());
    for c in calls {
        match c.await.unwrap_or_else(|_| Err("task failed".into())) {
            Ok(d) => lat.push(d),
            Err(why) => *failures.entry(why).or_default() += 1,
        }
    }
    (lat, failures)
}

/// The legitimate side of an attack part: `n` `tools/list` requests, each
/// as its own user (`legit-N`) on a new connection, spread over `spread`.
async fn legit_tools_lists(base: &str, n: usize, spread: Duration) -> Value {
    let base = base.to_owned();
    let (lat, failures) = legit_spread(n, spread, move |i| {
        let s = srv(&base, false);
        async move { legit_once(&s, &format!("legit-{i}")).await }
    })
    .await;
    json!({
        "legit_sent": n,
        "legit_answered": lat.len(),
        "legit_failures": failures,
        "legit_latency": summary(lat, 0),
    })
}

/// Merges the fields of `more` into `v`.
fn merged(mut v: Value, more: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (v.as_object_mut(), more) {
        a.extend(b);
    }
    v
}

async fn slow_bodies(o: SlowBodyOpts) -> Result<Value, String> {
    let base = loopback(&o.target)?;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("addr");
    let rss_before = rss_kib(o.pid);
    let head_of = |i: usize| {
        let mut head = if o.login {
            // A sign-in as a script forges it: its own Origin, any CSRF cookie.
            format!(
                "POST /login HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
                 Cookie: ek_login={}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
                 Content-Length: {}\r\n\r\n",
                "c".repeat(43),
                o.declared
            )
        } else {
            let auth = attacker_name(o.token.as_deref(), o.tokens, i)
                .map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n\
                 {auth}Content-Length: {}\r\n\r\n",
                o.declared
            )
        }
        .into_bytes();
        head.resize(head.len() + o.burst.min(o.declared), b' ');
        Arc::new(head)
    };
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let mut slots = Vec::new();
    for i in 0..o.conns {
        slots.push(tokio::spawn(slow_body(
            addr,
            head_of(i),
            o.reconnect_after,
            stop.clone(),
            seen.clone(),
        )));
        if i % 200 == 199 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Until every slot sent its first head (at most 30 s), then 2 s more.
    let ramp = Instant::now();
    while ramp.elapsed() < Duration::from_secs(30)
        && (seen.heads_sent.load(Ordering::Relaxed) as usize) < o.conns
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ramp_s = ramp.elapsed().as_secs_f64();
    let sampler = Sampler::start(&base, o.pid);
    let legit = legit_tools_lists(&base, o.legit, o.spread).await;
    let rss_end = rss_kib(o.pid);
    let (rss, open) = sampler.stop().await;
    stop.store(true, Ordering::Relaxed);
    for s in slots {
        s.abort();
        let _ = s.await;
    }
    let answers = seen.answers.lock().map(|a| a.clone()).unwrap_or_default();
    let attacker = if o.login {
        json!("none (sign-in forms)")
    } else {
        match (&o.token, o.tokens) {
            (Some(t), _) => json!(t),
            (None, Some(k)) => json!(format!("{k} made-up names")),
            (None, None) => Value::Null,
        }
    };
    Ok(merged(
        json!({
            "attack_connections": o.conns,
            "declared_body_bytes": o.declared,
            "burst_body_bytes": o.burst,
            "attacker_token": attacker,
            "ramp_s": ramp_s,
            "attacker_connects": seen.connects.load(Ordering::Relaxed),
            "attacker_outcomes": answers,
            "server_open_connections": {"min": open.iter().min(), "max": open.iter().max()},
            "rss_kib": {"before": rss_before, "peak": rss.iter().max(), "end": rss_end},
        }),
        legit,
    ))
}

/// One 2025-11-25 stream slot: `tools/call deploy` on session `sid` of
/// `user` over raw HTTP, held until the server ends it, then again 10 ms
/// later, until `stop`; what each stream ended with is counted.
async fn stream_slot(
    addr: std::net::SocketAddr,
    user: String,
    sid: String,
    id: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
) {
    let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"deploy","arguments":{"service":"web"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {user}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut c) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        seen.connects.fetch_add(1, Ordering::Relaxed);
        if c.write_all(request.as_bytes()).await.is_ok() {
            seen.heads_sent.fetch_add(1, Ordering::Relaxed);
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // The elicitation timeout is 30 s: held at most 40 s.
        let _ = tokio::time::timeout(Duration::from_secs(40), async {
            while let Ok(n) = c.read(&mut buf).await {
                if n == 0 || stop.load(Ordering::Relaxed) {
                    break;
                }
                if got.len() < 4096 {
                    got.extend_from_slice(&buf[..n]);
                }
            }
        })
        .await;
        let text = String::from_utf8_lossy(&got);
        let outcome = if text.contains("\"reason\":\"shed\"") {
            "shed with a JSON-RPC error".to_owned()
        } else if text.contains("elicitation/create") {
            "held, then ended".to_owned()
        } else {
            text.get(..12).unwrap_or("closed").trim().to_owned()
        };
        if let Ok(mut a) = seen.answers.lock() {
            *a.entry(outcome).or_default() += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn streams(o: StreamOpts) -> Result<Value, String> {
    let base = loopback(&o.target)?;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("addr");
    let rss_before = rss_kib(o.pid);
    let s = srv(&base, true);
    let names: Vec<String> = if o.tokens <= 1 {
        vec!["mallory".to_owned()]
    } else {
        (0..o.tokens).map(|i| format!("made-up-{i}")).collect()
    };
    let mut sessions = Vec::new();
    for n in &names {
        sessions.push(legacy_init(&s, n, caps_form()).await);
    }
    let (stop, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(Seen::default()));
    let slots: Vec<_> = (0..o.conns)
        .map(|i| {
            let k = i % names.len();
            tokio::spawn(stream_slot(
                addr,
                names[k].clone(),
                sessions[k].clone(),
                i,
                stop.clone(),
                seen.clone(),
            ))
        })
        .collect();
    let ramp = Instant::now();
    while ramp.elapsed() < Duration::from_secs(30)
        && (seen.heads_sent.load(Ordering::Relaxed) as usize) < o.conns
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sampler = Sampler::start(&base, o.pid);
    let legit = legit_tools_lists(&base, o.legit, o.spread).await;
    let rss_end = rss_kib(o.pid);
    let (rss, open) = sampler.stop().await;
    let conns = server_connections(&base).await;
    stop.store(true, Ordering::Relaxed);
    for s in slots {
        s.abort();
        let _ = s.await;
    }
    let answers = seen.answers.lock().map(|a| a.clone()).unwrap_or_default();
    Ok(merged(
        json!({
            "attack_streams": o.conns,
            "attacker_names": names.len(),
            "attacker_connects": seen.connects.load(Ordering::Relaxed),
            "attacker_outcomes": answers,
            "server_connections": conns,
            "server_open_connections": {"min": open.iter().min(), "max": open.iter().max()},
            "rss_kib": {"before": rss_before, "peak": rss.iter().max(), "end": rss_end},
        }),
        legit,
    ))
}

/// The server's `/stats` `connections` object.
async fn server_connections(base: &str) -> Value {
    let s = srv(base, false);
    let Ok(r) = s
        .http
        .get(format!("{base}/stats"))
        .bearer_auth("bench")
        .send()
        .await
    else {
        return Value::Null;
    };
    r.json::<Value>()
        .await
        .map(|v| v["connections"].clone())
        .unwrap_or(Value::Null)
}

async fn store(o: StoreOpts) -> Result<Value, String> {
    let base = loopback(&o.target)?;
    let rss_before = rss_kib(o.pid);
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::<
        String,
        u64,
    >::new()));
    let workers: Vec<_> = (0..o.concurrency)
        .map(|w| {
            let (base, stop, outcomes) = (base.clone(), stop.clone(), outcomes.clone());
            let tokens = o.tokens;
            tokio::spawn(async move {
                let s = srv(&base, true);
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    let user = if tokens <= 1 {
                        "mallory".to_owned()
                    } else {
                        format!("made-up-{}", i % tokens)
                    };
                    i += o.concurrency;
                    let args = json!({"name": "connect_billing", "arguments": {}});
                    let r = try_modern(&s, &user, 1, "tools/call", args, &caps_both()).await;
                    let kind = match r {
                        Ok(r) if r.result_type() == "input_required" => "flow started".to_owned(),
                        Ok(r) => format!("HTTP {}", r.status),
                        Err(_) => "no reply".to_owned(),
                    };
                    if let Ok(mut m) = outcomes.lock() {
                        *m.entry(kind).or_default() += 1;
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(o.fill).await;
    let sampler = Sampler::start(&base, o.pid);
    let b = base.clone();
    let (lat, failures) = legit_spread(o.legit, o.spread, move |i| {
        let s = srv(&b, false);
        async move {
            let t = Instant::now();
            let args = json!({"name": "connect_billing", "arguments": {}});
            match try_modern(
                &s,
                &format!("legit-{i}"),
                1,
                "tools/call",
                args,
                &caps_both(),
            )
            .await
            {
                Ok(r) if r.result_type() == "input_required" => Ok(t.elapsed()),
                Ok(r) => Err(format!("HTTP {}", r.status)),
                Err(_) => Err("no reply".to_owned()),
            }
        }
    })
    .await;
    let rss_end = rss_kib(o.pid);
    let (rss, _) = sampler.stop().await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.await;
    }
    let monitor = srv(&base, false);
    let store = monitor
        .http
        .get(format!("{base}/stats"))
        .bearer_auth("bench")
        .send()
        .await
        .ok();
    let store = match store {
        Some(r) => r
            .json::<Value>()
            .await
            .map(|v| v["store"].clone())
            .unwrap_or(Value::Null),
        None => Value::Null,
    };
    let outcomes = outcomes.lock().map(|m| m.clone()).unwrap_or_default();
    Ok(json!({
        "attacker_names": o.tokens.max(1),
        "attacker_concurrency": o.concurrency,
        "fill_s": o.fill.as_secs_f64(),
        "attacker_outcomes": outcomes,
        "legit_sent": o.legit,
        "legit_answered": lat.len(),
        "legit_failures": failures,
        "legit_latency": summary(lat, 0),
        "store": store,
        "rss_kib": {"before": rss_before, "peak": rss.iter().max(), "end": rss_end},
    }))
}

async fn evict(base: String, redis_url: &str, n: usize, junk_mb: usize) -> Result<Value, String> {
    if !redis_url.starts_with("redis://127.0.0.1:") {
        return Err(format!(
            "--redis {redis_url:?}: use redis://127.0.0.1:PORT/DB"
        ));
    }
    let s = srv(&base, true);
    let mut finals = Vec::new();
    for i in 0..n {
        let user = format!("user-{i}");
        let f = to_final(&s, &user, "deploy").await;
        if f.send(&s, &user, 1).await.result_type() == "complete" {
            finals.push((user, f));
        }
    }
    let client = redis::Client::open(redis_url).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_connection_with_timeout(Duration::from_secs(3))
        .map_err(|e| e.to_string())?;
    let junk = "j".repeat(1024);
    let mut fresh = 0;
    for i in 0..junk_mb * 1024 {
        // Writes past maxmemory fail under noeviction: stop there.
        let r: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("junk:{i}"))
            .arg(&junk)
            .query(&mut conn);
        if r.is_err() {
            break;
        }
        // The server keeps serving meanwhile: other users' completions keep
        // the store's epoch key in use, as on a live server (an idle one
        // would see the epoch evicted too, and refuse every retry).
        if i % 512 == 0 {
            let user = format!("other-{i}");
            let f = to_final(&s, &user, "deploy").await;
            fresh += u64::from(f.send(&s, &user, 1).await.result_type() == "complete");
        }
    }
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query(&mut conn)
        .map_err(|e| e.to_string())?;
    let evicted: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let before = effect_count(&s, "deployments").await;
    let mut outcomes = std::collections::BTreeMap::<String, u64>::new();
    for (user, f) in &finals {
        let r = f.send(&s, user, 2).await;
        let kind = if r.result_type() == "complete" {
            "completed again".to_owned()
        } else if !r.reason().is_empty() {
            r.reason().to_owned()
        } else {
            format!("HTTP {}", r.status)
        };
        *outcomes.entry(kind).or_default() += 1;
    }
    let after = effect_count(&s, "deployments").await;
    Ok(json!({
        "completed": finals.len(),
        "completed_meanwhile_by_others": fresh,
        "redis_evicted_keys": evicted,
        "retries": outcomes,
        "deployed_again": after - before,
    }))
}

/// Server CPU seconds of `pid` (user + system).
fn cpu_s(pid: u32) -> Option<f64> {
    elicitkit::load::exec::target::process_cpu_seconds(pid)
}

async fn costly(o: CostlyOpts) -> Result<Value, String> {
    let base = loopback(&o.target)?;
    let meta = meta(&json!({}));
    let keys: Vec<String> = (0..o.keys).map(|i| format!("\"k{i}\":0")).collect();
    let many = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{meta},"x":{{{}}}}}}}"#,
        keys.join(",")
    );
    let pad = many.len().saturating_sub(100);
    let plain = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{meta},"x":"{}"}}}}"#,
        "x".repeat(pad)
    );
    let s = srv(&base, true);
    let mut kinds = serde_json::Map::new();
    for (name, body) in [("plain", &plain), ("keys", &many)] {
        let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
        let before = cpu_s(o.pid);
        let t = Instant::now();
        for _ in 0..o.n {
            let r = s
                .http
                .post(&s.url)
                .bearer_auth("alice")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", "tools/list")
                .body(body.clone())
                .send()
                .await;
            let status = match r {
                Ok(r) => {
                    let st = r.status().as_u16();
                    let _ = r.bytes().await;
                    st
                }
                Err(_) => 0,
            };
            *statuses.entry(status).or_default() += 1;
        }
        let wall = t.elapsed();
        let cpu = match (before, cpu_s(o.pid)) {
            (Some(a), Some(b)) => Some(((b - a) * 1e6 / o.n as f64).round()),
            _ => None,
        };
        kinds.insert(
            name.to_owned(),
            json!({
                "body_bytes": body.len(),
                "bodies": o.n,
                "server_cpu_us_per_body": cpu,
                "wall_ms_per_body": (wall.as_secs_f64() * 1e3 / o.n as f64 * 100.0).round() / 100.0,
                "statuses": statuses,
            }),
        );
    }
    let ratio = match (
        kinds["keys"]["server_cpu_us_per_body"].as_f64(),
        kinds["plain"]["server_cpu_us_per_body"].as_f64(),
    ) {
        (Some(k), Some(p)) if p > 0.0 => json!((k / p * 100.0).round() / 100.0),
        _ => Value::Null,
    };
    Ok(json!({"keys": o.keys, "bodies": kinds, "cpu_keys_over_plain": ratio}))
}

async fn retries(base: String, n: usize) -> Value {
    let s = srv(&base, true);
    let mut tools = Vec::new();
    for (tool, effect) in SIDE_EFFECTS {
        let f = to_final(&s, "alice", tool).await;
        let before = effect_count(&s, effect).await;
        // Open all n connections first, then fire.
        let fire = Arc::new(tokio::sync::Barrier::new(n));
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let (s2, f2, fire) = (srv(&base, true), f.clone(), fire.clone());
                tokio::spawn(async move {
                    fire.wait().await;
                    f2.send(&s2, "alice", 1000 + i as i64).await
                })
            })
            .collect();
        let t = Instant::now();
        let mut replies = Vec::new();
        for task in tasks {
            if let Ok(r) = task.await {
                replies.push(r);
            }
        }
        let took = t.elapsed();
        let after = effect_count(&s, effect).await;
        let completed: Vec<&Reply> = replies
            .iter()
            .filter(|r| r.result_type() == "complete")
            .collect();
        let winner = completed
            .first()
            .map(|r| r.result().clone())
            .unwrap_or(Value::Null);
        let repeats: Vec<&Reply> = replies
            .iter()
            .filter(|r| r.reason() == "replayed" && r.body["error"]["data"]["outcome"].is_object())
            .collect();
        let identical = replies.len() == n
            && completed.len() == 1
            && repeats.len() == n - 1
            && repeats
                .iter()
                .all(|r| r.body["error"]["data"]["outcome"] == winner);
        tools.push(json!({
            "tool": tool,
            "retries": n,
            "replies": replies.len(),
            "completed": completed.len(),
            "repeats_with_outcome": repeats.len(),
            "other": replies.len() - completed.len() - repeats.len(),
            "side_effects": after - before,
            "identical_outcomes": if identical { n } else { 0 },
            "wall_s": took.as_secs_f64(),
        }));
    }
    json!({ "tools": tools })
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn db_bytes(db: &Option<std::path::PathBuf>) -> Option<u64> {
    db.as_ref().map(elicitkit::store::SqliteStore::file_bytes)
}

/// One URL flow: first call, page, submit, final retry.
async fn url_flow(s: &Srv, user: &str) -> bool {
    let f = to_final(s, user, "connect_billing").await;
    f.send(s, user, 2).await.result_type() == "complete"
}

/// One legacy call: initialize, deploy with its elicitation answered, DELETE.
async fn legacy_call_once(s: &Srv, user: &str) -> bool {
    let sid = legacy_init(s, user, caps_form()).await;
    let mut call = legacy_call(s, user, &sid, 1, "deploy", json!({"service":"web"})).await;
    let Some(req) = call.next().await else {
        return false;
    };
    let yes = json!({"action":"accept","content":{"environment":"staging","confirm":true}});
    if legacy_answer(s, user, &sid, &req["id"], yes).await != 202 {
        return false;
    }
    let done = call
        .next()
        .await
        .is_some_and(|m| m["result"]["isError"] == false);
    let del = s
        .http
        .delete(&s.url)
        .bearer_auth(user)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .is_ok_and(|r| r.status().as_u16() == 204);
    done && del
}

#[allow(clippy::too_many_arguments)]
/// What the server holds, from its `/stats`: records and claims not yet
/// purged, and open legacy sessions (each `None` when unreadable). RSS that
/// grows while these stay level is the allocator, not the store.
async fn live_set(s: &Srv) -> (Option<u64>, Option<u64>, Option<u64>) {
    let Ok(r) = s
        .http
        .get(format!("{}/stats", s.server.base_url()))
        .bearer_auth("monitor")
        .send()
        .await
    else {
        return (None, None, None);
    };
    let Ok(v) = r.json::<Value>().await else {
        return (None, None, None);
    };
    let st = &v["store"];
    let sub = |a: &str, b: &str| Some(st[a].as_u64()?.saturating_sub(st[b].as_u64()?));
    (
        sub("created", "purged_records"),
        sub("claims_won", "purged_claims"),
        v["active_sessions"].as_u64(),
    )
}

/// How far a paced run may fall behind its schedule before the schedule
/// moves (see [`forget`]).
const MAX_BACKLOG: Duration = Duration::from_millis(250);

async fn forget(o: ForgetOpts) -> Result<Value, String> {
    let base = loopback(&o.target)?;
    let ForgetOpts {
        pid,
        db,
        flows,
        legacy,
        concurrency,
        rate,
        window,
        max_time,
        ..
    } = o;
    let done_flows = Arc::new(AtomicU64::new(0));
    let done_legacy = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let slip = Arc::new(AtomicU64::new(0));
    let total = flows + legacy;
    let t0 = Instant::now();
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let (base, next, stop, slip) = (base.clone(), next.clone(), stop.clone(), slip.clone());
        let (df, dl, failed) = (done_flows.clone(), done_legacy.clone(), failed.clone());
        workers.push(tokio::spawn(async move {
            let s = srv(&base, true);
            let user = format!("user{w}");
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total || stop.load(Ordering::Relaxed) {
                    return;
                }
                // Paced: operation i starts i / rate seconds in, plus the
                // schedule's slip. Behind by more than MAX_BACKLOG (a starved
                // machine), the schedule moves instead of the workers
                // bursting to catch up: a burst swells the live set, and the
                // memory then measured is the driver's doing.
                if rate > 0 {
                    let at = t0 + Duration::from_secs_f64(i as f64 / rate as f64);
                    let now = Instant::now();
                    let mut due = at + Duration::from_nanos(slip.load(Ordering::Relaxed));
                    if now > due + MAX_BACKLOG {
                        let need = (now - MAX_BACKLOG).duration_since(at).as_nanos();
                        slip.fetch_max(u64::try_from(need).unwrap_or(u64::MAX), Ordering::Relaxed);
                        due = at + Duration::from_nanos(slip.load(Ordering::Relaxed));
                    }
                    tokio::time::sleep_until(due.into()).await;
                }
                // Interleave the two kinds while both have work left.
                let flow = (i % 2 == 0 && i / 2 < flows) || i / 2 >= legacy;
                let op = {
                    let s = &s;
                    let user = user.clone();
                    async move {
                        if flow {
                            url_flow(s, &user).await
                        } else {
                            legacy_call_once(s, &user).await
                        }
                    }
                };
                let ok = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(op))
                    .await
                    .unwrap_or(false);
                match (ok, flow) {
                    (false, _) => failed.fetch_add(1, Ordering::Relaxed),
                    (true, true) => df.fetch_add(1, Ordering::Relaxed),
                    (true, false) => dl.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
    let mut samples = Vec::new();
    let monitor = srv(&base, true);
    loop {
        let live = live_set(&monitor).await;
        let (f, l) = (
            done_flows.load(Ordering::Relaxed),
            done_legacy.load(Ordering::Relaxed),
        );
        let rss = rss_kib(pid);
        // RSS over what the store holds: flat even when the live set is not
        // (a leak grows it; a starved driver only moves the live set).
        let per_live = match (rss, live.0, live.1) {
            (Some(r), Some(a), Some(b)) if a + b > 0 => Some(r * 1024 / (a + b)),
            _ => None,
        };
        samples.push(json!({
            "t_s": t0.elapsed().as_secs(),
            "url_flows": f,
            "legacy_calls": l,
            "failed": failed.load(Ordering::Relaxed),
            "rss_kib": rss,
            "rss_bytes_per_live_item": per_live,
            "db_bytes": db_bytes(&db),
            "live_records": live.0,
            "live_claims": live.1,
            "active_sessions": live.2,
        }));
        let finished = workers.iter().all(|w| w.is_finished());
        if finished || t0.elapsed() >= max_time {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.await;
    }
    let elapsed = t0.elapsed();
    let after: Vec<&Value> = samples
        .iter()
        .filter(|s| s["t_s"].as_u64().unwrap_or(0) >= window.as_secs())
        .collect();
    let flat = |key: &str| {
        let v: Vec<u64> = after.iter().filter_map(|s| s[key].as_u64()).collect();
        let (Some(min), Some(max)) = (v.iter().min(), v.iter().max()) else {
            return Value::Null;
        };
        // Growth: the mean of the last minute against the mean of the
        // first minute after the window (a leak grows; a falling RSS is the
        // allocator handing pages back, reported by the band, not growth).
        let minute = v.len().min(60);
        let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
        let (first, last) = (mean(&v[..minute]), mean(&v[v.len() - minute..]));
        let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({
            "at_window_end": v.first(), "min": min, "max": max, "last": v.last(),
            "max_over_min": round3(*max as f64 / (*min).max(1) as f64),
            "within_10_percent": *max as f64 <= *min as f64 * 1.10,
            "first_minute_mean": first.round(), "last_minute_mean": last.round(),
            "growth": round3(last / first.max(1.0)),
            "grew_over_10_percent": last > first * 1.10,
        })
    };
    Ok(json!({
        "url_flows": done_flows.load(Ordering::Relaxed),
        "rate_asked": rate,
        "schedule_slip_s": slip.load(Ordering::Relaxed) as f64 / 1e9,
        "legacy_calls": done_legacy.load(Ordering::Relaxed),
        "failed": failed.load(Ordering::Relaxed),
        "elapsed_s": elapsed.as_secs_f64(),
        "ops_per_s": (done_flows.load(Ordering::Relaxed) + done_legacy.load(Ordering::Relaxed)) as f64 / elapsed.as_secs_f64(),
        "window_s": window.as_secs(),
        "stopped_by_max_time": elapsed >= max_time,
        "rss_after_window": flat("rss_kib"),
        "db_after_window": flat("db_bytes"),
        "live_records_after_window": flat("live_records"),
        "live_claims_after_window": flat("live_claims"),
        "rss_bytes_per_live_item_after_window": flat("rss_bytes_per_live_item"),
        "samples": samples,
    }))
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = rt.block_on(async {
        Ok::<Value, String>(match cli.mode {
            Mode::Slowloris {
                target,
                conns,
                baseline,
                attack,
                reconnect_rate,
            } => slowloris(loopback(&target)?, conns, baseline, attack, reconnect_rate).await,
            Mode::SlowBodies(o) => slow_bodies(o).await?,
            Mode::Streams(o) => streams(o).await?,
            Mode::Store(o) => store(o).await?,
            Mode::Costly(o) => costly(o).await?,
            Mode::Evict {
                target,
                redis,
                n,
                junk_mb,
            } => evict(loopback(&target)?, &redis, n, junk_mb).await?,
            Mode::Retries { target, n } => retries(loopback(&target)?, n).await,
            Mode::Forget(o) => forget(o).await?,
        })
    });
    rt.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(v) => {
            let text = serde_json::to_string_pretty(&v).unwrap_or_default();
            if let Some(p) = &cli.out
                && let Err(e) = std::fs::write(p, &text)
            {
                eprintln!("abuse: cannot write {}: {e}", p.display());
                return std::process::ExitCode::from(2);
            }
            println!("{text}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("abuse: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
