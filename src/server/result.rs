//! What every 2026-07-28 result of this server carries (its `resultType`
//! and the server-info `_meta`) and the error for a rejected
//! `requestState`: shared by the tool flows (`modern`) and the prompt and
//! resource flows (`non_tool`).

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::app::App;
use super::flaw::Flaw;
use super::reply::RpcError;
use crate::protocol::legacy::Implementation;
use crate::protocol::mrtr::META_SERVER_INFO;

static SERVER_META: LazyLock<Value> = LazyLock::new(
    || json!({ META_SERVER_INFO: serde_json::to_value(Implementation::elicitkit()).unwrap_or(Value::Null) }),
);

/// Adds `resultType` (unless the `missing-result-type` flaw is on) and the
/// server-info `_meta` to a result object.
pub fn finish(app: &App, mut v: Value, result_type: &'static str) -> Value {
    if let Some(o) = v.as_object_mut() {
        if !app.flaw(Flaw::MissingResultType) {
            o.insert("resultType".into(), result_type.into());
        }
        if !app.flaw(Flaw::NoServerInfo) {
            o.entry("_meta").or_insert_with(|| SERVER_META.clone());
        }
    }
    v
}

/// The JSON-RPC error for a rejected `requestState`.
pub fn state_rejected(e: &crate::state::StateError) -> RpcError {
    RpcError::invalid_params(format!("requestState rejected: {e}"))
        .with_data(json!({"reason": e.kind()}))
}
