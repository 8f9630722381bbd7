//! `https` targets as an operator meets them: `serve` behind nginx
//! terminating TLS on 127.0.0.1, with a leaf signed by a private CA made in
//! the test, and ports whose certificates fail each way a deployment's do
//! (a CA served as the leaf, a name mismatch, an expired leaf, plain http
//! on the port). `check`, `load` and `fuzz` run through it with
//! `--cacert`, `--insecure` and `SSL_CERT_FILE`; each failure says what
//! failed and which flag fixes it, and is not called unreachable.

use crate::support::cluster::free_port;
use crate::support::serve::{self, BIN};
use crate::support::tls::{Pki, TlsFront};
use std::process::{Command, Output};

/// The CA, nginx in front, and `serve` behind it.
struct Deployment {
    pki: Pki,
    front: TlsFront,
    _serve: serve::Serve,
}

/// Certificates by port: 0 good (IP:127.0.0.1), 1 the CA as its own leaf,
/// 2 valid for another name, 3 expired.
fn deployment() -> Deployment {
    let pki = Pki::new();
    let certs = [
        pki.leaf("good", "IP:127.0.0.1,DNS:localhost", false),
        pki.ca_as_leaf(),
        pki.leaf("elsewhere", "DNS:elsewhere.test", false),
        pki.leaf("expired", "IP:127.0.0.1", true),
    ];
    let upstream = free_port();
    let front = TlsFront::start(&format!("127.0.0.1:{upstream}"), &certs);
    let mut cmd = serve::cmd_on(&format!("127.0.0.1:{upstream}"));
    cmd.args(["--workers", "1", "--public-url"])
        .arg(format!("https://127.0.0.1:{}", front.tls_ports[0]));
    for h in front.hosts() {
        cmd.args(["--allowed-host", &h]);
    }
    Deployment {
        _serve: serve::start(cmd),
        pki,
        front,
    }
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env_remove("RUST_LOG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run elicitkit")
}

/// The JSON document at `path`.
fn json_at(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("valid JSON")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn certificate_failures_say_what_failed_and_which_flag_fixes_it() {
    let d = deployment();
    let ca = d.pki.ca.display().to_string();
    let plain_as_https = format!("https://127.0.0.1:{}/mcp", d.front.plain_port);
    let cases: [(String, &[&str], &str); 5] = [
        (
            d.front.https(0),
            &[],
            "signed by an issuer this machine does not trust: give the CA that signed it with --cacert",
        ),
        (
            d.front.https(1),
            &["--cacert", &ca],
            "presents a CA certificate as its own",
        ),
        (
            d.front.https(2),
            &["--cacert", &ca],
            "not valid for the host name in the URL",
        ),
        (d.front.https(3), &["--cacert", &ca], "has expired"),
        (
            plain_as_https,
            &[],
            "answered in plain HTTP, not TLS: use http://",
        ),
    ];
    for (url, flags, says) in &cases {
        for cmd in ["check", "load"] {
            let mut args = vec![cmd, "--target", url.as_str()];
            if cmd == "load" {
                args.extend(["--duration", "1s", "--users", "1", "--quiet"]);
            }
            args.extend(flags.iter().copied());
            let o = run(&args, &[]);
            let all = text(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd} {url}: {all}");
            assert!(all.contains(says), "{cmd} {url} should say {says:?}: {all}");
            assert!(!all.contains("unreachable"), "{cmd} {url}: {all}");
            // No dependency's log line (rustls, hyper) and no colour codes.
            assert!(!all.contains('\x1b') && !all.contains(" WARN "), "{all}");
        }
    }
}

#[test]
fn check_load_and_fuzz_run_through_tls_with_a_private_ca() {
    let d = deployment();
    let url = d.front.https(0);
    let ca = d.pki.ca.display().to_string();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().display().to_string();

    // The private CA three ways: --cacert, SSL_CERT_FILE, --insecure.
    for (flags, env) in [
        (vec!["--cacert", ca.as_str()], vec![]),
        (vec![], vec![("SSL_CERT_FILE", ca.as_str())]),
        (vec!["--insecure"], vec![]),
    ] {
        let mut args = vec!["check", "--target", url.as_str(), "--only", "mrtr-"];
        args.extend(flags.iter().copied());
        let o = run(&args, &env);
        assert_eq!(
            o.status.code(),
            Some(0),
            "check {flags:?} {env:?}: {}",
            text(&o)
        );
    }

    // A discovered load over the lean lane, every round trip answered.
    let load = |id: &str, secs: &str, users: &str, extra: &[&str]| {
        let mut args = vec![
            "load",
            "--target",
            &url,
            "--cacert",
            &ca,
            "--duration",
            secs,
            "--users",
            users,
            "--quiet",
            "--out",
            &dir,
            "--run-id",
            id,
            // One tool's scenarios (both generations): each gets its share
            // of a short window on a machine busy with other tests.
            "--tool",
            "deploy",
        ];
        args.extend_from_slice(extra);
        run(&args, &[])
    };
    let o = load(
        "tls",
        "3s",
        "4",
        &["--threshold", "p99(tools/call #1.tls) < 10s"],
    );
    assert_eq!(o.status.code(), Some(0), "load: {}", text(&o));
    let summary = json_at(&out.path().join("tls/summary.json"));
    let done = summary["round_trips"]["total"].as_u64().unwrap_or(0);
    assert!(done > 20, "round trips over TLS: {summary}");
    assert_eq!(summary["round_trips"]["unexpected"], 0, "{summary}");
    // Where the time went: the lane opened a few connections over TLS and
    // kept them; every leg has its time to headers and its body.
    let first = &summary["phases"]["tools/call #1"];
    let n = |p: &str| first[p]["count"].as_u64().unwrap_or(0);
    assert!(n("connect") >= 1 && n("tls") == n("connect"), "{first}");
    assert!(n("reused") > n("connect"), "kept alive: {first}");
    assert_eq!(n("headers"), n("connect") + n("reused"), "{first}");
    assert!(first["tls"]["p50_ms"].as_f64().unwrap() > 0.0, "{first}");
    let phase_threshold = summary["thresholds"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["expr"] == "p99(tools/call #1.tls) < 10s")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(phase_threshold["passed"], true, "{phase_threshold}");
    let md = std::fs::read_to_string(out.path().join("tls/summary.md")).unwrap();
    assert!(md.contains("## Where the time goes"), "{md}");
    // The port's listener is nginx: said, and its figures not shown as
    // the target's; --target-pid names the server.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is nginx (PID") && err.contains("a proxy in front of the server"),
        "{err}"
    );
    assert!(summary["health"].is_null(), "{}", summary["health"]);
    let pid = d._serve.pid().to_string();
    let o = load("tls-pid", "1s", "1", &["--target-pid", &pid]);
    assert_eq!(o.status.code(), Some(0), "load --target-pid: {}", text(&o));
    let summary = json_at(&out.path().join("tls-pid/summary.json"));
    assert_eq!(summary["health"]["source"], "--target-pid", "{summary}");

    // fuzz: a short run on a correct server finds nothing.
    let o = run(
        &[
            "fuzz",
            "--target",
            &url,
            "--insecure",
            "--duration",
            "4s",
            "--out",
            &dir,
            "--run-id",
            "fz",
            "--quiet",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "fuzz: {}", text(&o));
    let summary = json_at(&out.path().join("fz/fuzz/summary.json"));
    assert!(summary["execs"].as_u64().unwrap_or(0) > 10, "{summary}");
}
