//! The HTTP surface: routes, the `Origin`/`Host` guard in front of all of
//! them, body limits, and the per-request choice between the two
//! generations.
//!
//! A request is 2025-11-25 ("legacy") when it is `initialize` (without a
//! 2026-07-28 `MCP-Protocol-Version`), says
//! `MCP-Protocol-Version: 2025-11-25`, or carries an `MCP-Session-Id` without
//! any `MCP-Protocol-Version`; everything else is 2026-07-28 (which ignores
//! `Mcp-Session-Id`, as the 2026-07-28 transport requires).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt as _;
use serde_json::json;

use crate::protocol::codes;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::{Message, message_from_value, parse_json_capped};
use crate::protocol::legacy::METHOD_INITIALIZE;
use crate::protocol::version::{LEGACY, MODERN};

use super::app::App;
use super::body::{BodyError, body_timed_out, declared_length, over_budget, read_body, too_large};
use super::conn_phase::Parking;
use super::flaw::Flaw;
use super::log_gate::gated;
use super::log_text::LogText;
use super::origin::Refusal;
use super::reply::{self, RpcError};
use super::timing::Timing;
use super::{flow, legacy, modern};

/// The router of the reference server.
pub fn router(app: Arc<App>) -> Router {
    let split = app.flaw(Flaw::NoNodelay);
    let router = Router::new()
        .route("/mcp", post(mcp_post).get(mcp_get).delete(mcp_delete))
        .route("/flow/{id}", get(flow::page).post(flow::submit))
        .route("/login", post(flow::login))
        .route("/stats", get(stats))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(middleware::from_fn_with_state(app.clone(), guard_origin))
        .layer(middleware::from_fn_with_state(app.clone(), name_instance));
    let router = if split {
        router.layer(middleware::from_fn(split_writes))
    } else {
        router
    };
    router.with_state(app)
}

/// Names this instance in every response (see
/// [`super::config::INSTANCE_HEADER`]).
async fn name_instance(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    resp.headers_mut().insert(
        header::HeaderName::from_static(super::config::INSTANCE_HEADER),
        app.instance.clone(),
    );
    resp
}

/// Records who is calling in the request's span (see `accept`), so every
/// event of the request names its principal next to its peer: the
/// principal's name (escaped), `-` without credentials, `?` for
/// credentials that name nobody. Browser routes count the flow cookie.
fn identify(app: &App, req: &Request) {
    let headers = req.headers();
    let browser = !req.uri().path().starts_with("/mcp");
    let who = match app.principal_of(headers, browser) {
        Some(p) => LogText(&p).to_string(),
        None if headers.contains_key(header::AUTHORIZATION)
            || (browser && headers.contains_key(header::COOKIE)) =>
        {
            "?".to_owned()
        }
        None => "-".to_owned(),
    };
    tracing::Span::current().record("principal", tracing::field::display(who));
}

/// Headers that decide who calls, what and where: one value each. Two
/// that differ would be read one way here (the first) and maybe another
/// by a proxy in front (the last), so such a request is refused.
const SINGLE_VALUED: [&str; 8] = [
    "authorization",
    "host",
    "origin",
    "content-type",
    crate::protocol::headers::SESSION_ID,
    crate::protocol::headers::PROTOCOL_VERSION,
    crate::protocol::headers::METHOD,
    crate::protocol::headers::NAME,
];

/// The first of [`SINGLE_VALUED`] that `headers` give twice with
/// different values.
pub fn conflicting_header(headers: &HeaderMap) -> Option<&'static str> {
    SINGLE_VALUED.into_iter().find(|name| {
        let mut values = headers.get_all(*name).iter();
        let first = values.next();
        values.any(|v| Some(v) != first)
    })
}

/// 400 for a request that gives a [`SINGLE_VALUED`] header twice with
/// different values; 403 for a foreign `Origin` or `Host` on every route
/// (DNS rebinding), unless the `no-origin-check` flaw is on
/// (`no-host-check`: Host only).
async fn guard_origin(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    identify(&app, &req);
    if let Some(name) = conflicting_header(req.headers()) {
        let timing = Timing::start();
        gated!(
            info,
            header = name,
            "request refused: conflicting duplicate header"
        );
        let e = RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::INVALID_REQUEST,
            format!("the {name} header is given twice with different values"),
        );
        return reply::with_timing(reply::error(None, &e), &timing);
    }
    if app.flaw(Flaw::NoOriginCheck) {
        return next.run(req).await;
    }
    match app.origins.check(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(Refusal::Host) if app.flaw(Flaw::NoHostCheck) => next.run(req).await,
        Err(refusal) => {
            let timing = Timing::start();
            let name = match refusal {
                Refusal::Origin => header::ORIGIN,
                Refusal::Host => header::HOST,
            };
            let value = req
                .headers()
                .get(&name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default();
            gated!(info,
                ?refusal,
                value = %LogText(&value),
                "request refused by the Origin/Host check"
            );
            let e = RpcError::new(
                StatusCode::FORBIDDEN,
                codes::INVALID_REQUEST,
                refusal.message(),
            );
            reply::with_timing(reply::error(None, &e), &timing)
        }
    }
}

/// `no-nodelay`: hands the body over only after hyper has written the head,
/// so the two leave in separate writes (and, with Nagle on, the body waits
/// for the client's delayed ACK of the head).
async fn split_writes(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let (parts, body) = resp.into_parts();
    let mut body = Some(body);
    let stream = futures::stream::once(tokio::task::yield_now())
        .filter_map(move |()| std::future::ready(body.take().map(Body::into_data_stream)))
        .flatten();
    Response::from_parts(parts, Body::from_stream(stream))
}

