//! Issue 51, as an attacker would go about it: no single client, and no
//! crowd of made-up names (demo auth takes any token), can take the server
//! from everyone else; bodies too costly to parse are refused before they
//! are parsed. Each test asserts that legitimate requests are still
//! answered; each was seen failing before the limit it tests.
#![cfg(feature = "net")]

use crate::support::server::*;
use elicitkit::server::ServerConfig;
use serde_json::{Value, json};

/// A `tools/list` whose params hold `extra` (raw JSON text) under `x`.
fn tools_list_with(extra: &str) -> String {
    let meta = meta(&json!({}));
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{meta},"x":{extra}}}}}"#
    )
}

/// Issue 51 item 5: 88,000 object keys in a body under --max-body are
/// refused with a 400 naming the limit, before they are parsed; so is
/// nesting past 64 levels; a plain body of the same size is served.
/// (Seen failing before: the 88,000-key body was parsed and answered 200.)
#[tokio::test]
async fn a_body_too_costly_to_parse_is_refused_before_it_is_parsed() {
    let s = start(ServerConfig::default()).await;
    let keys: Vec<String> = (0..88_000).map(|i| format!("\"k{i}\":0")).collect();
    let costly = tools_list_with(&format!("{{{}}}", keys.join(",")));
    assert!(costly.len() < 1 << 20, "{} bytes", costly.len());
    let r = post_raw(&s, Some("alice"), "tools/list", None, costly).await;
    assert_eq!((r.status, r.error_code()), (400, -32600), "{}", r.text);
    assert!(r.text.contains("--max-json-members"), "{}", r.text);
    let deep = tools_list_with(&format!(
        "{}{}{}",
        "[".repeat(100),
        "]".repeat(100),
        " ".repeat(5000)
    ));
    let r = post_raw(&s, Some("alice"), "tools/list", None, deep).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("deeper than 64"), "{}", r.text);
    let plain = tools_list_with(&Value::String("x".repeat(900_000)).to_string());
    let r = post_raw(&s, Some("alice"), "tools/list", None, plain).await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    s.server.shutdown().await;
}
