//! The URL-mode flow pages: `GET /flow/{id}` shows a plain HTML form (no
//! JavaScript) with a CSRF token and an API-key field; `POST /flow/{id}`
//! completes the pending record exactly once, storing only the masked key;
//! `POST /login` signs a browser without a bearer header in.
//!
//! Signing in: the login form carries a CSRF token that must match its
//! cookie, and `POST /login` must come with this server's own `Origin` (a
//! browser always sends one on a form POST), so no other site can sign a
//! victim in as someone else (login CSRF). The cookie it sets holds a
//! random session id ([`super::browser_session`]), never the token, and
//! is `Secure` when the public URL is https. It then redirects to `next`
//! only when that names a pending flow of the principal just signed in.
//!
//! What a form would be refused for whatever it says is refused from the
//! request head, before any of its body is read: a declared length over
//! 16 KiB (413); for a sign-in, no `Origin` or no CSRF cookie (403); for a
//! flow page, a flow that is unknown, another principal's or settled.
//!
//! Statuses: no principal → 401 (login form); another principal's flow →
//! 403 (reveals nothing); unknown flow → 404; already submitted → 409;
//! expired or cancelled → 410; bad CSRF token or missing Origin → 403.

use crate::report::format::escape_html;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::json;

use std::time::Duration;

use subtle::ConstantTimeEq as _;

use crate::store::{Completion, Mode, Outcome, Record, Status, StoreError, mask_secret};

use super::app::App;
use super::auth::cookie;
use super::body::{
    BodyError, Received, body_timed_out, declared_length, read_body, retry_after_secs,
};
use super::browser_session::{BROWSER_SESSION_TTL, LOGIN_CSRF_TTL, plausible_token, random_token};
use super::flaw::Flaw;
use super::log_gate::gated;
use super::log_text::LogText;
use super::reply;
use super::timing::Timing;

const MAX_FORM_BYTES: usize = 16 * 1024;
const MAX_KEY_LEN: usize = 512;

fn html(status: StatusCode, title: &str, body: &str, timing: &Timing) -> Response {
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title></head>\n<body>\n<h1>{t}</h1>\n{body}\n</body></html>\n",
        t = escape_html(title)
    );
    let mut r = Response::new(Body::from(page));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'; form-action 'self'"),
    );
    page_headers(h);
    reply::with_timing(r, timing)
}

