//! `check` is bounded: a target that accepts connections and never answers
//! ends the run (unreachable, exit 2) within the timeouts instead of hanging.

use elicitkit::check::{self, CheckError, Settings};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_ends_the_run_within_the_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Accept and hold every connection, never writing a byte.
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let mut s = Settings::new(format!("http://{addr}/mcp"));
    s.target.timeout = Duration::from_millis(500);
    s.deadline = Duration::from_secs(5);
    let started = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(20), check::run(s, None, &[]))
        .await
        .expect("the run never hangs");
    assert!(matches!(out, Err(CheckError::Unreachable(..))), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    holder.abort();
}
