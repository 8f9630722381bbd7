//! Reproducers: each finding's folder holds `repro.sh` (curl, one request
//! per step, the JSON bodies beside it), `finding.json` and the masked
//! exchanges. States the server issued during the run are not baked in:
//! the script captures them from the replies it gets and puts them where
//! the bodies used them (a state changed beyond a prefix stays literal).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::client::raw::{RawReply, Rpc};
use crate::protocol::headers::SESSION_ID;
use crate::protocol::mrtr::REQUEST_STATE;

use super::Finding;

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

fn issued_state(r: &RawReply) -> Option<String> {
    match r.rpc() {
        Rpc::Result(v) => v
            .get(REQUEST_STATE)
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// The shell variable a request's bearer token comes from.
fn token_expr(token: &str, f: &Finding) -> String {
    if token == f.principal {
        "$TOKEN".into()
    } else if Some(token) == f.other_principal.as_deref() {
        "$OTHER_TOKEN".into()
    } else {
        token.into()
    }
}

/// Writes the finding's folder: `repro.sh`, `NN.body` files,
/// `finding.json`, `exchanges.txt`.
pub fn write(dir: &Path, f: &Finding) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut sh = String::new();
    let _ = writeln!(sh, "#!/usr/bin/env bash");
    let _ = writeln!(
        sh,
        "# elicitkit fuzz finding: {} ({} {}, case {} of seed {})",
        f.oracle, f.generation, f.tool, f.case, f.seed
    );
    let _ = writeln!(sh, "# {}", f.what.replace('\n', " "));
    let _ = writeln!(sh, "# ops: {}", f.op_names().join(" "));
    let _ = writeln!(
        sh,
        "# Re-run against a server like the one fuzzed: URL=... ./repro.sh. States the\n# server issues are captured from its replies; the last request shows the finding."
    );
    let _ = writeln!(sh, "set -u\nDIR=$(cd \"$(dirname \"$0\")\" && pwd)");
    let _ = writeln!(sh, "URL=${{URL:-{}}}", f.mcp_url);
    let demo = |t: &str| matches!(t, "alice" | "bob");
    let _ = writeln!(
        sh,
        "TOKEN=${{ELICITKIT_PRINCIPAL:-{}}}",
        if demo(&f.principal) {
            f.principal.as_str()
        } else {
            "?export ELICITKIT_PRINCIPAL (the token of the run's principal)"
        }
    );
    if let Some(o) = &f.other_principal {
        let _ = writeln!(
            sh,
            "OTHER_TOKEN=${{ELICITKIT_OTHER_PRINCIPAL:-{}}}",
            if demo(o) {
                o.as_str()
            } else {
                "?export ELICITKIT_OTHER_PRINCIPAL"
            }
        );
    }
    let _ = writeln!(sh, "OUT=$(mktemp -d)\necho \"replies in $OUT\"\nSID=\n");
    let max_time = f.timeout_secs.ceil() as u64 + 1;
    let mut states: Vec<String> = Vec::new();
    let mut sid: Option<String> = None;
    let mut in_group = false;
    for (i, l) in f.log.iter().enumerate() {
        let n = format!("{:02}", i + 1);
        let concurrent = l.request.label.contains("concurrent copy");
        if in_group && !concurrent {
            let _ = writeln!(sh, "wait\n");
            in_group = false;
        }
        let mut body = l.request.body.clone();
        for (k, s) in states.iter().enumerate() {
            body = replace_bytes(&body, s.as_bytes(), format!("@@S{}@@", k + 1).as_bytes());
        }
        let _ = writeln!(
            sh,
            "echo {}",
            quote(&format!("== {n}: {}", l.request.label))
        );
        let mut cmd = format!("curl -sS -i --max-time {max_time} -X {} ", l.request.method);
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
            cmd.push_str(&format!(
                " -H \"Authorization: Bearer {}\"",
                token_expr(t, f)
            ));
        }
        if body.is_empty() {
            let _ = write!(sh, "{cmd} > \"$OUT/{n}.reply\"");
        } else {
            std::fs::write(dir.join(format!("{n}.body")), &body)?;
            let subst: String = (1..=states.len())
                .map(|k| format!(" -e \"s|@@S{k}@@|$S{k}|g\""))
                .collect();
            let feed = if states.is_empty() {
                format!("cat \"$DIR/{n}.body\"")
            } else {
                format!("sed{subst} \"$DIR/{n}.body\"")
            };
            let _ = write!(sh, "{feed} | {cmd} --data-binary @- > \"$OUT/{n}.reply\"");
        }
        if concurrent {
            let _ = writeln!(sh, " &");
            in_group = true;
            continue;
        }
        let _ = writeln!(
            sh,
            " || echo \"(curl exit $?: no complete reply)\"\ncat \"$OUT/{n}.reply\"; echo"
        );
        if let Ok(r) = &l.reply {
            if let Some(s) = issued_state(r)
                && !states.contains(&s)
            {
                states.push(s);
                let k = states.len();
                let _ = writeln!(
                    sh,
                    "S{k}=$(tr -d '\\r' < \"$OUT/{n}.reply\" | grep -o '\"requestState\":\"[^\"]*\"' | head -1 | sed 's/^\"requestState\":\"//; s/\"$//')"
                );
            }
            if let Some(s) = r.header(SESSION_ID)
                && sid.as_deref() != Some(s)
            {
                sid = Some(s.to_owned());
                let _ = writeln!(
                    sh,
                    "SID=$(tr -d '\\r' < \"$OUT/{n}.reply\" | grep -i '^mcp-session-id:' | head -1 | cut -d' ' -f2)"
                );
            }
        }
        sh.push('\n');
    }
    if in_group {
        let _ = writeln!(
            sh,
            "wait\nfor f in \"$OUT\"/*.reply; do echo \"== $f\"; cat \"$f\"; echo; done"
        );
    }
    if let Some((call, action)) = &f.legacy_call {
        legacy_call(&mut sh, dir, call, action, max_time)?;
    }
    let path = dir.join("repro.sh");
    std::fs::write(&path, sh)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    let mut ex = String::new();
    for l in &f.log {
        let e = l.exchange();
        let _ = writeln!(ex, "--- {}\n{}\n-> {}\n", e.label, e.request, e.response);
    }
    for e in &f.streamed {
        let _ = writeln!(ex, "--- {}\n{}\n-> {}\n", e.label, e.request, e.response);
    }
    std::fs::write(dir.join("exchanges.txt"), ex)?;
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
        "reproduced": f.reproduced,
    });
    std::fs::write(
        dir.join("finding.json"),
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    )
}

