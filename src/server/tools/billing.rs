//! `connect_billing {}`: URL mode. The user types an API key on the
//! server's own page (`/flow/<id>`); the tool result shows only the masked
//! key. Accept before the page was submitted asks again. Completion is
//! single-use per flow. With the `secret-in-form` flaw it asks for the key
//! in a form field instead (a spec violation).

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::{Ask, Ctx, FormSpec, Step, ToolError, ToolResult, refused};
use crate::protocol::ElicitAction;
use crate::server::conversation::{Conversation, Expect};
use crate::server::flaw::Flaw;
use crate::server::stats::bump;
use crate::store::{Status, mask_secret};

/// The input key of the billing elicitation.
pub const KEY: &str = "billing";
const MEMO_FLOW: &str = "flow";

static SECRET_FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {
            "api_key": {"type": "string", "title": "API key",
                        "description": "Your payment-provider API key", "minLength": 1}
        },
        "required": ["api_key"]
    }))
});

/// The expected answer under `key`.
pub fn expect(ctx: &Ctx<'_>, key: &str) -> Option<Expect> {
    if key != KEY {
        return None;
    }
    Some(if ctx.app.flaw(Flaw::SecretInForm) {
        SECRET_FORM.expect()
    } else {
        Expect::Url
    })
}

fn url_ask(ctx: &Ctx<'_>, flow: &str) -> Step {
    Step::Ask(vec![Ask::url(
        KEY,
        "Connect billing: open this page and enter your payment-provider API key there. \
         The key goes to this server only, never through your client."
            .into(),
        ctx.app.flow_url(flow),
        flow.to_owned(),
    )])
}

async fn connected(ctx: &Ctx<'_>, once: String, masked: &str) -> Result<Step, ToolError> {
    if !ctx.app.claim_once(once).await? {
        return Err(ToolError::Replayed);
    }
    bump(&ctx.app.stats.billing_connected);
    let mut r = ToolResult::ok(format!("Billing connected with key {masked}."));
    r.structured = Some(json!({"connected": true, "key": masked}));
    Ok(Step::Done(r))
}

/// One step.
pub async fn step(ctx: &Ctx<'_>, conv: &mut Conversation) -> Result<Step, ToolError> {
    if ctx.app.flaw(Flaw::SecretInForm) {
        return match conv.action(KEY) {
            None => Ok(Step::Ask(vec![Ask::form(
                KEY,
                "Connect billing: enter your payment-provider API key.".into(),
                &SECRET_FORM,
            )])),
            Some(ElicitAction::Accept) => {
                let masked = mask_secret(conv.field_str(KEY, "api_key").unwrap_or(""));
                let once = format!("billing:{}", ctx.once_key.as_deref().unwrap_or(""));
                connected(ctx, once, &masked).await
            }
            Some(other) => Ok(Step::Done(refused("Connecting billing", other))),
        };
    }
    let flow = match conv.memo.get(MEMO_FLOW).and_then(Value::as_str) {
        Some(f) => f.to_owned(),
        None => {
            let rec = ctx.app.create_flow(ctx.principal, ctx.digest).await?;
            conv.memo.insert(MEMO_FLOW.into(), rec.id.clone().into());
            rec.id
        }
    };
    match conv.action(KEY) {
        None => Ok(url_ask(ctx, &flow)),
        Some(ElicitAction::Accept) => {
            let Some(rec) = ctx.app.record(&flow).await? else {
                return Ok(Step::Done(ToolResult::error(
                    "The billing page is gone; call connect_billing again.",
                )));
            };
            if rec.principal != ctx.principal && !ctx.app.flaw(Flaw::IgnorePrincipal) {
                return Ok(Step::Done(ToolResult::error(
                    "This billing flow belongs to someone else.",
                )));
            }
            match rec.status {
                Status::Completed => {
                    let masked = rec
                        .result
                        .as_ref()
                        .and_then(|r| r.get("masked"))
                        .and_then(Value::as_str)
                        .unwrap_or("…")
                        .to_owned();
                    connected(ctx, format!("billing:{flow}"), &masked).await
                }
                Status::Pending => {
                    conv.answers.remove(KEY);
                    Ok(url_ask(ctx, &flow))
                }
                Status::Expired => Ok(Step::Done(ToolResult::error(
                    "The billing page expired before it was submitted; call connect_billing again.",
                ))),
                Status::Declined => Ok(Step::Done(refused(
                    "Connecting billing",
                    ElicitAction::Decline,
                ))),
                Status::Cancelled => Ok(Step::Done(refused(
                    "Connecting billing",
                    ElicitAction::Cancel,
                ))),
            }
        }
        Some(other) => {
            ctx.app.cancel_flow(&flow, ctx.principal).await;
            Ok(Step::Done(refused("Connecting billing", other)))
        }
    }
}
