//! What a tool call has gathered so far, across MRTR rounds or legacy
//! elicitations: the origin id of its originating request (see
//! [`super::once`]), answers by input key, tool-private memo values and the
//! keys the last round asked. In MRTR it travels sealed inside the
//! `requestState` payload; in 2025-11-25 it lives in the call's task.
//!
//! Also the one judge of an incoming answer ([`judge`]), shared by both
//! generations.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::findings::has_must;
use crate::protocol::ElicitAction;
use crate::schema::{RequestedSchema, validate_content_map};

/// Answers and memo of one tool call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// Origin id of the originating request; empty in a payload sealed
    /// before origins existed.
    pub origin: String,
    /// The store epoch the originating request began in (0: sealed before
    /// epochs existed, not checked); see [`crate::store::Store::epoch`].
    pub epoch: u64,
    /// Accepted or refused answers by input key, as `ElicitResult` JSON.
    pub answers: Map<String, Value>,
    /// Tool-private values (e.g. the URL flow id).
    pub memo: Map<String, Value>,
    /// Keys the last `input_required` asked for.
    pub asked: Vec<String>,
}

/// Why a sealed payload could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sealed conversation payload is unreadable")]
pub struct PayloadError;

impl Conversation {
    /// A conversation just begun by the originating request `origin`, in
    /// store epoch `epoch`.
    pub fn begin(origin: String, epoch: u64) -> Self {
        Conversation {
            origin,
            epoch,
            ..Conversation::default()
        }
    }

    /// Compact bytes for the state payload (empty when there is nothing).
    pub fn encode(&self) -> Vec<u8> {
        if self.origin.is_empty()
            && self.answers.is_empty()
            && self.memo.is_empty()
            && self.asked.is_empty()
        {
            return Vec::new();
        }
        // Serialized from borrows (a `json!` tree would deep-copy the
        // answers and memo first); fields in key order, as before, so the
        // bytes are what a `json!` object gave.
        #[derive(serde::Serialize)]
        struct Wire<'a> {
            a: &'a Map<String, Value>,
            #[serde(skip_serializing_if = "is_zero")]
            e: u64,
            m: &'a Map<String, Value>,
            o: &'a str,
            q: &'a [String],
        }
        fn is_zero(e: &u64) -> bool {
            *e == 0
        }
        serde_json::to_vec(&Wire {
            a: &self.answers,
            e: self.epoch,
            m: &self.memo,
            o: &self.origin,
            q: &self.asked,
        })
        .unwrap_or_default()
    }

    /// Reads [`Conversation::encode`] output.
    pub fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        if bytes.is_empty() {
            return Ok(Conversation::default());
        }
        let Value::Object(mut obj) = serde_json::from_slice(bytes).map_err(|_| PayloadError)?
        else {
            return Err(PayloadError);
        };
        let mut map = |k: &str| match obj.remove(k) {
            Some(Value::Object(m)) => Ok(m),
            None => Ok(Map::new()),
            Some(_) => Err(PayloadError),
        };
        let (answers, memo) = (map("a")?, map("m")?);
        let asked = match obj.get("q") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|k| k.as_str().map(str::to_owned).ok_or(PayloadError))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
            Some(_) => return Err(PayloadError),
        };
        let origin = match obj.get("o") {
            Some(Value::String(o)) => o.clone(),
            None => String::new(),
            Some(_) => return Err(PayloadError),
        };
        let epoch = match obj.get("e") {
            Some(e) => e.as_u64().ok_or(PayloadError)?,
            None => 0,
        };
        Ok(Conversation {
            origin,
            epoch,
            answers,
            memo,
            asked,
        })
    }

    /// The action answered under `key`, if any.
    pub fn action(&self, key: &str) -> Option<ElicitAction> {
        match self.answers.get(key)?.get("action")?.as_str()? {
            "accept" => Some(ElicitAction::Accept),
            "decline" => Some(ElicitAction::Decline),
            "cancel" => Some(ElicitAction::Cancel),
            _ => None,
        }
    }

    /// The accepted form content under `key`.
    pub fn content(&self, key: &str) -> Option<&Map<String, Value>> {
        self.answers.get(key)?.get("content")?.as_object()
    }

    /// A string field of the accepted content under `key`.
    pub fn field_str(&self, key: &str, field: &str) -> Option<&str> {
        self.content(key)?.get(field)?.as_str()
    }

    /// The first refusal (decline or cancel) among the answers.
    pub fn refusal(&self) -> Option<ElicitAction> {
        self.answers.keys().find_map(|k| match self.action(k) {
            Some(a @ (ElicitAction::Decline | ElicitAction::Cancel)) => Some(a),
            _ => None,
        })
    }
}

/// What kind of answer an input key expects.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Form content matching this schema.
    Form(Arc<RequestedSchema>),
    /// URL-mode consent (no content).
    Url,
}

/// The judgement on one incoming answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Usable: the normalised `ElicitResult` to keep.
    Answered(Value),
    /// Well-formed but the content fails the schema: ask again.
    Invalid(String),
    /// Not an `ElicitResult` at all: a protocol error (`-32602`).
    Malformed(String),
}

