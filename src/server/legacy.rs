//! 2025-11-25 (stub, being written).

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::protocol::jsonrpc::Message;

use super::app::App;
use super::reply;
use super::timing::Timing;

/// Legacy sessions.
#[derive(Default)]
pub struct Sessions {}

/// Handles a legacy POST.
pub async fn handle_post(
    _app: &Arc<App>,
    _headers: &HeaderMap,
    _msg: Message,
    _principal: String,
    _timing: &mut Timing,
) -> Response {
    reply::status(StatusCode::BAD_REQUEST)
}

/// Handles `DELETE /mcp` with a session.
pub fn handle_delete(_app: &Arc<App>, _headers: &HeaderMap) -> Response {
    reply::status(StatusCode::NOT_FOUND)
}
