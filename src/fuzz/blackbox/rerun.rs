//! Re-running a finding's `repro.sh` before it is reported: bash runs it
//! against the same target with `OUT` set (a stdio target: the run's own
//! bridge, but for an exit, where the script starts the server itself and
//! reads the exit from its bridge's report), bounded in time (past the bound
//! its process group is killed); the replies it wrote are read back as
//! [`RawReply`]s and judged by the same [`super::oracle`]s, giving
//! `reproduced: yes / no / unknown`. Without bash or curl, or without what
//! the script needs, the answer is `unknown` with the reason, never `yes`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;

use crate::client::raw::{RawError, RawReply, RawRequest, Rpc};
use crate::discover::legacy::{ANSWER_POST, Streamed};
use crate::fuzz::harness::wire::{FRAMING, Logged, MALFORMED};
use crate::protocol::jsonrpc::Message;

use super::Finding;
use super::exec::{CONTROL, CONTROL_AGAIN, DECLINED, UNTAMPERED, is_control, outcome};
use super::oracle::{MUTATED, completes, judge, judge_call, judge_modes};
use super::repro::{ANSWER, COULD_NOT_RUN, SKIP_VERDICT, STREAM, max_time, replayed, step_name};
use super::summary::{Reproduced, Verdict};
use crate::oracle::Oracle;

/// The folder (inside the finding's) the re-run's replies go to.
pub const REPLIES: &str = "rerun";

/// Runs `dir/repro.sh` against the finding's target and judges its replies.
pub async fn rerun(dir: &Path, f: &Finding) -> Verdict {
    let out = dir.join(REPLIES);
    match run_script(dir, f, &out, &[]).await {
        Ok(()) => judge_replies(f, &out, None),
        Err(end) => match end {
            ScriptEnd::Unknown(why) => Verdict::new(Reproduced::Unknown, why),
            ScriptEnd::Killed(why) => judge_replies(f, &out, Some(why)),
        },
    }
}

/// How a script run ended, when not by itself.
#[derive(Debug)]
pub(crate) enum ScriptEnd {
    /// It could not run, or told why it could not go on.
    Unknown(String),
    /// Killed at the time bound.
    Killed(String),
}

fn on_path(tool: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|d| {
        let p = d.join(tool);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        p.is_file()
    })
}

/// The `elicitkit` binary a stdio `repro.sh` starts the bridge with: this
/// process, whatever it is named (a copy called `ek-new` is still the
/// binary: matching the name `elicitkit` left every copy's re-runs
/// "stopped early"), unless it is a test binary under `target/*/deps`,
/// whose `elicitkit` is one directory up.
fn elicitkit_binary() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    if dir.file_name().is_none_or(|d| d != "deps") {
        return Some(exe);
    }
    [dir.join("elicitkit"), dir.parent()?.join("elicitkit")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The longest a script may take: every step to its `--max-time`, the
/// wait for an `elicitation/create`, and some slack for the JSON steps.
fn bound(f: &Finding) -> Duration {
    let steps = f.log.iter().filter(|l| replayed(f, l)).count() as u64
        + if f.legacy_call.is_some() { 3 } else { 0 };
    Duration::from_secs((steps + 2) * max_time(f) + 10)
}

/// Runs `dir/repro.sh` with bash, `OUT=out` (emptied first), the run's
/// tokens and `env`; stdout and stderr go to `out/output.txt`.
pub(crate) async fn run_script(
    dir: &Path,
    f: &Finding,
    out: &Path,
    env: &[(&str, &str)],
) -> Result<(), ScriptEnd> {
    for tool in ["bash", "curl"] {
        if !on_path(tool) {
            return Err(ScriptEnd::Unknown(format!(
                "{tool} is not installed, so repro.sh could not be re-run"
            )));
        }
    }
    let io = |e: std::io::Error| ScriptEnd::Unknown(format!("re-running repro.sh: {e}"));
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).map_err(io)?;
    let log_path = out.join("output.txt");
    let log = std::fs::File::create(&log_path).map_err(io)?;
    // A stdio finding is re-run on the run's own bridge (its warm
    // processes: a script starting its own server took 1-4 s a finding,
    // most of a run over stdio while findings came), but for an exit,
    // which the script judges from its own bridge's report.
    let url = if f.stdio_command.is_some() && f.oracle == Oracle::ProcessExited {
        ""
    } else {
        &f.mcp_url
    };
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg(dir.join("repro.sh"))
        .env("URL", url)
        .env("OUT", out)
        .env("ELICITKIT_PRINCIPAL", &f.principal)
        .env(SKIP_VERDICT.0, SKIP_VERDICT.1)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().map_err(io)?)
        .stderr(log)
        .kill_on_drop(true);
    if let Some(o) = &f.other_principal {
        cmd.env("ELICITKIT_OTHER_PRINCIPAL", o);
    }
    if f.stdio_command.is_some()
        && std::env::var_os("ELICITKIT").is_none()
        && let Some(bin) = elicitkit_binary()
    {
        cmd.env("ELICITKIT", bin);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(io)?;
    let limit = bound(f);
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(s) => s.map_err(io)?,
        Err(_) => {
            kill_group(&mut child).await;
            return Err(ScriptEnd::Killed(format!(
                "repro.sh did not finish within {}s and was stopped",
                limit.as_secs()
            )));
        }
    };
    if status.code() == Some(COULD_NOT_RUN) {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let why = text
            .lines()
            .rev()
            .find(|l| l.starts_with("repro.sh:"))
            .unwrap_or("repro.sh stopped early");
        return Err(ScriptEnd::Unknown(why.to_owned()));
    }
    Ok(())
}

