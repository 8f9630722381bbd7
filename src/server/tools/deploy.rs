//! `deploy {service}`: one form round (environment enum + confirm boolean).

use std::sync::LazyLock;

use serde_json::json;

use super::{Ask, Ctx, FormSpec, Step, ToolResult, arg, refused};
use crate::server::conversation::{Conversation, Expect};
use crate::server::stats::bump;

const KEY: &str = "confirm";

static FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {
            "environment": {
                "type": "string", "title": "Environment",
                "enum": ["staging", "production"], "default": "staging"
            },
            "confirm": {"type": "boolean", "title": "Deploy now?", "default": false}
        },
        "required": ["environment", "confirm"]
    }))
});

/// The expected answer under `key`.
pub fn expect(_ctx: &Ctx<'_>, key: &str) -> Option<Expect> {
    (key == KEY).then(|| FORM.expect())
}

/// One step.
pub fn step(ctx: &Ctx<'_>, conv: &Conversation) -> Step {
    let service = arg(ctx.args, "service");
    match conv.action(KEY) {
        None => Step::Ask(vec![Ask::form(
            KEY,
            format!("Deploy {service}? Choose the environment and confirm."),
            &FORM,
        )]),
        Some(crate::protocol::ElicitAction::Accept) => {
            let env = conv.field_str(KEY, "environment").unwrap_or("staging");
            let confirmed = conv
                .content(KEY)
                .and_then(|c| c.get("confirm"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            if confirmed {
                bump(&ctx.app.stats.deployments);
                Step::Done(ToolResult::ok(format!("Deployed {service} to {env}.")))
            } else {
                Step::Done(ToolResult::ok(format!(
                    "Deployment of {service} not confirmed; nothing was deployed."
                )))
            }
        }
        Some(other) => Step::Done(refused(&format!("Deployment of {service}"), other)),
    }
}
