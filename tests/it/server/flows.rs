//! URL-mode flows (`connect_billing`) end to end: the flow page contract,
//! the "accept before submit" trap, exactly-once completion under 100
//! concurrent duplicates, and a restart in the middle with SQLite.
#![cfg(feature = "net")]

use crate::support::server::*;
use elicitkit::server::ServerConfig;
use elicitkit::state::KeyRing;
use serde_json::json;

async fn start_flow(s: &Srv, user: &str) -> (String, String) {
    let r = call(s, user, 1, "connect_billing", json!({}), &caps_both()).await;
    assert_eq!(r.result_type(), "input_required", "{}", r.text);
    let p = &r.result()["inputRequests"]["billing"]["params"];
    assert_eq!(p["mode"], "url");
    assert!(p["message"].is_string());
    (p["url"].as_str().unwrap().to_owned(), r.state())
}

async fn get_page(s: &Srv, url: &str, user: Option<&str>) -> (u16, String) {
    let mut rb = s.http.get(url);
    if let Some(u) = user {
        rb = rb.bearer_auth(u);
    }
    let r = rb.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn submit(s: &Srv, url: &str, user: &str, csrf: &str, key: &str) -> u16 {
    s.http
        .post(url)
        .bearer_auth(user)
        .form(&[("csrf", csrf), ("api_key", key)])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn billing_flow_page_contract_and_masked_result() {
    let s = start(ServerConfig::default()).await;
    let (url, state) = start_flow(&s, "alice").await;
    assert!(url.starts_with(&format!("{}/flow/", s.server.base_url())));
    let accept = json!({"billing":{"action":"accept"}});
    // accept before the page was submitted → asked again, same flow
    let early = retry(
        &s,
        "alice",
        2,
        "connect_billing",
        json!({}),
        accept.clone(),
        &state,
        &caps_both(),
    )
    .await;
    assert_eq!(early.result_type(), "input_required");
    assert_eq!(
        early.result()["inputRequests"]["billing"]["params"]["url"],
        url.as_str()
    );
    let state2 = early.state();
    assert_ne!(state2, state);
    // no auth → 401 login form; another user → 403 revealing nothing
    let (code, login_page) = get_page(&s, &url, None).await;
    assert_eq!(code, 401);
    assert!(login_page.contains("action=\"/login\"") && !login_page.contains("api_key"));
    let (code, page) = get_page(&s, &url, Some("mallory")).await;
    assert_eq!(code, 403);
    assert!(!page.contains("csrf"));
    // the owner sees exactly one form with csrf and a password field
    let (code, page) = get_page(&s, &url, Some("alice")).await;
    assert_eq!(code, 200);
    assert_eq!(page.matches("<form").count(), 1);
    let path = url.trim_start_matches(&s.server.base_url()).to_owned();
    assert!(page.contains(&format!("<form method=\"post\" action=\"{path}\">")));
    assert!(page.contains("<input type=\"password\" name=\"api_key\""));
    assert!(!page.contains("<script"));
    let csrf = csrf_of(&page);
    assert!(csrf.len() >= 16);
    assert!(
        !login_page.contains(&csrf),
        "the sign-in form reveals nothing of the flow"
    );
    // bad CSRF → 403; another principal posting → 403
    assert_eq!(
        submit(&s, &url, "alice", "wrong", "sk-live-aaaaaaaaaaaa9f2c").await,
        403
    );
    assert_eq!(
        submit(&s, &url, "mallory", &csrf, "sk-live-aaaaaaaaaaaa9f2c").await,
        403
    );
    assert_eq!(
        submit(&s, &url, "alice", &csrf, "sk-live-aaaaaaaaaaaa9f2c").await,
        200
    );
    assert_eq!(
        submit(&s, &url, "alice", &csrf, "sk-live-bbbbbbbbbbbb0000").await,
        409
    );
    // now the retry completes with the masked key only
    let done = retry(
        &s,
        "alice",
        3,
        "connect_billing",
        json!({}),
        accept.clone(),
        &state2,
        &caps_both(),
    )
    .await;
    assert_eq!(done.result_type(), "complete", "{}", done.text);
    assert!(done.text_content().contains("sk-…9f2c"), "{}", done.text);
    assert!(!done.text.contains("aaaaaaaa"));
    // completing twice is refused as a replay
    let again = retry(
        &s,
        "alice",
        4,
        "connect_billing",
        json!({}),
        accept,
        &state2,
        &caps_both(),
    )
    .await;
    assert_eq!(again.reason(), "replayed");
    assert_eq!(stats(&s).await["side_effects"]["billing_connected"], 1);
    s.server.shutdown().await;
}

#[tokio::test]
async fn login_cookie_opens_the_page_and_decline_cancels_the_flow() {
    let s = start(ServerConfig::default()).await;
    let (url, state) = start_flow(&s, "bob").await;
    let path = url.trim_start_matches(&s.server.base_url()).to_owned();
    let cookie = sign_in(&s, "bob", &path).await;
    let page = s
        .http
        .get(&url)
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    // decline → tool error, page gone
    let r = retry(
        &s,
        "bob",
        2,
        "connect_billing",
        json!({}),
        json!({"billing":{"action":"decline"}}),
        &state,
        &caps_both(),
    )
    .await;
    assert_eq!(r.result_type(), "complete");
    assert_eq!(r.result()["isError"], true);
    let (code, _) = get_page(&s, &url, Some("bob")).await;
    assert_eq!(code, 410);
    s.server.shutdown().await;
}

#[tokio::test]
async fn hundred_concurrent_duplicates_complete_once() {
    let s = start(ServerConfig::default()).await;
    let (url, state) = start_flow(&s, "alice").await;
    let (_, page) = get_page(&s, &url, Some("alice")).await;
    let csrf = csrf_of(&page);
    let posts = (0..100).map(|_| submit(&s, &url, "alice", &csrf, "sk-live-cccccccccccc1234"));
    let codes = futures::future::join_all(posts).await;
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 409).count(), 99);
    let accept = json!({"billing":{"action":"accept"}});
    let caps = caps_both();
    let retries = (0..100).map(|i| {
        retry(
            &s,
            "alice",
            10 + i,
            "connect_billing",
            json!({}),
            accept.clone(),
            &state,
            &caps,
        )
    });
    let replies = futures::future::join_all(retries).await;
    let complete = replies
        .iter()
        .filter(|r| r.result_type() == "complete")
        .count();
    let replayed = replies.iter().filter(|r| r.reason() == "replayed").count();
    assert_eq!((complete, replayed), (1, 99));
    assert!(replies.iter().all(|r| r.status < 500));
    assert_eq!(stats(&s).await["side_effects"]["billing_connected"], 1);
    s.server.shutdown().await;
}