/// The 2025-11-25 call: the stream in the background, the answer POSTed
/// when `elicitation/create` shows up on it.
fn legacy_call(
    sh: &mut String,
    dir: &Path,
    call: &Value,
    action: &str,
    max_time: u64,
) -> std::io::Result<()> {
    std::fs::write(dir.join("call.body"), call.to_string())?;
    let headers = "-H 'Accept: application/json, text/event-stream' -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2025-11-25' -H \"Mcp-Session-Id: $SID\" -H \"Authorization: Bearer $TOKEN\"";
    let _ = writeln!(
        sh,
        "echo '== tools/call (stream), answered with {action}'\n\
         curl -sS -N -i --max-time {max_time} -X POST \"$URL\" {headers} --data-binary @\"$DIR/call.body\" > \"$OUT/stream.txt\" &\n\
         CALL=$!\n\
         for _ in $(seq 1 50); do grep -q 'elicitation/create' \"$OUT/stream.txt\" 2>/dev/null && break; sleep 0.1; done\n\
         EID=$(grep 'elicitation/create' \"$OUT/stream.txt\" | head -1 | grep -o '\"id\":\\(\"[^\"]*\"\\|[0-9]*\\)' | head -1 | cut -d: -f2)\n\
         printf '{{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{{\"action\":\"{action}\"}}}}' \"$EID\" | curl -sS -i --max-time {max_time} -X POST \"$URL\" {headers} --data-binary @-\n\
         echo; wait $CALL || echo \"(the call's stream: curl exit $?)\"\n\
         cat \"$OUT/stream.txt\"; echo"
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
}