/// Headers every flow-page response carries, redirects included: no
/// `Referer` (the flow id in the path is a capability) and no MIME sniffing.
fn page_headers(h: &mut HeaderMap) {
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// The sign-in form (401), with a CSRF token in a hidden field and its
/// cookie (an existing, well-formed one is reused so two open tabs agree).
fn login_page(app: &App, headers: &HeaderMap, next: &str, note: &str, timing: &Timing) -> Response {
    let names = app.cookies;
    let csrf = cookie(headers, names.login_csrf)
        .filter(|t| plausible_token(t))
        .map_or_else(random_token, str::to_owned);
    let body = format!(
        "<p>{}</p>\n<form method=\"post\" action=\"/login\">\n\
         <input type=\"hidden\" name=\"next\" value=\"{}\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">\n\
         <label>Access token <input type=\"password\" name=\"token\" autocomplete=\"off\"></label>\n\
         <button type=\"submit\">Sign in</button>\n</form>",
        escape_html(note),
        escape_html(next),
        escape_html(&csrf)
    );
    let mut r = html(StatusCode::UNAUTHORIZED, "Sign in", &body, timing);
    let set = names.set(names.login_csrf, &csrf, LOGIN_CSRF_TTL);
    if let Ok(v) = HeaderValue::from_str(&set) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// The principal of a browser request: bearer header, signed-in browser
/// session, or the anonymous principal when it carries neither.
fn browser_principal(app: &App, headers: &HeaderMap) -> Option<String> {
    app.principal_of(headers, true)
}

/// Loads the flow and checks it may be shown to `principal`.
async fn load(app: &App, id: &str, principal: &str, timing: &Timing) -> Result<Record, Response> {
    let rec = match app.record(id).await {
        Ok(Some(r)) if r.mode == Mode::Url => r,
        Ok(_) => {
            return Err(html(
                StatusCode::NOT_FOUND,
                "Not found",
                "<p>No such page.</p>",
                timing,
            ));
        }
        Err(e) => {
            tracing::error!(error = %e, "store failure on flow page");
            return Err(html(
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "<p>Try again later.</p>",
                timing,
            ));
        }
    };
    if rec.principal != principal && !app.flaw(Flaw::IgnorePrincipal) {
        gated!(info, "flow page refused to another principal");
        return Err(html(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "<p>You are not allowed to open this page.</p>",
            timing,
        ));
    }
    match rec.status {
        Status::Pending => Ok(rec),
        Status::Completed => Err(done_already(timing)),
        _ => Err(html(
            StatusCode::GONE,
            "Expired",
            "<p>This request expired or was cancelled. Start again from your app.</p>",
            timing,
        )),
    }
}

fn done_already(timing: &Timing) -> Response {
    html(
        StatusCode::CONFLICT,
        "Already submitted",
        "<p>This page was already submitted. You can return to your app.</p>",
        timing,
    )
}

/// `GET /flow/{id}`.
pub async fn page(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let timing = Timing::start();
    let next = format!("/flow/{id}");
    let Some(principal) = browser_principal(&app, &headers) else {
        return login_page(&app, &headers, &next, "Sign in to continue.", &timing);
    };
    let rec = match load(&app, &id, &principal, &timing).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let csrf = rec.csrf_token.as_deref().unwrap_or("");
    let code = if app.flaw(Flaw::LeakVerificationCode) {
        "<label>Verification code <input type=\"password\" name=\"code\" \
         inputmode=\"numeric\" pattern=\"[0-9]{6}\" required></label>\n"
    } else {
        ""
    };
    let body = format!(
        "<p>Enter your payment-provider API key. It is sent to this server only; \
         your MCP client and its model never see it.</p>\n\
         <form method=\"post\" action=\"/flow/{id}\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <label>API key <input type=\"password\" name=\"api_key\" autocomplete=\"off\" required></label>\n\
         <label>Billing contact (optional) <input type=\"text\" name=\"contact\" maxlength=\"128\"></label>\n\
         {code}<button type=\"submit\">Connect</button>\n</form>",
        id = escape_html(&rec.id),
        csrf = escape_html(csrf)
    );
    html(StatusCode::OK, "Connect billing", &body, &timing)
}

fn form_fields(body: &[u8], names: &[&str]) -> Vec<Option<String>> {
    let mut out = vec![None; names.len()];
    for (k, v) in url::form_urlencoded::parse(body) {
        if let Some(i) = names.iter().position(|n| *n == k) {
            out[i].get_or_insert_with(|| v.into_owned());
        }
    }
    out
}

/// 413 for a form whose declared `Content-Length` is beyond
/// [`MAX_FORM_BYTES`], from its head (a chunked one is cut off there as
/// it arrives).
fn too_large_from_head(headers: &HeaderMap, timing: &Timing) -> Option<Response> {
    declared_length(headers)
        .is_some_and(|n| n > MAX_FORM_BYTES)
        .then(|| too_large_form(timing))
}

fn too_large_form(timing: &Timing) -> Response {
    html(
        StatusCode::PAYLOAD_TOO_LARGE,
        "Too large",
        "<p>The form is too large.</p>",
        timing,
    )
}

/// The form body, held against `principal`'s share of the body budget
/// (`None`: a sign-in, server-wide only), or the response that says why
/// there is none.
async fn read_form<'a>(
    app: &'a App,
    headers: &HeaderMap,
    body: Body,
    principal: Option<&str>,
    timing: &Timing,
) -> Result<Received<'a>, Response> {
    let declared = declared_length(headers);
    match read_body(app, body, MAX_FORM_BYTES, principal, declared).await {
        Ok(b) => Ok(b),
        Err(BodyError::TimedOut) => Err(body_timed_out()),
        Err(BodyError::TooLarge) => Err(too_large_form(timing)),
        Err(BodyError::OverBudget(wait)) => {
            let mut r = html(
                StatusCode::SERVICE_UNAVAILABLE,
                "Busy",
                "<p>The server is busy; try again in a moment.</p>",
                timing,
            );
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(wait)),
            );
            Err(r)
        }
    }
}

