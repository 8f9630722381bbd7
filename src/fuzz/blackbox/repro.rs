//! Reproducers: each finding's folder holds `repro.sh` (curl, one request
//! per step, each body a file beside it sent with `--data-binary @file`),
//! `finding.json` and the masked exchanges.
//!
//! States the server issued during the run are not baked in: the script
//! reads them from the replies it gets (JSON-aware: `jq`, else `python3`)
//! and fills them into the bodies that used them (`@@S1@@` in `NN.body`,
//! JSON-escaped again, byte for byte), so any state works, quotes,
//! backslashes and non-ASCII included. A state changed beyond a prefix stays
//! literal. The script writes each reply (`curl -i`) and curl's exit status
//! to `$OUT`, which [`super::rerun`] reads back.
//!
//! - `sh/send.sh`, `sh/json.sh`: the shell helpers every script carries.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::client::raw::{RawReply, Rpc};
use crate::discover::legacy::ANSWER_POST;
use crate::fuzz::harness::wire::Logged;
use crate::protocol::headers::SESSION_ID;
use crate::protocol::mrtr::REQUEST_STATE;

use super::Finding;
use super::summary::Verdict;

/// `send`, `show`, `sid_of`.
const SEND_SH: &str = include_str!("sh/send.sh");
/// `state_of`, `eid_of`, `capture`, `fill` (jq or python3).
const JSON_SH: &str = include_str!("sh/json.sh");

