//! `profile {}`: one form with every field shape the schema engine knows,
//! defaults included.

use std::sync::LazyLock;

use serde_json::json;

use super::{Ask, Ctx, Effect, FormSpec, Step, ToolError, ToolResult, refused};
use crate::server::conversation::{Conversation, Expect};

const KEY: &str = "profile";

static FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 64, "default": "Ada"},
            "email": {"type": "string", "title": "Email", "format": "email", "default": "ada@example.com"},
            "homepage": {"type": "string", "title": "Homepage", "format": "uri"},
            "birthday": {"type": "string", "title": "Birthday", "format": "date", "default": "1990-12-10"},
            "reminder": {"type": "string", "title": "Reminder", "format": "date-time"},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150, "default": 30},
            "height": {"type": "number", "title": "Height (m)", "minimum": 0.5, "maximum": 3.0, "default": 1.7},
            "newsletter": {"type": "boolean", "title": "Newsletter", "default": false},
            "plan": {"type": "string", "title": "Plan", "enum": ["free", "pro", "team"], "default": "free"},
            "region": {"type": "string", "title": "Region", "oneOf": [
                {"const": "eu", "title": "Europe"},
                {"const": "us", "title": "United States"},
                {"const": "apac", "title": "Asia-Pacific"}
            ], "default": "eu"},
            "theme": {"type": "string", "title": "Theme", "enum": ["light", "dark"],
                      "enumNames": ["Light", "Dark"], "default": "light"},
            "languages": {"type": "array", "title": "Languages", "minItems": 1, "maxItems": 3,
                          "items": {"type": "string", "enum": ["rust", "go", "python", "zig"]},
                          "default": ["rust"]},
            "channels": {"type": "array", "title": "Channels", "maxItems": 2,
                         "items": {"anyOf": [
                             {"const": "mail", "title": "E-mail"},
                             {"const": "sms", "title": "SMS"},
                             {"const": "push", "title": "Push"}
                         ]},
                         "default": ["mail"]}
        },
        "required": ["name", "email", "age", "plan"]
    }))
});

/// The expected answer under `key`.
pub fn expect(_ctx: &Ctx<'_>, key: &str) -> Option<Expect> {
    (key == KEY).then(|| FORM.expect())
}

/// One step.
pub async fn step(_ctx: &Ctx<'_>, conv: &Conversation) -> Result<Step, ToolError> {
    match conv.action(KEY) {
        None => Ok(Step::Ask(vec![Ask::form(
            KEY,
            "Review and edit your profile.".into(),
            &FORM,
        )])),
        Some(crate::protocol::ElicitAction::Accept) => {
            let content = conv.content(KEY).cloned().unwrap_or_default();
            let mut r = ToolResult::ok(format!("Profile saved ({} fields).", content.len()));
            r.structured = Some(serde_json::Value::Object(content));
            Ok(Step::Act(Effect::ProfileSave, r))
        }
        Some(other) => Ok(Step::Done(refused("Editing the profile", other))),
    }
}