/// Judges `raw` as the answer to an input request expecting `expect`;
/// without `validate` (the `accept-invalid-content` flaw) accepted form
/// content is taken as given.
pub fn judge(expect: &Expect, raw: &Value, validate: bool) -> Verdict {
    let Some(obj) = raw.as_object() else {
        return Verdict::Malformed("an input response must be an object".into());
    };
    let action = match obj.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitAction::Accept,
        Some("decline") => ElicitAction::Decline,
        Some("cancel") => ElicitAction::Cancel,
        _ => {
            return Verdict::Malformed(
                "an input response needs \"action\": accept, decline or cancel".into(),
            );
        }
    };
    if action != ElicitAction::Accept {
        return Verdict::Answered(json!({"action": action.as_str()}));
    }
    match expect {
        Expect::Url => Verdict::Answered(json!({"action": "accept"})),
        Expect::Form(schema) => match obj.get("content") {
            None => Verdict::Invalid("accept without content".into()),
            Some(Value::Object(content)) if !validate => {
                Verdict::Answered(accepted(content.clone()))
            }
            Some(Value::Object(content)) => {
                let findings = validate_content_map(schema, content);
                if has_must(&findings) {
                    let why: Vec<String> = findings
                        .iter()
                        .take(3)
                        .map(|f| format!("{} {}", f.pointer, f.message))
                        .collect();
                    Verdict::Invalid(why.join("; "))
                } else {
                    let mut kept = Map::new();
                    for (name, _) in &schema.properties {
                        if let Some(v) = content.get(name) {
                            kept.insert(name.clone(), v.clone());
                        }
                    }
                    Verdict::Answered(accepted(kept))
                }
            }
            Some(_) => Verdict::Malformed("\"content\" must be an object".into()),
        },
    }
}

/// `{"action": "accept", "content": content}`, the content moved in (a
/// `json!` object would copy it).
fn accepted(content: Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), "accept".into());
    m.insert("content".into(), Value::Object(content));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confirm_schema() -> Arc<RequestedSchema> {
        let v = json!({"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]});
        Arc::new(RequestedSchema::from_value(&v).0.unwrap())
    }

    #[test]
    fn payload_round_trips() {
        let mut c = Conversation::default();
        assert!(c.encode().is_empty());
        c.origin = "0f".into();
        c.answers
            .insert("k".into(), json!({"action":"accept","content":{"x":1}}));
        c.memo.insert("flow".into(), json!("abc"));
        c.asked.push("k".into());
        assert_eq!(Conversation::decode(&c.encode()), Ok(c.clone()));
        // The bytes are those of the JSON object it was written as before
        // (sorted keys, `e` only when set), so older instances read them.
        let as_object = |c: &Conversation| {
            let mut v = json!({"o": c.origin, "a": c.answers, "m": c.memo, "q": c.asked});
            if c.epoch != 0 {
                v["e"] = c.epoch.into();
            }
            serde_json::to_vec(&v).unwrap()
        };
        assert_eq!(c.encode(), as_object(&c));
        assert_eq!(c.action("k"), Some(ElicitAction::Accept));
        assert!(Conversation::decode(b"[1]").is_err());
        assert!(Conversation::decode(b"{\"q\":[1]}").is_err());
        assert!(Conversation::decode(b"{\"o\":1}").is_err());
        assert_eq!(Conversation::decode(b"{}").unwrap().origin, "");
        // The epoch round-trips whole (a u64), and is 0 when absent.
        c.epoch = u64::MAX - 1;
        assert_eq!(Conversation::decode(&c.encode()), Ok(c.clone()));
        assert_eq!(c.encode(), as_object(&c));
        assert_eq!(Conversation::decode(b"{}").unwrap().epoch, 0);
        assert!(Conversation::decode(b"{\"e\":-1}").is_err());
    }

    fn checked(e: &Expect, raw: &Value) -> Verdict {
        judge(e, raw, true)
    }

    #[test]
    fn without_validation_content_is_taken_as_given() {
        let s = Expect::Form(confirm_schema());
        for content in [
            json!({"confirm":"yes"}),
            json!({}),
            json!({"confirm":true,"x":1}),
        ] {
            assert_eq!(
                judge(&s, &json!({"action":"accept","content":content}), false),
                Verdict::Answered(json!({"action":"accept","content":content}))
            );
        }
        assert!(matches!(
            judge(&s, &json!({"action":"accept","content":7}), false),
            Verdict::Malformed(_)
        ));
    }

    #[test]
    fn judge_sorts_answers() {
        let s = Expect::Form(confirm_schema());
        assert!(matches!(checked(&s, &json!(3)), Verdict::Malformed(_)));
        assert!(matches!(
            checked(&s, &json!({"action":"maybe"})),
            Verdict::Malformed(_)
        ));
        assert!(matches!(
            checked(&s, &json!({"action":"accept","content":7})),
            Verdict::Malformed(_)
        ));
        assert!(matches!(
            checked(&s, &json!({"action":"accept","content":{"confirm":"yes"}})),
            Verdict::Invalid(_)
        ));
        assert!(matches!(
            checked(&s, &json!({"action":"accept"})),
            Verdict::Invalid(_)
        ));
        assert_eq!(
            checked(
                &s,
                &json!({"action":"accept","content":{"confirm":true,"extra":1}})
            ),
            Verdict::Answered(json!({"action":"accept","content":{"confirm":true}}))
        );
        assert_eq!(
            checked(&s, &json!({"action":"decline","content":{"x":1}})),
            Verdict::Answered(json!({"action":"decline"}))
        );
        assert_eq!(
            checked(&Expect::Url, &json!({"action":"accept"})),
            Verdict::Answered(json!({"action":"accept"}))
        );
    }
}