/// Kills the script and every curl it started (they share its group).
async fn kill_group(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals the process group the
        // script leads (it was spawned with `process_group(0)`); no memory
        // is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill().await;
}

/// A reply as `curl -i` wrote it: interim (1xx) heads skipped; the final
/// status, headers (names lowercased) and body. `None` without a whole head.
pub fn parse_curl_i(mut bytes: &[u8]) -> Option<RawReply> {
    loop {
        let (head, body) = split_head(bytes)?;
        let head = String::from_utf8_lossy(head);
        let mut lines = head.lines();
        let mut status_line = lines.next()?.split_whitespace();
        if !status_line.next()?.starts_with("HTTP/") {
            return None;
        }
        let status: u16 = status_line.next()?.parse().ok()?;
        if (100..200).contains(&status) {
            bytes = body;
            continue;
        }
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        return Some(RawReply {
            status,
            headers,
            body: Bytes::copy_from_slice(body),
            elapsed: Duration::ZERO,
        });
    }
}

/// The head (up to its blank line) and what follows.
fn split_head(b: &[u8]) -> Option<(&[u8], &[u8])> {
    (0..b.len()).find_map(|i| {
        if b[i] != b'\n' {
            return None;
        }
        if b[i + 1..].starts_with(b"\r\n") {
            Some((&b[..i], &b[i + 3..]))
        } else if b[i + 1..].starts_with(b"\n") {
            Some((&b[..i], &b[i + 2..]))
        } else {
            None
        }
    })
}

/// One step of the re-run as the script left it.
struct Step {
    reply: Result<RawReply, RawError>,
    /// curl could not connect at all (exit 7): the target is down.
    no_connect: bool,
}

/// Reads step `n`'s reply: `None` when it did not run to its end.
fn read_step(out: &Path, n: &str, f: &Finding, was: Option<&Logged>) -> Option<Step> {
    let code: i32 = std::fs::read_to_string(out.join(format!("{n}.exit")))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let bytes = std::fs::read(out.join(format!("{n}.reply"))).unwrap_or_default();
    let reply = match code {
        0 => parse_curl_i(&bytes)
            .ok_or_else(|| RawError::Transport(format!("curl wrote no HTTP reply to {n}.reply"))),
        28 => Err(RawError::Timeout(Duration::from_secs(max_time(f)))),
        c => {
            let e = format!("curl exit {c}");
            // As in the run: a close on this (oversized) request refused it.
            match was.map(|l| &l.reply) {
                Some(Err(RawError::Refused(_))) => Err(RawError::Refused(e)),
                _ => Err(RawError::Transport(e)),
            }
        }
    };
    Some(Step {
        reply,
        no_connect: code == 7,
    })
}

