//! Reading a request body within its limits: at most so many bytes, within
//! `--body-read-timeout`, within the bytes-in-flight budget
//! ([`super::body_budget`]), and the 413, 408 and 503 answers when it is not.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt as _;

use crate::protocol::codes;

use super::app::App;
use super::body_budget::Held;
use super::log_gate::gated;
use super::reply::{self, RpcError};

/// 413 for a body longer than `max` bytes.
pub fn too_large(max: usize) -> Response {
    reply::error(
        None,
        &RpcError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::INVALID_REQUEST,
            format!("request body exceeds the {max}-byte limit"),
        ),
    )
}

/// Why a request body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Longer than the limit, or broken off (413).
    TooLarge,
    /// Not all there within `--body-read-timeout` (408; the connection closes).
    TimedOut,
    /// Beyond the bytes-in-flight budget, or cut off to make room for
    /// another payer's body (503 with `Retry-After`: when the bytes it
    /// waits for free up).
    OverBudget(Duration),
}

/// The `Content-Length` a request declares, if it is a number.
pub fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
}

/// A body read whole; its bytes count against the budget until it is
/// dropped.
pub struct Received<'a> {
    bytes: Vec<u8>,
    _held: Held<'a>,
}

impl std::ops::Deref for Received<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Reads a request body of at most `max` bytes within the body-read
/// timeout, held against the share of `principal` (`None`: the pool of
/// callers without credentials). `declared` is its `Content-Length`,
/// checked on admission (up to `max`: a longer one is the 413 it gets once
/// `max` bytes arrived).
pub async fn read_body<'a>(
    app: &'a App,
    body: Body,
    max: usize,
    principal: Option<&str>,
    declared: Option<usize>,
) -> Result<Received<'a>, BodyError> {
    let mut held = match app.bodies.admit(principal, declared.unwrap_or(0).min(max)) {
        Ok(h) => h,
        Err(e) => {
            gated!(
                info,
                "request body refused: the bytes-in-flight budget is spent"
            );
            return Err(BodyError::OverBudget(e.retry_after));
        }
    };
    let collect = async {
        let mut bytes = Vec::new();
        let mut frames = body.into_data_stream();
        loop {
            let chunk = tokio::select! {
                biased;
                () = held.cut_off() => {
                    gated!(
                        info,
                        "request body cut off to make room for a smaller payer's"
                    );
                    return Err(BodyError::OverBudget(app.cfg.body_read_timeout));
                }
                chunk = frames.next() => chunk,
            };
            let Some(chunk) = chunk else { break };
            let chunk = chunk.map_err(|_| BodyError::TooLarge)?;
            if bytes.len() + chunk.len() > max {
                return Err(BodyError::TooLarge);
            }
            if let Err(e) = held.grow(chunk.len()) {
                gated!(
                    info,
                    "request body cut off: the bytes-in-flight budget is spent"
                );
                return Err(BodyError::OverBudget(e.retry_after));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    match tokio::time::timeout(app.cfg.body_read_timeout, collect).await {
        Ok(Ok(bytes)) => Ok(Received { bytes, _held: held }),
        Ok(Err(e)) => Err(e),
        Err(_) => {
            gated!(info, "request body not received within --body-read-timeout");
            Err(BodyError::TimedOut)
        }
    }
}

/// 503 for a body beyond the bytes-in-flight budget, with `Retry-After`
/// when the bytes it waits for free up (whole seconds, at least 1).
pub fn over_budget(retry_after: Duration) -> Response {
    let mut r = reply::error(
        None,
        &RpcError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::SERVER_ERROR,
            "too many request bodies in flight; try again later",
        ),
    );
    r.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(retry_after_secs(retry_after)),
    );
    r
}

/// Whole seconds of a `Retry-After`, rounded up, at least 1.
pub fn retry_after_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

/// 408 for a body that did not arrive in time. The connection closes, and
/// says so, as after every reply that leaves its body unread (the accept
/// loop's service adds `Connection: close`).
pub fn body_timed_out() -> Response {
    reply::error(
        None,
        &RpcError::new(
            StatusCode::REQUEST_TIMEOUT,
            codes::INVALID_REQUEST,
            "the request body did not arrive in time",
        ),
    )
}
