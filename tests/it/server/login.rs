//! Flow-page sign-in and the public surface around it: `POST /login` needs
//! this server's Origin and the form's CSRF token, redirects only to the
//! signer's own pending flow, sets a cookie holding a random session id
//! (`Secure` over https); `/stats` needs credentials; flow links name the
//! public URL.
#![cfg(feature = "net")]

use crate::support::server::*;
use elicitkit::server::{PublicUrl, ServerConfig};
use serde_json::json;

async fn flow_path(s: &Srv, user: &str) -> String {
    let r = call(s, user, 1, "connect_billing", json!({}), &caps_both()).await;
    let url = r.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    url.trim_start_matches(&s.server.base_url()).to_owned()
}

/// The sign-in form's CSRF cookie (`name=value`) and field value.
async fn login_form(s: &Srv, next: &str) -> (String, String) {
    let base = s.server.base_url();
    let r = s.http.get(format!("{base}{next}")).send().await.unwrap();
    let cookie = set_cookie(r.headers(), "ek_login").unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    (cookie, csrf_of(&r.text().await.unwrap()))
}

/// `POST /login` with the given pieces; status, `Location`, `Set-Cookie`s.
async fn post_login(
    s: &Srv,
    origin: Option<&str>,
    cookie: Option<&str>,
    fields: &[(&str, &str)],
) -> (u16, Option<String>, Vec<String>) {
    let mut rb = s.http.post(format!("{}/login", s.server.base_url()));
    if let Some(o) = origin {
        rb = rb.header("origin", o);
    }
    if let Some(c) = cookie {
        rb = rb.header("cookie", c);
    }
    let r = rb.form(fields).send().await.unwrap();
    let loc = r
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    let cookies = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    (r.status().as_u16(), loc, cookies)
}