/// Whether `label` is one of case `case`'s own requests (the changed retry,
/// its control, replays, concurrent copies), not the flow's walk.
fn case_request(label: &str, case: u64) -> bool {
    label
        .trim_start_matches(FRAMING)
        .trim_start_matches(MALFORMED)
        .trim_start_matches(MUTATED)
        .starts_with(&format!("case {case} "))
}

/// The 2025-11-25 call as the script saw it: its stream and the answer.
fn streamed(stream: &Step, answer: Option<&Step>) -> Streamed {
    let mut st = Streamed::default();
    match &stream.reply {
        Ok(r) => {
            st.status = r.status;
            st.content_type = r.header("content-type").map(str::to_owned);
            if !r.is_sse() {
                st.response = Some(r.rpc());
            } else if let Ok(d) = r.decoded() {
                st.elicitations = d
                    .messages
                    .into_iter()
                    .filter_map(|m| match m {
                        Message::Request(q) if q.method == "elicitation/create" => {
                            Some(q.params.unwrap_or(serde_json::Value::Null))
                        }
                        _ => None,
                    })
                    .collect();
                st.response = Some(r.rpc()).filter(|x| !matches!(x, Rpc::Missing(_)));
            } else {
                st.failure = Some("undecodable SSE event".into());
            }
        }
        Err(RawError::Timeout(_)) => {
            st.failure = Some("timeout: the call's response did not arrive".into())
        }
        Err(e) => st.failure = Some(e.to_string()),
    }
    if let Some(a) = answer {
        st.answer_replies.push(match &a.reply {
            Ok(r) => (r.status, r.body.len()),
            Err(e) => (0, e.to_string().len()),
        });
    }
    st
}

/// Judges the replies a run of `f`'s `repro.sh` left in `out`. `killed`:
/// the script was stopped at its time bound (why).
pub(crate) fn judge_replies(f: &Finding, out: &Path, killed: Option<String>) -> Verdict {
    let mut steps: Vec<(&Logged, Step)> = Vec::new();
    let mut missing: Option<String> = None;
    for (i, l) in f.log.iter().enumerate().filter(|(_, l)| replayed(f, l)) {
        let n = step_name(i);
        match read_step(out, &n, f, Some(l)) {
            Some(s) => steps.push((l, s)),
            None => {
                missing.get_or_insert(n);
            }
        }
    }
    let (mut stream, mut answer) = (None, None);
    if f.legacy_call.is_some() {
        stream = read_step(out, STREAM, f, None);
        if stream.is_none() {
            missing.get_or_insert(STREAM.to_owned());
        }
        answer = read_step(out, ANSWER, f, None);
    }
    let seen = match f.oracle {
        Oracle::ProcessExited => exited(out),
        Oracle::TamperedStateAccepted
        | Oracle::OtherRequestAccepted
        | Oracle::ForeignPrincipalAccepted => accepted(f, &steps),
        Oracle::SingleUseTwice | Oracle::ReplayAccepted => twice(f, &steps),
        _ => per_reply(f, out, &steps, stream.as_ref(), answer.as_ref()),
    };
    if let Ok(what) = seen {
        return Verdict::new(Reproduced::Yes, what);
    }
    let down = steps
        .iter()
        .map(|(l, s)| (l.request.label.as_str(), s))
        .chain(stream.as_ref().map(|s| (STREAM, s)))
        .find(|(_, s)| s.no_connect);
    if let Some(why) = killed {
        Verdict::new(Reproduced::Unknown, why)
    } else if let Some((label, _)) = down {
        Verdict::new(
            Reproduced::Unknown,
            format!("the target refused connections ({label}); it may still be down from the run"),
        )
    } else if let Some(n) = missing {
        Verdict::new(
            Reproduced::Unknown,
            format!(
                "step {n} left no reply; see {}/output.txt",
                PathBuf::from(REPLIES).display()
            ),
        )
    } else {
        Verdict::new(Reproduced::No, seen.err().unwrap_or_default())
    }
}

