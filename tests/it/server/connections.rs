//! Connection hygiene: header-read, body-read and keep-alive timeouts and
//! the connection cap, over raw TCP on 127.0.0.1. Idle and slowloris
//! connections cost their timeouts, never a legitimate request its answer.
//! (How fast that answer is under 4,000 of them is measured by
//! `loadtests/abuse.sh`, not here.)
#![cfg(feature = "net")]

use std::time::{Duration, Instant};

use crate::support::raw::*;
use crate::support::server::*;
use elicitkit::server::ServerConfig;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

fn cfg() -> ServerConfig {
    ServerConfig {
        header_read_timeout: Duration::from_millis(400),
        keep_alive_timeout: Duration::from_millis(400),
        body_read_timeout: Duration::from_millis(400),
        ..ServerConfig::default()
    }
}

async fn tools_list(s: &Srv, user: &str) -> Reply {
    modern(s, user, 1, "tools/list", json!({}), &json!({})).await
}

async fn tools_list_ok(s: &Srv) -> bool {
    tools_list(s, "alice").await.result_type() == "complete"
}

#[tokio::test]
async fn silent_and_slowloris_connections_close_at_the_header_read_timeout() {
    let s = start(cfg()).await;
    let t0 = Instant::now();
    let mut silent = TcpStream::connect(s.server.addr()).await.unwrap();
    let mut slow = TcpStream::connect(s.server.addr()).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    // Dribble one header byte every 50 ms: never a complete head.
    let dribble = tokio::spawn(async move {
        for _ in 0..100 {
            if slow.write_all(b"X").await.is_err() {
                return (slow, true);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (slow, false)
    });
    // Meanwhile the server answers others.
    assert!(tools_list_ok(&s).await);
    let (_, closed) = read_to_close(&mut silent, Duration::from_secs(5))
        .await
        .expect("the silent connection is closed");
    let waited = closed - t0;
    assert!(
        waited >= Duration::from_millis(350) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    let (mut slow, write_failed) = dribble.await.unwrap();
    let ended = write_failed
        || read_to_close(&mut slow, Duration::from_secs(3))
            .await
            .is_some();
    assert!(ended, "the slowloris connection is closed");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(
        stats(&s).await["connections"]["timed_out"]
            .as_u64()
            .unwrap()
            >= 2
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn a_kept_alive_connection_serves_requests_then_closes_when_idle() {
    let s = start(ServerConfig {
        header_read_timeout: Duration::from_secs(10),
        ..cfg()
    })
    .await;
    let mut c = TcpStream::connect(s.server.addr()).await.unwrap();
    let req = format!("GET /nope HTTP/1.1\r\nHost: {}\r\n\r\n", s.server.addr());
    for i in 0..3 {
        if i > 0 {
            // Idle well within the 400 ms keep-alive timeout between
            // requests: the next request is still served.
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        c.write_all(req.as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = c.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 404"));
    }
    // Timed from the last reply, not after one more sleep: a sleep that
    // overran on a busy machine ate into the idle time measured (149.7 ms
    // against a 200 ms bound). The timer started when the server wrote the
    // reply, before it was read here, so the idle seen is at most 400 ms;
    // at least 100 ms says it was not closed at once.
    let idle_from = Instant::now();
    let (_, closed) = read_to_close(&mut c, Duration::from_secs(5))
        .await
        .expect("closed once idle");
    let idle = closed - idle_from;
    assert!(
        idle >= Duration::from_millis(100) && idle < Duration::from_secs(3),
        "{idle:?}"
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_gets_408() {
    let s = start(cfg()).await;
    let head = post_head(&s, 100, Some("alice"));
    let mut c = open_bodies(&s, 1, &head, b"{\"jsonrpc\"").await.remove(0);
    let (reply, _) = read_to_close(&mut c, Duration::from_secs(5))
        .await
        .expect("answered and closed");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    // Flow pages read their forms under the same limit (a sign-in with its
    // Origin and CSRF cookie: without them it is refused from its head).
    let mut c = TcpStream::connect(s.server.addr()).await.unwrap();
    let head = format!(
        "POST /login HTTP/1.1\r\nHost: {0}\r\nOrigin: http://{0}\r\nCookie: ek_login={1}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken=",
        s.server.addr(),
        "c".repeat(43)
    );
    c.write_all(head.as_bytes()).await.unwrap();
    let (reply, _) = read_to_close(&mut c, Duration::from_secs(5)).await.unwrap();
    assert!(String::from_utf8_lossy(&reply).starts_with("HTTP/1.1 408"));
    s.server.shutdown().await;
}

#[tokio::test]
async fn at_the_cap_idle_connections_are_shed_for_new_requests() {
    let s = start(ServerConfig {
        max_connections: 20,
        header_read_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    })
    .await;
    let mut idle = Vec::new();
    for i in 0..60 {
        idle.push(TcpStream::connect(s.server.addr()).await.unwrap());
        if i == 19 {
            // A connection gets a moment (100 ms) to send its head before
            // it counts as idle; the next 40 shed these 20.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    for _ in 0..5 {
        let answered = tokio::time::timeout(Duration::from_secs(5), tools_list_ok(&s)).await;
        assert_eq!(
            answered.ok(),
            Some(true),
            "a request gets through at the cap"
        );
    }
    let conns = stats(&s).await["connections"].clone();
    assert!(conns["shed"].as_u64().unwrap() >= 40, "{conns}");
    assert!(conns["open"].as_u64().unwrap() <= 22, "{conns}");
    // Shutdown does not wait for idle connections.
    let t = Instant::now();
    s.server.shutdown().await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[tokio::test]
async fn hundreds_of_slowloris_connections_do_not_block_requests() {
    let s = start(ServerConfig {
        header_read_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..500 {
        let mut c = TcpStream::connect(s.server.addr()).await.unwrap();
        c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ")
            .await
            .unwrap();
        slow.push(c);
    }
    for i in 0..20 {
        let answered = tokio::time::timeout(Duration::from_secs(5), tools_list_ok(&s)).await;
        assert_eq!(answered.ok(), Some(true), "request {i}");
    }
    assert!(stats(&s).await["connections"]["open"].as_u64().unwrap() >= 500);
    s.server.shutdown().await;
}

/// Issue 28 item 5: when every connection at the cap is busy with a
/// request, a new one gets `503` with `Retry-After`, not a bare close.
/// (Busy: handling a request. A body still arriving or a stream waiting on
/// its client is shed under pressure instead, issue 51; here two
/// `connect_billing` calls wait on a SQLite store another process holds
/// locked.)
#[tokio::test]
async fn at_the_cap_with_every_connection_busy_a_new_one_gets_503() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let s = start(ServerConfig {
        max_connections: 2,
        store: format!("sqlite:{}", db.display()),
        ..ServerConfig::default()
    })
    .await;
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let calls: Vec<_> = (0..2)
        .map(|i| {
            let s = remote(&s.server.base_url());
            tokio::spawn(async move {
                call(
                    &s,
                    &format!("u{i}"),
                    1,
                    "connect_billing",
                    json!({}),
                    &caps_both(),
                )
                .await
            })
        })
        .collect();
    // Both requests are in the handler, waiting on the store.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut c = TcpStream::connect(s.server.addr()).await.unwrap();
    let _ = c
        .write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await;
    let got = read_to_close(&mut c, Duration::from_secs(3)).await;
    let last = String::from_utf8_lossy(&got.expect("closed").0).into_owned();
    assert!(last.starts_with("HTTP/1.1 503 "), "{last:?}");
    assert!(last.contains("\r\nRetry-After: 1\r\n"), "{last:?}");
    assert!(last.ends_with("try again shortly\n"), "{last:?}");
    lock.execute_batch("ROLLBACK").unwrap();
    for c in calls {
        assert_eq!(c.await.unwrap().result_type(), "input_required");
    }
    s.server.shutdown().await;
}

/// Issue 28 item 1: slow bodies without credentials filling the cap do not
/// shut out a legitimate request: they are refused from their heads.
#[tokio::test]
async fn at_the_cap_slow_bodies_without_credentials_do_not_shut_out_requests() {
    let s = start(ServerConfig {
        max_connections: 30,
        header_read_timeout: Duration::from_secs(30),
        body_read_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    })
    .await;
    let head = post_head(&s, 1_048_575, None);
    let mut slow = open_bodies(&s, 60, &head, b"").await;
    // Let the server read their heads.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..5 {
        assert_eq!(gets_in(&s).await, Ok(()), "request {i} at the cap");
    }
    let (first, _) = read_to_close(&mut slow[0], Duration::from_secs(2))
        .await
        .expect("refused and closed");
    assert!(String::from_utf8_lossy(&first).starts_with("HTTP/1.1 401"));
    s.server.shutdown().await;
}

/// Issue 28 item 1: a POST without valid credentials gets 401 from its
/// head, not 408 once its body failed to arrive.
#[tokio::test]
async fn a_post_without_credentials_gets_401_before_its_body() {
    let s = start(ServerConfig {
        body_read_timeout: Duration::from_secs(20),
        ..ServerConfig::default()
    })
    .await;
    for token in [None, Some("two words")] {
        let t = Instant::now();
        let mut c = open_bodies(&s, 1, &post_head(&s, 100, token), b"")
            .await
            .remove(0);
        let (reply, _) = read_to_close(&mut c, Duration::from_secs(3))
            .await
            .expect("answered and closed without the body");
        let text = String::from_utf8_lossy(&reply);
        assert!(text.starts_with("HTTP/1.1 401"), "{token:?}: {text}");
        let lower = text.to_ascii_lowercase();
        assert!(lower.contains("www-authenticate: bearer"), "{text}");
        // The body was never read, so the connection closes, and says so.
        assert!(lower.contains("connection: close"), "{text}");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }
    s.server.shutdown().await;
}

/// A reply given before the request's body was read whole says
/// `Connection: close` before the server closes: a client that wrote the
/// whole body and read a complete 401 or 413 would otherwise send its
/// next request down the closing connection (seen as a "broken pipe" by
/// `fuzz`). A reply to a body read whole keeps the connection.
#[tokio::test]
async fn a_reply_that_leaves_the_body_unread_says_the_connection_closes() {
    let s = start(ServerConfig {
        max_body: 64 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let (big, too_big) = (vec![b' '; 48 * 1024], vec![b' '; 200 * 1024]);
    let small = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for (token, body, status, closes) in [
        (None, &big[..], "401", true),
        (Some("alice"), &too_big[..], "413", true),
        (None, &small[..], "401", true),
        // Read whole, refused after (a method of no session): kept.
        (Some("alice"), &small[..], "404", false),
    ] {
        let mut c = open_bodies(&s, 1, &post_head(&s, body.len(), token), b"")
            .await
            .remove(0);
        // Written in the background: the server may stop reading it.
        let (mut rd, mut wr) = c.split();
        let write = async {
            let _ = wr.write_all(body).await;
        };
        let mut reply = Vec::new();
        let read = async {
            let mut buf = [0u8; 4096];
            while let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(500), rd.read(&mut buf)).await
            {
                if n == 0 {
                    break;
                }
                reply.extend_from_slice(&buf[..n]);
            }
        };
        tokio::join!(write, read);
        let text = String::from_utf8_lossy(&reply).to_ascii_lowercase();
        assert!(text.starts_with(&format!("http/1.1 {status}")), "{text}");
        assert_eq!(text.contains("connection: close"), closes, "{text}");
    }
    s.server.shutdown().await;
}

/// At a cap of 20, 20 connections hold bodies of `length` bytes of which
/// each sent `sent`, as mallory; `wait` later, 5 legitimate requests must
/// get in by shedding them (a grace of 200 ms, a floor of 1 KiB/s), none
/// refused. (No `/stats` poll before: at the cap it would need a
/// connection, which only shedding gives.)
async fn slow_bodies_are_shed_at_the_cap(length: usize, sent: &[u8], wait: Duration) {
    let s = start(ServerConfig {
        max_connections: 20,
        body_read_timeout: Duration::from_secs(30),
        body_rate_grace: Duration::from_millis(200),
        min_body_rate: 1024,
        ..ServerConfig::default()
    })
    .await;
    let head = post_head(&s, length, Some("mallory"));
    let _slow = open_bodies(&s, 20, &head, sent).await;
    tokio::time::sleep(wait).await;
    for i in 0..5 {
        assert_eq!(gets_in(&s).await, Ok(()), "request {i} at the cap");
    }
    // Each answered request closes its connection, so later ones may find
    // room without shedding again.
    let conns = stats(&s).await["connections"].clone();
    assert!(conns["shed"].as_u64().unwrap() >= 1, "{conns}");
    assert_eq!(conns["refused"].as_u64(), Some(0), "{conns}");
    s.server.shutdown().await;
}

/// Issue 28 item 3: at the cap, bodies trickled in with credentials are
/// shed once below the rate floor, so a legitimate request gets in.
#[tokio::test]
async fn at_the_cap_slow_bodies_with_credentials_are_shed_for_requests() {
    // Past the grace: one byte in 400 ms is far below 1 KiB/s.
    slow_bodies_are_shed_at_the_cap(1000, b"{", Duration::from_millis(400)).await;
}

/// Issue 28 item 1: a body that bursts, then stalls, is slow too. 60 kB at
/// once average far above 1 KiB/s for a minute, longer than the body-read
/// timeout; a stall as long as the grace makes them sheddable anyway.
#[tokio::test]
async fn at_the_cap_bodies_that_burst_then_stall_are_shed_for_requests() {
    // Past the grace by 400 ms.
    slow_bodies_are_shed_at_the_cap(100_000, &[b' '; 60_000], Duration::from_millis(600)).await;
}

/// Issue 28 item 2, issue 51 item 1: bodies beyond a principal's share of
/// the bytes-in-flight budget get 503 with a `Retry-After` that says when
/// its bytes free up (the body-read timeout of its oldest body, not 1 s);
/// a principal within its share whom others' bodies keep out gets in by
/// cutting off the largest holder's body (which gets the 503 instead).
#[tokio::test]
async fn bodies_beyond_the_in_flight_budget_get_503() {
    let s = start(ServerConfig {
        max_body_in_flight: 1500,
        max_body_in_flight_per_principal: 1000,
        ..ServerConfig::default()
    })
    .await;
    let retry_after = |r: &Reply| {
        r.headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
    };
    // alice holds 800 bytes of a 900-byte body.
    let mut alice = open_bodies(&s, 1, &post_head(&s, 900, Some("alice")), &[b' '; 800]).await;
    stats_until(&s, |v| v["request_bodies"]["bytes_in_flight"] == 800).await;
    let r = tools_list(&s, "alice").await;
    assert_eq!(r.status, 503, "alice's share: {}", r.text);
    // Her own body holds her share until its 30 s body-read timeout.
    let wait = retry_after(&r).unwrap();
    assert!((25..=30).contains(&wait), "Retry-After {wait}");
    assert_eq!(tools_list(&s, "bob").await.result_type(), "complete");
    // bob holds 600 more (of 650 declared, which fit): 1,400 of the 1,500.
    let bob = open_bodies(&s, 1, &post_head(&s, 650, Some("bob")), &[b' '; 600]).await;
    stats_until(&s, |v| v["request_bodies"]["bytes_in_flight"] == 1400).await;
    // carol holds nothing: the largest holder's body (alice's) is cut off.
    assert_eq!(tools_list(&s, "carol").await.result_type(), "complete");
    let (reply, _) = read_to_close(&mut alice[0], Duration::from_secs(3))
        .await
        .expect("alice's body answered and closed");
    let text = String::from_utf8_lossy(&reply).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 503"), "{text}");
    assert!(text.contains("\r\nretry-after: 30\r\n"), "{text}");
    // bob's second body, beyond his share, is refused from its head.
    let mut more = open_bodies(&s, 1, &post_head(&s, 950, Some("bob")), b"").await;
    let (reply, _) = read_to_close(&mut more[0], Duration::from_secs(3))
        .await
        .expect("refused without its body");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    let v = stats(&s).await;
    assert_eq!(v["request_bodies"]["cut_for_others"], 1, "{v}");
    assert_eq!(v["request_bodies"]["refused_over_budget"], 2, "{v}");
    drop(bob);
    s.server.shutdown().await;
}