#[tokio::test]
async fn sign_in_needs_the_own_origin_and_the_forms_csrf_token() {
    let s = start(ServerConfig::default()).await;
    let base = s.server.base_url();
    let next = flow_path(&s, "bob").await;
    let (cookie, csrf) = login_form(&s, &next).await;
    assert_eq!(csrf.len(), 43);
    let ok = [
        ("token", "bob"),
        ("csrf", csrf.as_str()),
        ("next", next.as_str()),
    ];
    // No Origin (not a browser's form post): refused.
    assert_eq!(post_login(&s, None, Some(&cookie), &ok).await.0, 403);
    // A foreign Origin (another site's form): refused.
    let evil = post_login(&s, Some("http://evil.example"), Some(&cookie), &ok).await;
    assert_eq!(evil.0, 403);
    // The token without its cookie (a cross-site post carries none): refused.
    assert_eq!(post_login(&s, Some(&base), None, &ok).await.0, 403);
    // A made-up token with a made-up cookie that do not match: refused.
    let forged = [("token", "bob"), ("csrf", "x"), ("next", next.as_str())];
    assert_eq!(
        post_login(&s, Some(&base), Some(&cookie), &forged).await.0,
        403
    );
    // Everything in place: signed in and sent to the flow.
    let (code, loc, cookies) = post_login(&s, Some(&base), Some(&cookie), &ok).await;
    assert_eq!((code, loc.as_deref()), (303, Some(next.as_str())));
    let session = cookies
        .iter()
        .find(|c| c.starts_with("ek_session="))
        .expect("a session cookie");
    let id = session["ek_session=".len()..].split(';').next().unwrap();
    assert_eq!(id.len(), 43, "a random id: {session}");
    assert!(
        !session.contains("bob"),
        "the cookie holds no token: {session}"
    );
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(session.contains(attr), "{session}");
    }
    assert!(!session.contains("Secure"), "plain http: {session}");
    assert!(
        cookies
            .iter()
            .any(|c| c.starts_with("ek_login=;") && c.contains("Max-Age=0")),
        "the CSRF cookie is cleared: {cookies:?}"
    );
    // The session id opens the page; a token in its place opens nothing.
    let page = |c: String| {
        let url = format!("{base}{next}");
        let http = s.http.clone();
        async move {
            let r = http.get(url).header("cookie", c).send().await.unwrap();
            r.status().as_u16()
        }
    };
    assert_eq!(page(format!("ek_session={id}")).await, 200);
    assert_eq!(page("ek_session=bob".into()).await, 401);
    assert_eq!(page("ek_auth=bob".into()).await, 401);
    // A wrong token shows the form again.
    let (cookie, csrf) = login_form(&s, &next).await;
    let wrong = [
        ("token", "has space"),
        ("csrf", csrf.as_str()),
        ("next", next.as_str()),
    ];
    assert_eq!(
        post_login(&s, Some(&base), Some(&cookie), &wrong).await.0,
        401
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn next_leads_only_to_the_signers_own_pending_flow() {
    let s = start(ServerConfig::default()).await;
    let base = s.server.base_url();
    let bobs = flow_path(&s, "bob").await;
    let alices = flow_path(&s, "alice").await;
    let done = to_final(&s, "alice", "connect_billing").await;
    assert_eq!(done.send(&s, "alice", 9).await.result_type(), "complete");
    let mut tried = 0;
    for next in [
        bobs.as_str(),                  // the attacker's flow
        "https://evil.example/flow/x",  // off-site
        "//evil.example/",              // scheme-relative
        "/flow/AAAAAAAAAAAAAAAAAAAAAA", // no such flow
        "/stats",                       // not a flow
    ] {
        let (cookie, csrf) = login_form(&s, &alices).await;
        let f = [("token", "alice"), ("csrf", csrf.as_str()), ("next", next)];
        let (code, loc, cookies) = post_login(&s, Some(&base), Some(&cookie), &f).await;
        assert_eq!((code, loc), (200, None), "{next}");
        assert!(
            cookies.iter().any(|c| c.starts_with("ek_session=")),
            "still signed in"
        );
        tried += 1;
    }
    assert_eq!(tried, 5);
    // Alice's own pending flow is where she is sent.
    let (cookie, csrf) = login_form(&s, &alices).await;
    let f = [
        ("token", "alice"),
        ("csrf", csrf.as_str()),
        ("next", alices.as_str()),
    ];
    let (code, loc, _) = post_login(&s, Some(&base), Some(&cookie), &f).await;
    assert_eq!((code, loc.as_deref()), (303, Some(alices.as_str())));
    s.server.shutdown().await;
}

#[tokio::test]
async fn stats_needs_credentials() {
    let s = start(ServerConfig::default()).await;
    let url = format!("{}/stats", s.server.base_url());
    let r = s.http.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let r = s.http.get(&url).bearer_auth("alice").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A signed-in browser may read it too.
    let next = flow_path(&s, "carol").await;
    let cookie = sign_in(&s, "carol", &next).await;
    let r = s
        .http
        .get(&url)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    s.server.shutdown().await;
}

#[tokio::test]
async fn a_public_https_url_names_the_links_and_makes_cookies_secure() {
    let s = start(ServerConfig {
        public_url: Some(PublicUrl::parse("https://mcp.example.test").unwrap()),
        ..ServerConfig::default()
    })
    .await;
    let r = call(&s, "alice", 1, "connect_billing", json!({}), &caps_both()).await;
    let url = r.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.starts_with("https://mcp.example.test/flow/"), "{url}");
    // Requests as a browser behind the proxy sends them: the public Host
    // and Origin are allowed.
    let path = url
        .trim_start_matches("https://mcp.example.test")
        .to_owned();
    let local = format!("{}{path}", s.server.base_url());
    let form = s
        .http
        .get(&local)
        .header("host", "mcp.example.test")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status().as_u16(), 401);
    let login = set_cookie(form.headers(), "__Host-ek_login").expect("a __Host- cookie");
    assert!(login.contains("; Secure"), "{login}");
    let csrf = csrf_of(&form.text().await.unwrap());
    let r = s
        .http
        .post(format!("{}/login", s.server.base_url()))
        .header("host", "mcp.example.test")
        .header("origin", "https://mcp.example.test")
        .header("cookie", format!("__Host-ek_login={csrf}"))
        .form(&[
            ("token", "alice"),
            ("csrf", csrf.as_str()),
            ("next", path.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    let session = set_cookie(r.headers(), "__Host-ek_session").expect("session cookie");
    assert!(
        session.contains("; Secure") && session.contains("HttpOnly"),
        "{session}"
    );
    s.server.shutdown().await;
}
