//! `connect_billing {}`: URL mode. The user types an API key on the
//! server's own page (`/flow/<id>`); the tool result shows only the masked
//! key. Accept before the page was submitted asks again. The connection
//! happens once per originating request (its flow). With the `secret-in-form` flaw it asks
//! for the key in a form field instead (a spec violation); `leak-secret`
//! echoes the typed key in the result; `secret-in-state` asks one more
//! (confirmation) round whose sealed state carries the typed key in clear.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::{Ask, Ctx, Effect, FormSpec, Step, ToolError, ToolResult, refused};
use crate::protocol::ElicitAction;
use crate::server::conversation::{Conversation, Expect};
use crate::server::flaw::Flaw;
use crate::store::{Status, mask_secret};

/// The input key of the billing elicitation.
pub const KEY: &str = "billing";
/// The input key of the extra confirmation round (`secret-in-state` and
/// `typed-in-state` only).
const CONFIRM_KEY: &str = "billing_confirm";
const MEMO_FLOW: &str = "flow";
const MEMO_KEY: &str = "api_key";
const MEMO_CONTACT: &str = "contact";

static CONFIRM_FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Connect billing with this key?", "default": true}},
        "required": ["confirm"]
    }))
});

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
    if key == CONFIRM_KEY {
        return Some(CONFIRM_FORM.expect());
    }
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

/// Completes the call by connecting billing. The result shows `shown`: the
/// masked key (or, under `leak-secret`, the key).
fn connected(shown: &str) -> Step {
    let mut r = ToolResult::ok(format!("Billing connected with key {shown}."));
    r.structured = Some(json!({"connected": true, "key": shown}));
    Step::Act(Effect::BillingConnection, r)
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
                let typed = conv.field_str(KEY, "api_key").unwrap_or("");
                let shown = if ctx.app.flaw(Flaw::LeakSecret) {
                    typed.to_owned()
                } else {
                    mask_secret(typed)
                };
                Ok(connected(&shown))
            }
            Some(other) => Ok(Step::Done(refused("Connecting billing", other))),
        };
    }
    let flow = match conv.memo.get(MEMO_FLOW).and_then(Value::as_str) {
        Some(f) => f.to_owned(),
        None => {
            let rec = ctx
                .app
                .create_flow(ctx.principal, ctx.digest, ctx.origin)
                .await?;
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
                    let field = |name: &str| {
                        rec.result
                            .as_ref()
                            .and_then(|r| r.get(name))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    };
                    let typed = field("key");
                    let secret_in_state = ctx.app.flaw(Flaw::SecretInState);
                    if secret_in_state || ctx.app.flaw(Flaw::TypedInState) {
                        match conv.action(CONFIRM_KEY) {
                            None => {
                                // The flaws: what was typed on the page (the
                                // key, or the contact name) rides, in clear,
                                // in the payload of the state this round seals.
                                let (memo, value) = if secret_in_state {
                                    (MEMO_KEY, typed.clone())
                                } else {
                                    (MEMO_CONTACT, field("contact"))
                                };
                                conv.memo
                                    .insert(memo.into(), value.unwrap_or_default().into());
                                return Ok(Step::Ask(vec![Ask::form(
                                    CONFIRM_KEY,
                                    "The billing page was submitted. Connect billing with that key?"
                                        .into(),
                                    &CONFIRM_FORM,
                                )]));
                            }
                            Some(ElicitAction::Accept) => {}
                            Some(other) => {
                                return Ok(Step::Done(refused("Connecting billing", other)));
                            }
                        }
                    }
                    let mut shown = match typed {
                        Some(k) if ctx.app.flaw(Flaw::LeakSecret) => k,
                        _ => field("masked").unwrap_or_else(|| "…".into()),
                    };
                    if let Some(code) = field("code") {
                        // leak-verification-code: the page's code, in clear.
                        shown = format!("{shown} (verified with code {code})");
                    }
                    Ok(connected(&shown))
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