/// A changed state or another principal completing where the controls
/// show the state is load-bearing ([`crate::oracle::tamper::judge`], as in
/// the run): `Ok(what was seen)` or `Err(what was seen instead)`.
fn accepted(f: &Finding, steps: &[(&Logged, Step)]) -> Result<String, String> {
    use crate::oracle::tamper::{Control, Controls, Judgement, judge};
    let case: Vec<&(&Logged, Step)> = steps
        .iter()
        .filter(|(l, _)| case_request(&l.request.label, f.case))
        .collect();
    let retry = case
        .iter()
        .find(|(l, _)| !is_control(&l.request.label))
        .ok_or("the changed retry left no reply")?;
    let control = |label: &str| {
        case.iter()
            .find(|(l, _)| l.request.label.ends_with(label))
            .map(|(_, s)| outcome(&s.reply))
    };
    let controls = Controls {
        no_state: control(CONTROL),
        no_state_again: control(CONTROL_AGAIN),
        untampered: control(UNTAMPERED),
        declined: control(DECLINED),
        documented: f.trusts_state,
    };
    match judge(&outcome(&retry.1.reply), &controls) {
        Judgement::Accepted(why) => Ok(format!("{} completed; {why}", retry.0.request.label)),
        Judgement::Refused => Err(format!(
            "the changed retry did not complete ({})",
            describe(&retry.1.reply)
        )),
        Judgement::NotShown(why) => Err(why),
        Judgement::Need(k) => Err(format!(
            "the controls came out differently this time: the {} control the judgement now \
             needs was not part of the run",
            match k {
                Control::NoState => "no-state",
                Control::NoStateAgain => "repeated no-state",
                Control::Untampered => "untampered",
                Control::Declined => "declined (effect)",
            }
        )),
    }
}

/// A request completing more than once, leaving out the completions that
/// read like the run's effect control (the same flow declined: they did
/// nothing, [`crate::oracle::effect`]).
fn twice(f: &Finding, steps: &[(&Logged, Step)]) -> Result<String, String> {
    use crate::oracle::effect::{Effect, judge};
    let declined = steps
        .iter()
        .find(|(l, _)| {
            case_request(&l.request.label, f.case) && l.request.label.ends_with(DECLINED)
        })
        .map(|(_, s)| outcome(&s.reply));
    let completed: Vec<_> = steps
        .iter()
        .filter(|(l, s)| {
            case_request(&l.request.label, f.case)
                && !is_control(&l.request.label)
                && completes(&s.reply)
        })
        .map(|(_, s)| outcome(&s.reply))
        .collect();
    let acted = completed
        .iter()
        .filter(|o| {
            declined
                .as_ref()
                .is_none_or(|d| judge(o, d) != Effect::Nothing)
        })
        .count();
    if acted > 1 {
        Ok(format!("one request completed {acted} times"))
    } else if completed.len() > 1 {
        Err(format!(
            "the request completed {} times, {acted} of them otherwise than the same flow \
             declined (the rest did nothing)",
            completed.len()
        ))
    } else {
        Err(format!("the request completed {} time(s)", completed.len()))
    }
}

/// A stdio server's exit, as `elicitkit bridge` reported it on the
/// script's output (the fuzzer's re-run) or in the copy the script keeps
/// of the bridge's output (`bridge.txt`, when a user runs it).
fn exited(out: &Path) -> Result<String, String> {
    let text = ["output.txt", "bridge.txt"]
        .map(|f| std::fs::read_to_string(out.join(f)).unwrap_or_default())
        .concat();
    text.lines()
        .find(|l| l.contains(crate::stdio::bridge::EXITED))
        .map(|l| l.trim().to_owned())
        .ok_or_else(|| "the server process did not exit".to_owned())
}

