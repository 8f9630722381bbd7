//! Reading a request body within its limits: at most so many bytes, within
//! `--body-read-timeout`, and the 413 and 408 answers when it is not.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::protocol::codes;

use super::app::App;
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
    /// Longer than the limit (413).
    TooLarge,
    /// Not all there within `--body-read-timeout` (408; the connection closes).
    TimedOut,
}

/// Reads a request body of at most `max` bytes within the body-read timeout.
pub async fn read_body(app: &App, body: Body, max: usize) -> Result<axum::body::Bytes, BodyError> {
    match tokio::time::timeout(app.cfg.body_read_timeout, axum::body::to_bytes(body, max)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(BodyError::TooLarge),
        Err(_) => {
            tracing::info!("request body not received within --body-read-timeout");
            Err(BodyError::TimedOut)
        }
    }
}

/// 408 for a body that did not arrive in time; the connection is closed.
pub fn body_timed_out() -> Response {
    let mut r = reply::error(
        None,
        &RpcError::new(
            StatusCode::REQUEST_TIMEOUT,
            codes::INVALID_REQUEST,
            "the request body did not arrive in time",
        ),
    );
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}