/// 401 with `WWW-Authenticate: Bearer`. It names no JSON-RPC id: the body
/// of a caller without credentials is never read.
fn unauthorized() -> Response {
    gated!(info, "request refused: no valid credentials");
    let e = RpcError::new(
        StatusCode::UNAUTHORIZED,
        codes::INVALID_REQUEST,
        "authentication required: send Authorization: Bearer <token>",
    );
    let mut r = reply::error(None, &e);
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

fn is_legacy(headers: &HeaderMap, msg: &Message) -> bool {
    let version = headers.get(PROTOCOL_VERSION).map(|v| v.as_bytes());
    // `initialize` under a 2026-07-28 header is a modern client calling a
    // removed method (404 + -32601), not a legacy handshake.
    (msg.method() == Some(METHOD_INITIALIZE) && version != Some(MODERN.as_bytes()))
        || version == Some(LEGACY.as_bytes())
        || (version.is_none() && headers.contains_key(SESSION_ID))
}

async fn mcp_post(
    State(app): State<Arc<App>>,
    parking: Option<Extension<Parking>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut timing = Timing::start();
    super::stats::bump(&app.stats.mcp_posts);
    let parking = parking.map(|Extension(p)| p);
    let resp = post_inner(&app, &headers, body, parking, &mut timing).await;
    reply::with_timing(resp, &timing)
}

async fn post_inner(
    app: &Arc<App>,
    headers: &HeaderMap,
    body: Body,
    parking: Option<Parking>,
    timing: &mut Timing,
) -> Response {
    let max = app.cfg.max_body;
    let declared = declared_length(headers);
    if declared.is_some_and(|n| n > max) {
        return too_large(max);
    }
    // Who is calling comes from the head: a request without valid
    // credentials is refused before any of its body is read (so it costs
    // no memory and holds no connection while the body trickles in).
    let Some(principal) = app.principal_of(headers, false) else {
        return unauthorized();
    };
    let bytes = match read_body(app, body, max, Some(&principal), declared).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => return too_large(max),
        Err(BodyError::TimedOut) => return body_timed_out(),
        Err(BodyError::OverBudget(wait)) => return over_budget(wait),
    };
    if let Err(e) = super::json_cost::check(&bytes, app.cfg.max_json_members) {
        gated!(info, limit = %e, "request body refused: too costly to parse");
        let err = RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::INVALID_REQUEST,
            e.to_string(),
        );
        return reply::error(None, &err);
    }
    let parsed = match parse_json_capped(&bytes, max) {
        // The flaw reads the body as a stream of JSON values and takes the
        // first, so what follows it is never seen.
        Err(e) if app.flaw(Flaw::FirstMessageOfBody) => {
            serde_json::Deserializer::from_slice(&bytes)
                .into_iter::<serde_json::Value>()
                .next()
                .and_then(Result::ok)
                .ok_or(e)
        }
        other => other,
    };
    // The parsed value is all that is needed: the bytes leave the budget.
    drop(bytes);
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            tracing::debug!(kind = codes::name(e.code()), "unparseable body");
            let err = RpcError::new(StatusCode::BAD_REQUEST, e.code(), e.to_string());
            return reply::error(None, &err);
        }
    };
    let msg = match message_from_value(value) {
        Ok(m) => m,
        Err(e) => {
            tracing::debug!(kind = codes::name(e.code()), "invalid JSON-RPC message");
            let err = RpcError::new(StatusCode::BAD_REQUEST, e.code(), e.to_string());
            return reply::error(e.id(), &err);
        }
    };
    if is_legacy(headers, &msg) {
        return legacy::handle_post(app, headers, msg, principal, parking, timing).await;
    }
    match msg {
        Message::Request(req) => modern::handle(app, headers, req, &principal, timing).await,
        Message::Notification(_) => reply::status(StatusCode::ACCEPTED),
        Message::Response(_) => reply::error(
            None,
            &RpcError::new(
                StatusCode::BAD_REQUEST,
                codes::INVALID_REQUEST,
                "2026-07-28 clients do not send JSON-RPC responses",
            ),
        ),
    }
}

/// A GET or DELETE belongs to a 2025-11-25 session when it names one and
/// does not say it speaks another version; 2026-07-28 has neither (405).
fn names_legacy_session(headers: &HeaderMap) -> bool {
    headers.contains_key(SESSION_ID)
        && headers
            .get(PROTOCOL_VERSION)
            .is_none_or(|v| v.as_bytes() == LEGACY.as_bytes())
}

async fn mcp_get(
    State(app): State<Arc<App>>,
    parking: Option<Extension<Parking>>,
    headers: HeaderMap,
) -> Response {
    let timing = Timing::start();
    let resp = if names_legacy_session(&headers) {
        legacy::handle_get(&app, &headers, parking.map(|Extension(p)| p))
    } else {
        reply::status(StatusCode::METHOD_NOT_ALLOWED)
    };
    reply::with_timing(resp, &timing)
}

async fn mcp_delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let timing = Timing::start();
    let resp = if names_legacy_session(&headers) {
        legacy::handle_delete(&app, &headers)
    } else {
        reply::status(StatusCode::METHOD_NOT_ALLOWED)
    };
    reply::with_timing(resp, &timing)
}

/// `GET /stats`: the server-wide counters, for any authenticated caller
/// (bearer token or signed-in browser); 401 without credentials.
async fn stats(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let timing = Timing::start();
    if app.principal_of(&headers, true).is_none() {
        return reply::with_timing(unauthorized(), &timing);
    }
    let body = app.stats_json().to_string();
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    reply::with_timing(r, &timing)
}

async fn not_found() -> Response {
    let timing = Timing::start();
    let r = reply::message(
        StatusCode::NOT_FOUND,
        json!({"error": "not found"}).to_string(),
        super::config::ResponseMode::Json,
    );
    reply::with_timing(r, &timing)
}