/// The per-reply oracles over every step, and the 2025-11-25 call's.
fn per_reply(
    f: &Finding,
    out: &Path,
    steps: &[(&Logged, Step)],
    stream: Option<&Step>,
    answer: Option<&Step>,
) -> Result<String, String> {
    let wanted =
        |o: Oracle| o == f.oracle || (f.oracle == Oracle::Unresponsive && o.transport_level());
    let mut judged: Vec<(Oracle, String)> = steps
        .iter()
        .filter_map(|(l, s)| judge(&l.request, &s.reply, &f.mcp_url))
        .collect();
    if let Some(a) = answer {
        let body = std::fs::read(out.join(format!("{ANSWER}.body"))).unwrap_or_default();
        let req = RawRequest::new(ANSWER_POST, reqwest::Method::POST, &f.mcp_url).body(body);
        judged.extend(judge(&req, &a.reply, &f.mcp_url));
    }
    if let Some(s) = stream {
        let st = streamed(s, answer);
        judged.extend(judge_call(&st).map(|(o, w)| (o, format!("the call: {w}"))));
        if let Some(caps) = session_caps(f) {
            judged.extend(
                judge_modes(&st.elicitations, &caps).map(|(o, w)| (o, format!("the call: {w}"))),
            );
        }
    }
    if let Some((_, what)) = judged.iter().find(|(o, _)| wanted(*o)) {
        return Ok(what.clone());
    }
    Err(match judged.first() {
        Some((o, what)) => format!("{o} instead: {what}"),
        None => match steps.last() {
            Some((l, s)) => format!(
                "no oracle fired; the last reply ({}): {}",
                l.request.label,
                describe(&s.reply)
            ),
            None => "no oracle fired".into(),
        },
    })
}

/// The capabilities the finding's 2025-11-25 session declared at
/// `initialize` (the script sends the same body).
fn session_caps(f: &Finding) -> Option<crate::protocol::ClientCapabilities> {
    f.log.iter().find_map(|l| {
        let v: serde_json::Value = serde_json::from_slice(&l.request.body).ok()?;
        if v.get("method")?.as_str()? != "initialize" {
            return None;
        }
        serde_json::from_value(v.get("params")?.get("capabilities")?.clone()).ok()
    })
}