/// Exit status of a `repro.sh` that could not run (no jq nor python3, the
/// bridge did not start) or could not tell whether the symptom reproduced;
/// 1 is "reproduced", 0 "not reproduced", as a test's.
pub const COULD_NOT_RUN: i32 = 2;
/// `REPRO_VERDICT=skip`: the script stops after the replies, without its
/// verdict (the fuzzer's own re-run judges them in-process).
pub const SKIP_VERDICT: (&str, &str) = ("REPRO_VERDICT", "skip");
/// Step name of the 2025-11-25 call's stream.
pub const STREAM: &str = "stream";
/// Step name of the answer to its `elicitation/create`.
pub const ANSWER: &str = "answer";

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn replace_bytes(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// `s` as it stands between the quotes of a JSON string.
fn json_escaped(s: &str) -> String {
    let q = Value::from(s).to_string();
    q[1..q.len() - 1].to_owned()
}

fn issued_state(r: &RawReply) -> Option<String> {
    match r.rpc() {
        Rpc::Result(v) => v
            .get(REQUEST_STATE)
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// Whether `repro.sh` sends this logged request as a step of its own (the
/// 2025-11-25 answer POSTs are sent by the stream step instead, with the
/// id of the `elicitation/create` the script sees).
pub fn replayed(f: &Finding, l: &Logged) -> bool {
    !(f.legacy_call.is_some() && l.request.label == ANSWER_POST)
}

/// The file stem of the step for log entry `i`: `01`, `02`, ...
pub fn step_name(i: usize) -> String {
    format!("{:02}", i + 1)
}

/// Every request's `--max-time`, in seconds.
pub fn max_time(f: &Finding) -> u64 {
    f.timeout_secs.ceil() as u64 + 1
}

/// The `Authorization` argument of a request with bearer `token`.
fn auth_arg(token: &str, f: &Finding) -> String {
    if token == f.principal {
        "\"Authorization: Bearer $TOKEN\"".into()
    } else if Some(token) == f.other_principal.as_deref() {
        "\"Authorization: Bearer $OTHER_TOKEN\"".into()
    } else {
        quote(&format!("Authorization: Bearer {token}"))
    }
}

/// The `TOKEN=...` line: the demo principals have defaults, any other
/// token must come from the environment.
fn token_line(var: &str, env: &str, token: &str) -> String {
    if matches!(token, "alice" | "bob") {
        format!("{var}=${{{env}:-{token}}}")
    } else {
        format!(
            "[ -n \"${{{env}:-}}\" ] || {{ echo \"repro.sh: export {env} (the token the run used)\" >&2; exit 2; }}\n\
             {var}=${env}"
        )
    }
}

/// The `TLS=(...)` line: curl's flags for the trust the run used
/// (`--insecure`, or `--cacert` with its absolute path); send.sh adds them.
fn tls_line(tls: &crate::client::tls::TlsOptions) -> String {
    let mut flags = Vec::new();
    if tls.insecure {
        flags.push("--insecure".to_owned());
    } else if let Some(ca) = &tls.cacert {
        let abs = std::path::absolute(ca).unwrap_or_else(|_| ca.clone());
        flags.push("--cacert".to_owned());
        flags.push(quote(&abs.display().to_string()));
    }
    format!(
        "TLS=({})  # curl's TLS flags, as the run trusted the target",
        flags.join(" ")
    )
}

/// The lines of a stdio finding's `repro.sh` that start the server, as the
/// run did, behind `elicitkit bridge` (`ELICITKIT` names the binary) and
/// set `URL` to its endpoint; the server is stopped when the script ends.
/// Given a `URL` (a bridge already in front of such a server: the
/// fuzzer's own, when it re-runs a finding that is not an exit), the
/// script uses it and starts nothing.
fn stdio_start(bridge_args: &str) -> String {
    format!(
        "# The server speaks stdio: started here as the run started it, behind\n\
         # `elicitkit bridge`, which gives curl an endpoint; stopped when the script ends.\n\
         # With URL=... set (an `elicitkit bridge` already running), that one is used.\n\
         ELICITKIT=${{ELICITKIT:-elicitkit}}\n\
         BRIDGE_OUT=$(mktemp)\n\
         if [ -n \"${{URL:-}}\" ]; then\n\
         \x20 stop_bridge() {{ :; }}\n\
         \x20 trap 'rm -f \"$BRIDGE_OUT\"' EXIT\n\
         else\n\
         \"$ELICITKIT\" bridge {bridge_args} > \"$BRIDGE_OUT\" 2>&1 &\n\
         BRIDGE=$!\n\
         disown $BRIDGE  # not one of the jobs a bare `wait` below waits for\n\
         # stop_bridge: stops it and waits (up to 5 s); it reports the server's exits then.\n\
         stop_bridge() {{ kill $BRIDGE 2>/dev/null; for _ in $(seq 100); do kill -0 $BRIDGE 2>/dev/null || break; sleep 0.05; done; }}\n\
         trap 'stop_bridge; cat \"$BRIDGE_OUT\" >&2; rm -f \"$BRIDGE_OUT\"' EXIT\n\
         URL=\n\
         for _ in $(seq 300); do\n\
         \x20 URL=$(sed -n 's/^listening on //p' \"$BRIDGE_OUT\" | head -n 1)\n\
         \x20 [ -n \"$URL\" ] && break\n\
         \x20 kill -0 $BRIDGE 2>/dev/null || {{ cat \"$BRIDGE_OUT\" >&2; exit 2; }}\n\
         \x20 sleep 0.1\n\
         done\n\
         [ -n \"$URL\" ] || {{ echo \"repro.sh: elicitkit bridge did not start\" >&2; exit 2; }}\n\
         URL=\"$URL/mcp\"\n\
         fi\n"
    )
}

/// What a stdio finding's `exchanges.txt` writes for the bridge's URL (a
/// loopback port of the run, which names nothing a user knows).
pub const BRIDGE_URL: &str = "<stdio bridge>/mcp";

/// Writes the finding's folder: `repro.sh`, `NN.body` files and
/// `exchanges.txt` (`finding.json` comes with the re-run's verdict, from
/// [`write_finding`]; `judge.json`, which the script's verdict reads, from
/// [`super::verdict_file::write`]).
pub fn write(dir: &Path, f: &Finding) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut sh = String::new();
    let _ = writeln!(sh, "#!/usr/bin/env bash");
    let _ = writeln!(
        sh,
        "# elicitkit fuzz finding: {} ({} {}, case {} of seed {})",
        f.oracle, f.generation, f.tool, f.case, f.seed
    );
    if let Some(cmd) = &f.server_command {
        let _ = writeln!(
            sh,
            "# the server (stdio): {}",
            cmd.replace(['\r', '\n'], " ")
        );
    }
    let _ = writeln!(sh, "# {}", f.what.replace(['\r', '\n'], " "));
    let _ = writeln!(sh, "# ops: {}", f.op_names().join(" "));
    let _ = writeln!(
        sh,
        "# Re-run against a server like the one fuzzed: URL=... ./repro.sh. Each body is a\n\
         # file beside this script; states the server issues are read from its replies\n\
         # (jq, else python3) and filled in where a body has @@S1@@, @@S2@@, ...\n\
         # Replies go to $OUT (default: a new temporary folder): NN.reply as curl -i\n\
         # wrote it, NN.exit curl's exit status. The last request shows the finding.\n\
         # Exit status, as a test's: 1 the symptom reproduced, 0 it did not, 2 this\n\
         # could not run or tell (elicitkit judges the replies: on PATH, or ELICITKIT=...)."
    );
    let _ = writeln!(sh, "set -u\nDIR=$(cd \"$(dirname \"$0\")\" && pwd)");
    match &f.stdio_command {
        None => {
            let _ = writeln!(sh, "URL=${{URL:-{}}}", quote(&f.mcp_url));
            let _ = writeln!(sh, "{}", tls_line(&crate::client::tls::installed()));
        }
        Some(cmd) => {
            let _ = write!(sh, "{}", stdio_start(cmd));
        }
    }
    let _ = writeln!(
        sh,
        "{}",
        token_line("TOKEN", "ELICITKIT_PRINCIPAL", &f.principal)
    );
    if let Some(o) = &f.other_principal {
        let _ = writeln!(
            sh,
            "{}",
            token_line("OTHER_TOKEN", "ELICITKIT_OTHER_PRINCIPAL", o)
        );
    }
    let _ = writeln!(
        sh,
        "OUT=${{OUT:-$(mktemp -d)}}\nmkdir -p \"$OUT\"\necho \"replies in $OUT\"\nMAX={}\nSID=\n",
        max_time(f)
    );
    sh.push_str(SEND_SH);
    let reads_json = f.legacy_call.is_some()
        || f.log
            .iter()
            .any(|l| replayed(f, l) && l.reply.as_ref().ok().and_then(issued_state).is_some());
    if reads_json {
        sh.push_str(JSON_SH);
    }
    sh.push('\n');
    let mut states: Vec<String> = Vec::new();
    let mut sid: Option<String> = None;
    let mut group: Vec<String> = Vec::new();
    for (i, l) in f.log.iter().enumerate() {
        if !replayed(f, l) {
            continue;
        }
        let n = step_name(i);
        let concurrent = l.request.label.contains("concurrent copy");
        if !concurrent {
            end_group(&mut sh, &mut group);
        }
        let _ = writeln!(
            sh,
            "echo {}",
            quote(&format!("== {n}: {}", l.request.label))
        );
        let mut cmd = format!("send {n} -X {} ", l.request.method);
        cmd.push_str(&if l.request.url == f.mcp_url {
            "\"$URL\"".to_owned()
        } else {
            quote(&l.request.url)
        });
        for (k, v) in &l.request.headers {
            if k.eq_ignore_ascii_case(SESSION_ID) && Some(v) == sid.as_ref() {
                cmd.push_str(&format!(" -H \"{k}: $SID\""));
            } else {
                cmd.push_str(&format!(" -H {}", quote(&format!("{k}: {v}"))));
            }
        }
        if let Some(t) = &l.request.token {
            cmd.push_str(&format!(" -H {}", auth_arg(t, f)));
        }
        let body = templated(&l.request.body, &states);
        if !body.is_empty() {
            if !l
                .request
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                // As sent: no Content-Type (curl would add a form one).
                cmd.push_str(" -H 'Content-Type:'");
            }
            std::fs::write(dir.join(format!("{n}.body")), &body)?;
            if body == l.request.body {
                cmd.push_str(&format!(" --data-binary @\"$DIR/{n}.body\""));
            } else {
                let _ = writeln!(sh, "fill \"$DIR/{n}.body\" \"$OUT/{n}.body\"");
                cmd.push_str(&format!(" --data-binary @\"$OUT/{n}.body\""));
            }
        }
        if concurrent {
            let _ = writeln!(sh, "{cmd} &");
            group.push(n);
            continue;
        }
        let _ = writeln!(sh, "{cmd}\nshow {n}");
        if let Ok(r) = &l.reply {
            if let Some(s) = issued_state(r)
                && !states.contains(&s)
            {
                states.push(s);
                let _ = writeln!(sh, "capture S{} \"$OUT/{n}.reply\"", states.len());
            }
            if let Some(s) = r.header(SESSION_ID)
                && sid.as_deref() != Some(s)
            {
                sid = Some(s.to_owned());
                let _ = writeln!(sh, "SID=$(sid_of \"$OUT/{n}.reply\")");
            }
        }
        sh.push('\n');
    }
    end_group(&mut sh, &mut group);
    if let Some((call, action)) = &f.legacy_call {
        legacy_call(&mut sh, dir, call, action)?;
    }
    verdict(&mut sh, f);
    let path = dir.join("repro.sh");
    std::fs::write(&path, sh)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    let mut ex = String::new();
    if let Some(cmd) = &f.server_command {
        let _ = writeln!(
            ex,
            "# the server (stdio): {cmd}\n# Each body below went to it as one line on its stdin, through elicitkit's\n\
             # loopback bridge ({BRIDGE_URL} below); the HTTP statuses are the bridge's.\n"
        );
    }
    for l in &f.log {
        let e = l.exchange();
        let _ = writeln!(ex, "--- {}\n{}\n-> {}\n", e.label, e.request, e.response);
    }
    for e in &f.streamed {
        let _ = writeln!(ex, "--- {}\n{}\n-> {}\n", e.label, e.request, e.response);
    }
    if f.server_command.is_some() {
        ex = ex.replace(&f.mcp_url, BRIDGE_URL);
    }
    std::fs::write(dir.join("exchanges.txt"), ex)
}

/// The script's last lines: `elicitkit fuzz --judge` on the replies, its
/// exit status the script's (anything but 0 or 1 is 2: it could not tell).
fn verdict(sh: &mut String, f: &Finding) {
    let (var, skip) = SKIP_VERDICT;
    sh.push_str(&format!(
        "# The verdict: elicitkit judges these replies as the fuzzer judged the run's.\n\
         [ \"${{{var}:-}}\" = {skip} ] && exit 0\n"
    ));
    if f.stdio_command.is_some() {
        // The bridge's report of the server's exits (written as it stops),
        // for the judgement.
        sh.push_str("stop_bridge\ncp \"$BRIDGE_OUT\" \"$OUT/bridge.txt\"\n");
    } else {
        sh.push_str("ELICITKIT=${ELICITKIT:-elicitkit}\n");
    }
    sh.push_str(
        "command -v \"$ELICITKIT\" >/dev/null 2>&1 || {\n\
         \x20 echo \"repro.sh: judging the replies needs elicitkit (on PATH, or ELICITKIT=/path/to/elicitkit); they are in $OUT\" >&2\n\
         \x20 exit 2\n\
         }\n\
         \"$ELICITKIT\" fuzz --judge \"$DIR\" --replies \"$OUT\"\n\
         case $? in 0) exit 0 ;; 1) exit 1 ;; *) exit 2 ;; esac\n",
    );
}

/// `body` with each issued state (as JSON-escaped in it) replaced by its
/// placeholder `@@Sk@@`; longer states first, so none eats into another.
fn templated(body: &[u8], states: &[String]) -> Vec<u8> {
    let mut order: Vec<usize> = (0..states.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(states[k].len()));
    order.into_iter().fold(body.to_vec(), |b, k| {
        replace_bytes(
            &b,
            json_escaped(&states[k]).as_bytes(),
            format!("@@S{}@@", k + 1).as_bytes(),
        )
    })
}

/// Waits for a group of concurrent steps and shows their replies.
fn end_group(sh: &mut String, group: &mut Vec<String>) {
    if group.is_empty() {
        return;
    }
    let _ = writeln!(sh, "wait");
    for n in group.drain(..) {
        let _ = writeln!(sh, "show {n}");
    }
    sh.push('\n');
}

/// Writes `finding.json`: the finding and how its re-run went.
pub fn write_finding(dir: &Path, f: &Finding, rerun: &Verdict) -> std::io::Result<()> {
    let json = json!({
        "oracle": f.oracle,
        "what": f.what,
        "generation": f.generation.to_string(),
        "tool": f.tool,
        "seed": f.seed,
        "case": f.case,
        "ops": f.op_names(),
        "ops_debug": f.ops.iter().map(|o| format!("{o:?}")).collect::<Vec<_>>(),
        "ops_before_minimising": f.original_ops,
        "requests": f.log.len(),
        "minimised_reproduced": f.minimised_reproduced,
        "reproduced": rerun.reproduced,
        "reproduced_detail": rerun.detail,
    });
    std::fs::write(
        dir.join("finding.json"),
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    )
}

/// The 2025-11-25 call: the stream in the background, the answer POSTed
/// when `elicitation/create` shows up on it; none when nothing shows up
/// (the call's own reply then shows what the server did).
fn legacy_call(sh: &mut String, dir: &Path, call: &Value, action: &str) -> std::io::Result<()> {
    std::fs::write(dir.join("call.body"), call.to_string())?;
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":%s,"result":{{"action":{}}}}}"#,
        Value::from(action)
    );
    let _ = writeln!(
        sh,
        "echo {title}\n\
         LEGACY=(-H 'Accept: application/json, text/event-stream' -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2025-11-25' -H \"Mcp-Session-Id: $SID\" -H \"Authorization: Bearer $TOKEN\")\n\
         send {STREAM} -N -X POST \"$URL\" \"${{LEGACY[@]}}\" --data-binary @\"$DIR/call.body\" &\n\
         CALL=$!\n\
         EID=\n\
         for _ in $(seq 1 $((MAX * 10))); do\n\
         \x20 if grep -q elicitation/create \"$OUT/{STREAM}.reply\" 2>/dev/null && EID=$(eid_of \"$OUT/{STREAM}.reply\"); then break; fi\n\
         \x20 kill -0 \"$CALL\" 2>/dev/null || break\n\
         \x20 sleep 0.1\n\
         done\n\
         [ -n \"$EID\" ] || EID=$(eid_of \"$OUT/{STREAM}.reply\" 2>/dev/null) || EID=\n\
         if [ -n \"$EID\" ]; then\n\
         \x20 printf {answer} \"$EID\" > \"$OUT/{ANSWER}.body\"\n\
         \x20 echo {answer_title}\n\
         \x20 send {ANSWER} -X POST \"$URL\" \"${{LEGACY[@]}}\" --data-binary @\"$OUT/{ANSWER}.body\"\n\
         \x20 show {ANSWER}\n\
         else\n\
         \x20 echo \"(no elicitation/create on the stream within ${{MAX}}s: no answer sent; the call's reply shows what the server did)\"\n\
         fi\n\
         wait \"$CALL\"\n\
         echo '== the call'\"'\"'s stream'\n\
         show {STREAM}",
        title = quote(&format!(
            "== tools/call (stream), {action} once elicitation/create arrives"
        )),
        answer = quote(&answer),
        answer_title = quote(&format!("== {ANSWER_POST} ({action})")),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_replacement_and_quoting() {
        assert_eq!(
            replace_bytes(b"a.SS.b.SS", b"SS", b"@"),
            b"a.@.b.@".to_vec()
        );
        assert_eq!(replace_bytes(b"\xffSS", b"SS", b"x"), b"\xffx".to_vec());
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_script_trusts_the_target_as_the_run_did() {
        use crate::client::tls::TlsOptions;
        let line = |o: TlsOptions| tls_line(&o);
        assert!(line(TlsOptions::default()).starts_with("TLS=()"));
        let insecure = TlsOptions {
            insecure: true,
            cacert: Some("ca.pem".into()),
        };
        assert!(line(insecure).starts_with("TLS=(--insecure)"));
        let ca = line(TlsOptions {
            cacert: Some("/etc/ca dir/ca.pem".into()),
            insecure: false,
        });
        assert!(
            ca.starts_with("TLS=(--cacert '/etc/ca dir/ca.pem')"),
            "{ca}"
        );
        // A relative path is made absolute: the script runs from anywhere.
        let rel = line(TlsOptions {
            cacert: Some("ca.pem".into()),
            insecure: false,
        });
        assert!(rel.contains("--cacert '/"), "{rel}");
    }

    #[test]
    fn states_are_templated_in_their_json_escaped_form() {
        let s = "a\"b\\c|d&e/f\u{e9}";
        let body = json!({"params": {REQUEST_STATE: s, "x": format!("{s}tail")}})
            .to_string()
            .into_bytes();
        let t = String::from_utf8(templated(&body, &[s.to_owned()])).unwrap();
        assert_eq!(
            t,
            r#"{"params":{"requestState":"@@S1@@","x":"@@S1@@tail"}}"#
        );
    }
}
