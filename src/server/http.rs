//! The HTTP surface: routes, body limits, principal extraction, and the
//! per-request choice between the two generations.
//!
//! A request is 2025-11-25 ("legacy") when it is `initialize`, says
//! `MCP-Protocol-Version: 2025-11-25`, or carries an `MCP-Session-Id` without
//! any `MCP-Protocol-Version`; everything else is 2026-07-28 (which ignores
//! `Mcp-Session-Id`, as the 2026-07-28 transport requires).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::json;

use crate::protocol::codes;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::{Message, RequestId, message_from_value, parse_json_capped};
use crate::protocol::legacy::METHOD_INITIALIZE;
use crate::protocol::version::LEGACY;

use super::app::App;
use super::auth::bearer_token;
use super::reply::{self, RpcError};
use super::timing::Timing;
use super::{flow, legacy, modern};

/// The router of the reference server.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/mcp", post(mcp_post).get(mcp_get).delete(mcp_delete))
        .route("/flow/{id}", get(flow::page).post(flow::submit))
        .route("/login", post(flow::login))
        .route("/stats", get(stats))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(app)
}

/// The principal behind the request's `Authorization: Bearer` header.
pub fn principal_of(app: &App, headers: &HeaderMap) -> Option<String> {
    let token = bearer_token(headers.get(header::AUTHORIZATION)?.as_bytes())?;
    app.cfg.principals.resolve(token)
}

fn unauthorized(id: Option<&RequestId>) -> Response {
    let e = RpcError::new(
        StatusCode::UNAUTHORIZED,
        codes::INVALID_REQUEST,
        "authentication required: send Authorization: Bearer <token>",
    );
    let mut r = reply::error(id, &e);
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

fn is_legacy(headers: &HeaderMap, msg: &Message) -> bool {
    let version = headers.get(PROTOCOL_VERSION).map(|v| v.as_bytes());
    msg.method() == Some(METHOD_INITIALIZE)
        || version == Some(LEGACY.as_bytes())
        || (version.is_none() && headers.contains_key(SESSION_ID))
}

async fn mcp_post(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let mut timing = Timing::start();
    let resp = post_inner(&app, &headers, body, &mut timing).await;
    reply::with_timing(resp, &timing)
}

fn too_large(max: usize) -> Response {
    reply::error(
        None,
        &RpcError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::INVALID_REQUEST,
            format!("request body exceeds the {max}-byte limit"),
        ),
    )
}

/// True when the request carries no `Origin`, or one on a loopback host, or
/// one naming the host the request was sent to (DNS-rebinding defence).
pub fn origin_allowed(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Some(url) = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()) else {
        return false;
    };
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if loopback {
        return true;
    }
    let authority = match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        _ => return false,
    };
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| h.eq_ignore_ascii_case(&authority))
}

async fn post_inner(
    app: &Arc<App>,
    headers: &HeaderMap,
    body: Body,
    timing: &mut Timing,
) -> Response {
    if !origin_allowed(headers) {
        tracing::info!("request with a foreign Origin refused");
        let e = RpcError::new(
            StatusCode::FORBIDDEN,
            codes::INVALID_REQUEST,
            "Origin not allowed",
        );
        return reply::error(None, &e);
    }
    let max = app.cfg.max_body;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > max) {
        return too_large(max);
    }
    let Ok(bytes) = axum::body::to_bytes(body, max).await else {
        return too_large(max);
    };
    let value = match parse_json_capped(&bytes, max) {
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
    let id = match &msg {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    };
    let Some(principal) = principal_of(app, headers) else {
        return unauthorized(id.as_ref());
    };
    if is_legacy(headers, &msg) {
        return legacy::handle_post(app, headers, msg, principal, timing).await;
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

async fn mcp_get(headers: HeaderMap) -> Response {
    let timing = Timing::start();
    let _ = headers;
    reply::with_timing(reply::status(StatusCode::METHOD_NOT_ALLOWED), &timing)
}

async fn mcp_delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let timing = Timing::start();
    let resp = if !origin_allowed(&headers) {
        reply::status(StatusCode::FORBIDDEN)
    } else if headers.contains_key(SESSION_ID) {
        legacy::handle_delete(&app, &headers)
    } else {
        reply::status(StatusCode::METHOD_NOT_ALLOWED)
    };
    reply::with_timing(resp, &timing)
}

async fn stats(State(app): State<Arc<App>>) -> Response {
    let timing = Timing::start();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    #[test]
    fn origins_are_checked() {
        assert!(origin_allowed(&h(&[])));
        assert!(origin_allowed(&h(&[("origin", "http://localhost:3000")])));
        assert!(origin_allowed(&h(&[("origin", "http://127.0.0.1:9")])));
        assert!(origin_allowed(&h(&[("origin", "http://[::1]:9")])));
        assert!(!origin_allowed(&h(&[("origin", "https://evil.example")])));
        assert!(!origin_allowed(&h(&[("origin", "null")])));
        assert!(origin_allowed(&h(&[
            ("origin", "http://myhost:8080"),
            ("host", "myhost:8080")
        ])));
        assert!(!origin_allowed(&h(&[
            ("origin", "http://myhost:8080"),
            ("host", "other:8080")
        ])));
    }
}