#[tokio::test]
async fn url_flow_survives_a_restart_with_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flows.db");
    let keys = KeyRing::generate();
    let cfg = || ServerConfig {
        store: format!("sqlite:{}", db.display()),
        keys: Some(keys.clone()),
        ..ServerConfig::default()
    };
    let s1 = start(cfg()).await;
    let (url, state) = start_flow(&s1, "alice").await;
    let path = url.trim_start_matches(&s1.server.base_url()).to_owned();
    s1.server.shutdown().await;

    let s2 = start(cfg()).await;
    let url2 = format!("{}{}", s2.server.base_url(), path);
    let (code, page) = get_page(&s2, &url2, Some("alice")).await;
    assert_eq!(code, 200, "{page}");
    assert_eq!(
        submit(
            &s2,
            &url2,
            "alice",
            &csrf_of(&page),
            "sk-live-dddddddddddd7777"
        )
        .await,
        200
    );
    let done = retry(
        &s2,
        "alice",
        2,
        "connect_billing",
        json!({}),
        json!({"billing":{"action":"accept"}}),
        &state,
        &caps_both(),
    )
    .await;
    assert_eq!(done.result_type(), "complete", "{}", done.text);
    assert!(done.text_content().contains("…7777"));
    s2.server.shutdown().await;
    // the single-use claim is durable too
    let s3 = start(cfg()).await;
    let again = retry(
        &s3,
        "alice",
        3,
        "connect_billing",
        json!({}),
        json!({"billing":{"action":"accept"}}),
        &state,
        &caps_both(),
    )
    .await;
    assert_eq!(again.reason(), "replayed", "{}", again.text);
    s3.server.shutdown().await;
}

/// Issue 28 item 5: every flow-page response (the page, the sign-in form,
/// the page after a submit) sends no `Referer` onwards (the flow id in the
/// URL is a capability) and forbids MIME sniffing.
#[tokio::test]
async fn flow_pages_send_no_referrer_and_forbid_sniffing() {
    let s = start(ServerConfig::default()).await;
    let (url, _) = start_flow(&s, "alice").await;
    let page = s.http.get(&url).bearer_auth("alice").send().await.unwrap();
    let login = s.http.get(&url).send().await.unwrap();
    assert_eq!(
        (page.status().as_u16(), login.status().as_u16()),
        (200, 401)
    );
    check_page_headers("the page", page.headers());
    let csrf = csrf_of(&page.text().await.unwrap());
    let posted = s
        .http
        .post(&url)
        .bearer_auth("alice")
        .form(&[
            ("csrf", csrf.as_str()),
            ("api_key", "sk-test-0123456789abcd"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 200);
    for (what, r) in [("sign-in form", &login), ("submitted page", &posted)] {
        check_page_headers(what, r.headers());
    }
    s.server.shutdown().await;
}

fn check_page_headers(what: &str, h: &reqwest::header::HeaderMap) {
    assert_eq!(h["referrer-policy"], "no-referrer", "{what}");
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
}