/// `POST /flow/{id}`.
pub async fn submit(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let timing = Timing::start();
    let Some(principal) = browser_principal(&app, &headers) else {
        let next = format!("/flow/{id}");
        return login_page(&app, &headers, &next, "Sign in to continue.", &timing);
    };
    // Everything refused whatever the form says is refused from the head,
    // before a byte of the body is read: too large, no such flow, another
    // principal's, already settled.
    if let Some(r) = too_large_from_head(&headers, &timing) {
        return r;
    }
    let rec = match load(&app, &id, &principal, &timing).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let bytes = match read_form(&app, &headers, body, Some(&principal), &timing).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let mut fields = form_fields(&bytes, &["csrf", "api_key", "contact", "code"]).into_iter();
    let (csrf, key, contact, code) = (
        fields.next().flatten(),
        fields.next().flatten(),
        fields.next().flatten(),
        fields.next().flatten(),
    );
    if !csrf.as_deref().is_some_and(|c| rec.csrf_matches(c)) {
        gated!(info, "flow page submit with a bad CSRF token");
        return html(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "<p>The form expired; reload the page.</p>",
            &timing,
        );
    }
    let key = key.unwrap_or_default();
    let key = key.trim();
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return html(
            StatusCode::BAD_REQUEST,
            "Missing key",
            "<p>Enter an API key (at most 512 characters).</p>",
            &timing,
        );
    }
    // Only the masked key is kept, except under the flaws that need the key
    // itself later (to leak it to the client or seal it into a state).
    // The optional contact name is kept only under the flaw that seals it.
    let mut kept = json!({"masked": mask_secret(key)});
    if app.flaw(Flaw::LeakSecret) || app.flaw(Flaw::SecretInState) {
        kept["key"] = key.into();
    }
    if app.flaw(Flaw::TypedInState) {
        let contact: String = contact.unwrap_or_default().chars().take(128).collect();
        kept["contact"] = contact.into();
    }
    if app.flaw(Flaw::LeakVerificationCode) {
        kept["code"] = code
            .unwrap_or_default()
            .chars()
            .take(16)
            .collect::<String>()
            .into();
    }
    let outcome = Outcome::Completed(kept);
    let owner = rec.principal.clone();
    let (rid, now) = (rec.id.clone(), app.now_ms());
    let res = app
        .store_call(move |s| s.complete(&rid, &owner, outcome, now))
        .await;
    match res {
        Ok(Completion::Applied(_)) => {
            gated!(info, "URL flow completed");
            app.flow_settled(&rec.id);
            html(
                StatusCode::OK,
                "Connected",
                "<p>Billing is connected. You can return to your app.</p>",
                &timing,
            )
        }
        Ok(Completion::AlreadyDone(_)) | Err(StoreError::IllegalTransition { .. }) => {
            done_already(&timing)
        }
        Err(StoreError::Expired) => html(
            StatusCode::GONE,
            "Expired",
            "<p>This request expired.</p>",
            &timing,
        ),
        Err(StoreError::NotFound) => html(
            StatusCode::NOT_FOUND,
            "Not found",
            "<p>No such page.</p>",
            &timing,
        ),
        Err(StoreError::WrongPrincipal) => html(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "<p>You are not allowed to open this page.</p>",
            &timing,
        ),
        Err(e) => {
            tracing::error!(error = %e, "store failure on flow submit");
            html(
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "<p>Try again later.</p>",
                &timing,
            )
        }
    }
}

