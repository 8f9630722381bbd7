//! `delete_file {path}`: confirm, then a side effect that happens at most
//! once per confirmed request, however many states were issued for it (see
//! [`crate::server::once`]).

use std::sync::LazyLock;

use serde_json::json;

use super::{Ask, Ctx, Effect, FormSpec, Step, ToolError, ToolResult, arg, refused};
use crate::server::conversation::{Conversation, Expect};

const KEY: &str = "confirm";

static FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "title": "Delete the file?", "default": false}
        },
        "required": ["confirm"]
    }))
});

/// The expected answer under `key`.
pub fn expect(_ctx: &Ctx<'_>, key: &str) -> Option<Expect> {
    (key == KEY).then(|| FORM.expect())
}

/// One step.
pub async fn step(ctx: &Ctx<'_>, conv: &Conversation) -> Result<Step, ToolError> {
    let path = arg(ctx.args, "path");
    match conv.action(KEY) {
        None => Ok(Step::Ask(vec![Ask::form(
            KEY,
            format!("Really delete {path}? This cannot be undone."),
            &FORM,
        )])),
        Some(crate::protocol::ElicitAction::Accept) => {
            let confirmed = conv
                .content(KEY)
                .and_then(|c| c.get("confirm"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            if !confirmed {
                return Ok(Step::Done(ToolResult::ok(format!(
                    "{path} was not deleted (not confirmed)."
                ))));
            }
            Ok(Step::Act(
                Effect::FileDeletion,
                ToolResult::ok(format!("Deleted {path}.")),
            ))
        }
        Some(other) => Ok(Step::Done(refused(&format!("Deleting {path}"), other))),
    }
}