fn describe(r: &Result<RawReply, RawError>) -> String {
    match r {
        Ok(r) => format!("HTTP {}, {}", r.status, r.rpc().describe()),
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curl_i_output_parses_past_interim_heads() {
        let r = parse_curl_i(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Type: text/html\r\n\r\n<html>\r\n\r\n</html>",
        )
        .unwrap();
        assert_eq!(r.status, 500);
        assert_eq!(r.header("content-type"), Some("text/html"));
        assert_eq!(&r.body[..], b"<html>\r\n\r\n</html>");
        let sse = parse_curl_i(
            b"HTTP/1.1 200 OK\ncontent-type: text/event-stream\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        )
        .unwrap();
        assert!(matches!(sse.rpc(), Rpc::Result(_)));
        assert!(parse_curl_i(b"").is_none());
        assert!(parse_curl_i(b"HTTP/1.1 200 OK\r\ncontent-type: x").is_none());
        assert!(parse_curl_i(b"garbage\r\n\r\n").is_none());
    }

    #[test]
    fn case_requests_are_told_from_the_walk() {
        assert!(case_request("[mutated] case 7 t state:flip_char", 7));
        assert!(case_request(&format!("case 7 {CONTROL}"), 7));
        for c in [CONTROL, CONTROL_AGAIN, UNTAMPERED] {
            assert!(is_control(&format!("case 7 {c}")), "{c}");
        }
        assert!(!is_control("[mutated] case 7 t state:flip_char"));
        assert!(case_request(
            &format!("{FRAMING}{MALFORMED}{MUTATED}case 7 x"),
            7
        ));
        assert!(!case_request("tools/call t #1", 7));
        assert!(!case_request("case 71 t retry", 7));
    }

    use super::super::test_http::{Read, read_request};
    use crate::client::raw::RawRequest;
    use crate::protocol::Generation;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};
    use tokio::io::AsyncWriteExt;

    /// Requests the fake server saw: head, body.
    type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;
    /// What it answers a request (head, body): bytes, then how long to hold
    /// the connection open.
    type Answer = Arc<dyn Fn(&str, &[u8]) -> (Vec<u8>, Duration) + Send + Sync>;

    /// An HTTP/1.1 server on 127.0.0.1 (one request per connection).
    async fn fake(answer: Answer) -> (String, Seen) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", l.local_addr().unwrap());
        let seen: Seen = Arc::default();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                let (log, answer) = (log.clone(), answer.clone());
                tokio::spawn(async move {
                    let Read::Request { head, body } = read_request(&mut c, usize::MAX).await
                    else {
                        return;
                    };
                    let (bytes, hold) = answer(&head, &body);
                    log.lock().unwrap().push((head, body));
                    let _ = c.write_all(&bytes).await;
                    tokio::time::sleep(hold).await;
                });
            }
        });
        (url, seen)
    }

    fn http(status: &str, headers: &str, body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn logged(label: &str, url: &str, body: Vec<u8>, reply: Vec<u8>) -> Logged {
        Logged {
            request: RawRequest::new(label, reqwest::Method::POST, url)
                .header("Content-Type", "application/json")
                .header("Accept", crate::protocol::body::ACCEPT_BOTH)
                .token(Some("alice"))
                .body(body),
            reply: Ok(parse_curl_i(&reply).unwrap()),
            panic: None,
        }
    }

    fn finding(oracle: Oracle, g: Generation, url: &str, log: Vec<Logged>) -> Finding {
        Finding {
            oracle,
            what: "w".into(),
            generation: g,
            tool: "t".into(),
            method: "tools/call".into(),
            seed: 1,
            case: 0,
            ops: Vec::new(),
            original_ops: Vec::new(),
            minimised_reproduced: true,
            log,
            streamed: Vec::new(),
            legacy_call: None,
            mcp_url: url.into(),
            stdio_command: None,
            server_command: None,
            principal: "alice".into(),
            other_principal: None,
            timeout_secs: 1.0,
            trusts_state: false,
        }
    }

    /// A state with every character that broke the old sed/grep steps is
    /// read from the reply (JSON or SSE) and filled into the next body byte
    /// for byte, with jq, with python3 and with the default pick; the
    /// re-run then sees the 5xx again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_awkward_state_is_filled_byte_for_byte_and_the_finding_reproduced() {
        let state = "a\"b\\c|d&e/f\u{e9}\u{20ac} \u{1F600}\t@@S2@@\n";
        for sse in [false, true] {
            let issued = json!({"jsonrpc": "2.0", "id": 1, "result": {
                "resultType": "input_required", "requestState": state}})
            .to_string();
            let first = if sse {
                http(
                    "200 OK",
                    "content-type: text/event-stream\r\n",
                    &format!("id: 0\r\ndata:\r\n\r\ndata: {issued}\r\n\r\n"),
                )
            } else {
                http("200 OK", "content-type: application/json\r\n", &issued)
            };
            let crash = http(
                "500 Internal Server Error",
                "content-type: text/html\r\n",
                "<html>\n<body>boom | &amp;</body>\n</html>",
            );
            let (a, b) = (first.clone(), crash.clone());
            let (url, seen) = fake(Arc::new(move |_, body: &[u8]| {
                let text = String::from_utf8_lossy(body);
                let reply = if text.contains("requestState") {
                    &b
                } else {
                    &a
                };
                (reply.clone(), Duration::ZERO)
            }))
            .await;
            let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
            let retry = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "t", "requestState": state, "note": format!("{state}tail")}})
            .to_string()
            .into_bytes();
            let f = finding(
                Oracle::ServerError,
                Generation::Modern,
                &url,
                vec![
                    logged("tools/call t #1", &url, call.to_vec(), first),
                    logged("[mutated] case 0 t body:x", &url, retry.clone(), crash),
                ],
            );
            let dir = tempfile::tempdir().unwrap();
            super::super::repro::write(dir.path(), &f).unwrap();
            let template = std::fs::read_to_string(dir.path().join("02.body")).unwrap();
            assert!(
                template.contains(r#""requestState":"@@S1@@""#),
                "{template}"
            );
            for env in [
                &[][..],
                &[("REPRO_JSON", "jq")],
                &[("REPRO_JSON", "python3")],
            ] {
                seen.lock().unwrap().clear();
                let out = dir.path().join("out");
                run_script(dir.path(), &f, &out, env).await.unwrap();
                let bodies: Vec<Vec<u8>> = seen
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(_, b)| b.clone())
                    .collect();
                let log = std::fs::read_to_string(out.join("output.txt")).unwrap();
                assert_eq!(bodies.len(), 2, "{env:?} sse {sse}: {log}");
                assert_eq!(
                    String::from_utf8_lossy(&bodies[1]),
                    String::from_utf8_lossy(&retry),
                    "{env:?} sse {sse}: {log}"
                );
                assert_eq!(bodies[1], retry);
                let v = judge_replies(&f, &out, None);
                assert_eq!(v.reproduced, Reproduced::Yes, "{v:?}");
            }
        }
    }

    /// A 2025-11-25 reproducer never posts an answer without the id of an
    /// `elicitation/create` it saw (no `"id":,`): without one it says so
    /// and the call's own hang is the finding; with one (a string id that
    /// needs escaping) the answer carries it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_legacy_answer_is_sent_only_with_a_seen_elicitation_id() {
        for elicit in [false, true] {
            let (url, seen) = fake(Arc::new(move |_, body: &[u8]| {
                let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                match v["method"].as_str() {
                    Some("initialize") => (
                        http(
                            "200 OK",
                            "content-type: application/json\r\nMcp-Session-Id: sid \"1\"\r\n",
                            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                        ),
                        Duration::ZERO,
                    ),
                    Some("tools/call") => {
                        let mut s =
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
                        if elicit {
                            s.extend_from_slice(b"data: {\"jsonrpc\":\"2.0\",\"id\":\"e\\\"1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n");
                        }
                        (s, Duration::from_secs(4))
                    }
                    _ => (http("202 Accepted", "", ""), Duration::ZERO),
                }
            }))
            .await;
            let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
            let mut f = finding(
                Oracle::Hang,
                Generation::Legacy,
                &url,
                vec![logged(
                    "initialize",
                    &url,
                    init.to_vec(),
                    http(
                        "200 OK",
                        "content-type: application/json\r\nmcp-session-id: sid \"1\"\r\n",
                        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                    ),
                )],
            );
            f.legacy_call = Some((
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}),
                "cancel".into(),
            ));
            let dir = tempfile::tempdir().unwrap();
            super::super::repro::write(dir.path(), &f).unwrap();
            let v = rerun(dir.path(), &f).await;
            let out = std::fs::read_to_string(dir.path().join(REPLIES).join("output.txt")).unwrap();
            let seen = seen.lock().unwrap().clone();
            assert!(
                seen.iter()
                    .all(|(_, b)| !String::from_utf8_lossy(b).contains("\"id\":,")),
                "{seen:?}"
            );
            let answers: Vec<Value> = seen
                .iter()
                .filter_map(|(_, b)| serde_json::from_slice::<Value>(b).ok())
                .filter(|v| v.get("result").is_some())
                .collect();
            let call_head = &seen
                .iter()
                .find(|(_, b)| String::from_utf8_lossy(b).contains("tools/call"))
                .unwrap()
                .0;
            assert!(
                call_head.contains("Mcp-Session-Id: sid \"1\""),
                "{call_head}"
            );
            if elicit {
                assert_eq!(answers.len(), 1, "{out}");
                assert_eq!(answers[0]["id"], "e\"1");
                assert_eq!(answers[0]["result"]["action"], "cancel");
            } else {
                assert!(answers.is_empty(), "{answers:?}");
                assert!(out.contains("no elicitation/create"), "{out}");
            }
            assert_eq!(v.reproduced, Reproduced::Yes, "{v:?}\n{out}");
        }
    }

    /// Without jq and python3 a script that reads states stops with a
    /// message, and the verdict is `unknown` with it, never `yes`.
    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_jq_or_python3_the_verdict_is_unknown() {
        let url = "http://127.0.0.1:9/mcp";
        let issued = http(
            "200 OK",
            "content-type: application/json\r\n",
            r#"{"jsonrpc":"2.0","id":1,"result":{"requestState":"s"}}"#,
        );
        let f = finding(
            Oracle::ServerError,
            Generation::Modern,
            url,
            vec![logged("tools/call t #1", url, b"{}".to_vec(), issued)],
        );
        let dir = tempfile::tempdir().unwrap();
        super::super::repro::write(dir.path(), &f).unwrap();
        // A PATH with what the script needs, but neither jq nor python3.
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for tool in ["bash", "curl", "dirname", "mktemp", "mkdir", "cat", "awk"] {
            let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
                .map(|d| d.join(tool))
                .find(|p| p.is_file())
                .unwrap();
            std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
        }
        let out = dir.path().join("out");
        let path = bin.to_str().unwrap();
        match run_script(dir.path(), &f, &out, &[("PATH", path)]).await {
            Err(ScriptEnd::Unknown(why)) => assert!(why.contains("jq or python3"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