/// The flow `next` names, when it is a pending URL flow of `principal`:
/// the only place a sign-in redirects to.
async fn own_pending_flow(app: &App, next: Option<&str>, principal: &str) -> Option<String> {
    let id = next?.strip_prefix("/flow/")?;
    if !crate::store::is_plausible_id(id) {
        return None;
    }
    match app.record(id).await {
        Ok(Some(r))
            if r.mode == Mode::Url && r.status == Status::Pending && r.principal == principal =>
        {
            Some(format!("/flow/{id}"))
        }
        _ => None,
    }
}

fn forbidden(why: &str, timing: &Timing) -> Response {
    html(
        StatusCode::FORBIDDEN,
        "Forbidden",
        &format!("<p>{}</p>", escape_html(why)),
        timing,
    )
}

/// `POST /login`: `token`, `csrf` and `next` form fields.
pub async fn login(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let timing = Timing::start();
    // Checked from the head, before a byte of the body is read (a caller
    // without credentials must not hold memory or a connection for a body
    // that would be refused anyway). The Origin guard already refused a
    // foreign Origin; a browser's form POST always carries one, so none at
    // all is not a browser's sign-in; nor is one without the form's CSRF
    // cookie.
    if !headers.contains_key(header::ORIGIN) {
        gated!(info, "sign-in refused: no Origin header");
        return forbidden("Sign in from the sign-in page.", &timing);
    }
    let Some(expected) = cookie(&headers, app.cookies.login_csrf).filter(|c| plausible_token(c))
    else {
        gated!(info, "sign-in refused: no CSRF cookie");
        return forbidden("The sign-in form expired; reload the page.", &timing);
    };
    if let Some(r) = too_large_from_head(&headers, &timing) {
        return r;
    }
    let bytes = match read_form(&app, &headers, body, None, &timing).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let mut fields = form_fields(&bytes, &["token", "csrf", "next"]).into_iter();
    let (token, csrf, next) = (
        fields.next().flatten().unwrap_or_default(),
        fields.next().flatten().unwrap_or_default(),
        fields.next().flatten(),
    );
    let csrf_ok = bool::from(expected.as_bytes().ct_eq(csrf.as_bytes()));
    if !csrf_ok {
        gated!(
            info,
            "sign-in refused: the CSRF token does not match its cookie"
        );
        return forbidden("The sign-in form expired; reload the page.", &timing);
    }
    let shown_next = next
        .as_deref()
        .filter(|n| n.starts_with("/flow/"))
        .unwrap_or("");
    let Some(principal) = app.cfg.principals.resolve(&token) else {
        gated!(info, "sign-in failed: unknown token");
        return login_page(
            &app,
            &headers,
            shown_next,
            "Unknown token; try again.",
            &timing,
        );
    };
    let names = app.cookies;
    let session = app.browser.sign_in(&principal);
    gated!(
        info,
        principal = %LogText(&principal),
        "browser signed in for the flow pages"
    );
    let mut r = match own_pending_flow(&app, next.as_deref(), &principal).await {
        Some(path) => {
            let mut r = reply::with_timing(reply::status(StatusCode::SEE_OTHER), &timing);
            if let Ok(loc) = HeaderValue::from_str(&path) {
                r.headers_mut().insert(header::LOCATION, loc);
            }
            page_headers(r.headers_mut());
            r
        }
        None => html(
            StatusCode::OK,
            "Signed in",
            "<p>You are signed in. Open the link your app showed you again.</p>",
            &timing,
        ),
    };
    for set in [
        names.set(names.session, &session, BROWSER_SESSION_TTL),
        names.set(names.login_csrf, "", Duration::ZERO),
    ] {
        if let Ok(v) = HeaderValue::from_str(&set) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_take_first_values() {
        let f = form_fields(
            b"csrf=a%2Bb&api_key=sk-1&csrf=zzz",
            &["csrf", "api_key", "x"],
        );
        assert_eq!(f, vec![Some("a+b".into()), Some("sk-1".into()), None]);
    }
}
