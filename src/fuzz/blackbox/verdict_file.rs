//! `judge.json`: what a finding's `repro.sh` needs to give its own verdict.
//! The script ends with `elicitkit fuzz --judge DIR --replies OUT`, which
//! reads the finding back from here and judges the replies the script
//! wrote with [`super::rerun::judge_replies`], the function the fuzzer's
//! own re-run uses: exit 1 when the symptom reproduced, 0 when it did not,
//! 2 when it could not be told.
//!
//! Kept: what the judgement reads (the oracle, the case, every logged
//! request byte for byte, whether the run's reply to it was a refusal, the
//! 2025-11-25 call, the endpoint). Not kept: the run's replies and ops.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use super::Finding;
use super::rerun::{REPLIES, judge_replies};
use super::summary::{Reproduced, Verdict};
use crate::client::raw::{RawError, RawRequest};
use crate::fuzz::harness::wire::Logged;
use crate::oracle::Oracle;
use crate::protocol::Generation;

/// The file beside `repro.sh`.
pub const FILE: &str = "judge.json";

/// One logged request, as sent.
#[derive(Serialize, Deserialize)]
struct Request {
    label: String,
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    /// The body, base64 (a fuzzed body need not be UTF-8).
    body: String,
    token: Option<String>,
    /// The run's reply was a refusal (a close on an oversized request).
    refused: bool,
}

/// The finding, as far as judging its replies needs it.
#[derive(Serialize, Deserialize)]
struct Kept {
    oracle: String,
    what: String,
    generation: Generation,
    method: String,
    tool: String,
    seed: u64,
    case: u64,
    log: Vec<Request>,
    legacy_call: Option<(serde_json::Value, String)>,
    mcp_url: String,
    stdio_command: Option<String>,
    principal: String,
    other_principal: Option<String>,
    timeout_secs: f64,
    /// `--trusts-state` named the tool (absent in files written before).
    #[serde(default)]
    trusts_state: bool,
}

/// Writes `dir/judge.json` for `f`.
pub fn write(dir: &Path, f: &Finding) -> std::io::Result<()> {
    let kept = Kept {
        oracle: f.oracle.to_string(),
        what: f.what.clone(),
        generation: f.generation,
        method: f.method.clone(),
        tool: f.tool.clone(),
        seed: f.seed,
        case: f.case,
        log: f
            .log
            .iter()
            .map(|l| Request {
                label: l.request.label.clone(),
                method: l.request.method.to_string(),
                url: l.request.url.clone(),
                headers: l.request.headers.clone(),
                body: STANDARD.encode(&l.request.body),
                token: l.request.token.clone(),
                refused: matches!(l.reply, Err(RawError::Refused(_))),
            })
            .collect(),
        legacy_call: f.legacy_call.clone(),
        mcp_url: f.mcp_url.clone(),
        stdio_command: f.stdio_command.clone(),
        principal: f.principal.clone(),
        other_principal: f.other_principal.clone(),
        timeout_secs: f.timeout_secs,
        trusts_state: f.trusts_state,
    };
    let json = serde_json::to_string(&kept).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(FILE), json)
}

/// Reads the finding back from `dir/judge.json` (`Err`: why not).
fn read(dir: &Path) -> Result<Finding, String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let k: Kept = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a finding: {e}", path.display()))?;
    let oracle = Oracle::ALL
        .into_iter()
        .find(|o| o.to_string() == k.oracle)
        .ok_or_else(|| format!("{}: unknown oracle {:?}", path.display(), k.oracle))?;
    let mut log = Vec::with_capacity(k.log.len());
    for r in k.log {
        let method = reqwest::Method::from_bytes(r.method.as_bytes())
            .map_err(|_| format!("{}: bad method {:?}", path.display(), r.method))?;
        let body = STANDARD
            .decode(&r.body)
            .map_err(|e| format!("{}: bad body: {e}", path.display()))?;
        let mut request = RawRequest::new(r.label, method, r.url).token(r.token.as_deref());
        request.headers = r.headers;
        request.body = body;
        // The run's reply is not kept: judging reads the script's replies,
        // and of the run's only whether it was a refusal.
        let reply = Err(if r.refused {
            RawError::Refused("as in the run".into())
        } else {
            RawError::Transport("the run's reply is not kept".into())
        });
        log.push(Logged {
            request,
            reply,
            panic: None,
        });
    }
    Ok(Finding {
        oracle,
        what: k.what,
        generation: k.generation,
        method: k.method,
        tool: k.tool,
        seed: k.seed,
        case: k.case,
        ops: Vec::new(),
        original_ops: Vec::new(),
        minimised_reproduced: true,
        log,
        streamed: Vec::new(),
        legacy_call: k.legacy_call,
        mcp_url: k.mcp_url,
        stdio_command: k.stdio_command,
        server_command: None,
        principal: k.principal,
        other_principal: k.other_principal,
        timeout_secs: k.timeout_secs,
        trusts_state: k.trusts_state,
    })
}

/// Judges the replies a run of `dir/repro.sh` wrote to `replies` (default
/// `dir/rerun`), as the fuzzer judged the run's.
pub fn judge(dir: &Path, replies: Option<&Path>) -> Verdict {
    let f = match read(dir) {
        Ok(f) => f,
        Err(why) => return Verdict::new(Reproduced::Unknown, why),
    };
    let default = dir.join(REPLIES);
    judge_replies(&f, replies.unwrap_or(&default), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_reads_back_as_judging_needs_it() {
        let url = "http://127.0.0.1:1/mcp";
        let logged = |label: &str, body: &[u8], reply| Logged {
            request: RawRequest::new(label, reqwest::Method::POST, url)
                .header("Content-Type", "application/json")
                .token(Some("alice"))
                .body(body.to_vec()),
            reply,
            panic: None,
        };
        let f = Finding {
            oracle: Oracle::ALL[3],
            what: "w".into(),
            generation: Generation::Legacy,
            method: "tools/call".into(),
            tool: "t".into(),
            seed: 9,
            case: 4,
            ops: Vec::new(),
            original_ops: vec!["x".into()],
            minimised_reproduced: true,
            log: vec![
                logged(
                    "a",
                    b"{\"x\":\"\xff\"}",
                    Err(RawError::Refused("closed".into())),
                ),
                logged("b", b"", Err(RawError::Transport("t".into()))),
            ],
            streamed: Vec::new(),
            legacy_call: Some((serde_json::json!({"id": 1}), "accept".into())),
            mcp_url: url.into(),
            stdio_command: None,
            server_command: None,
            principal: "alice".into(),
            other_principal: Some("bob".into()),
            timeout_secs: 1.5,
            trusts_state: true,
        };
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &f).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back.oracle, f.oracle);
        assert_eq!(back.case, 4);
        assert_eq!(back.legacy_call, f.legacy_call);
        assert_eq!(back.other_principal.as_deref(), Some("bob"));
        assert!(back.trusts_state);
        assert_eq!(back.log.len(), 2);
        for (a, b) in back.log.iter().zip(&f.log) {
            assert_eq!(a.request, b.request);
        }
        assert!(matches!(back.log[0].reply, Err(RawError::Refused(_))));
        assert!(matches!(back.log[1].reply, Err(RawError::Transport(_))));
        std::fs::write(dir.path().join(FILE), "{}").unwrap();
        let v = judge(dir.path(), None);
        assert_eq!(v.reproduced, Reproduced::Unknown);
        assert!(v.detail.contains("not a finding"), "{}", v.detail);
    }
}
