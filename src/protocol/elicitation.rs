//! The elicitation payload shared by both generations: `elicitation/create`
//! params in form and URL mode, `ElicitResult`, and the 2025-11-25 completion
//! notification and `-32042` data.

use super::version::Generation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `elicitation/create`.
pub const METHOD_CREATE: &str = "elicitation/create";
/// `notifications/elicitation/complete` (2025-11-25 only).
pub const METHOD_COMPLETE: &str = "notifications/elicitation/complete";

/// The two elicitation modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitMode {
    /// Structured, non-secret input in the client's UI.
    Form,
    /// The user visits a server page (secrets, OAuth).
    Url,
}

/// Form-mode params.
#[derive(Debug, Clone, PartialEq)]
pub struct FormParams {
    /// What the user is asked.
    pub message: String,
    /// The `requestedSchema` object, kept as JSON (see [`crate::schema`] for the typed model).
    pub requested_schema: Value,
    /// Whether `mode: "form"` was spelled out (clients treat a missing mode as form).
    pub mode_explicit: bool,
}

/// URL-mode params.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlParams {
    /// Why the user should visit the URL.
    pub message: String,
    /// The page to visit.
    pub url: String,
    /// Required in 2025-11-25, removed in 2026-07-28 (tolerated on read either way).
    pub elicitation_id: Option<String>,
}

/// `elicitation/create` params in either mode.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(FormParams),
    /// URL mode.
    Url(UrlParams),
}

impl ElicitRequestParams {
    /// The mode.
    pub fn mode(&self) -> ElicitMode {
        match self {
            ElicitRequestParams::Form(_) => ElicitMode::Form,
            ElicitRequestParams::Url(_) => ElicitMode::Url,
        }
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }

    /// Reads params tolerantly: a missing `mode` is form, `elicitationId` is optional.
    /// Fails only when the params cannot be used at all (the validator reports details).
    pub fn from_value(v: &Value) -> Result<Self, ParamsError> {
        let obj = v.as_object().ok_or(ParamsError::NotAnObject)?;
        let message = match obj.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(ParamsError::MessageNotAString),
            None => return Err(ParamsError::NoMessage),
        };
        match obj.get("mode") {
            None | Some(Value::Null) => Self::form(obj, message, false),
            Some(Value::String(m)) if m == "form" => Self::form(obj, message, true),
            Some(Value::String(m)) if m == "url" => {
                let url = match obj.get("url") {
                    Some(Value::String(s)) => s.clone(),
                    _ => return Err(ParamsError::NoUrl),
                };
                let elicitation_id = match obj.get("elicitationId") {
                    Some(Value::String(s)) => Some(s.clone()),
                    None | Some(Value::Null) => None,
                    Some(_) => return Err(ParamsError::IdNotAString),
                };
                Ok(ElicitRequestParams::Url(UrlParams {
                    message,
                    url,
                    elicitation_id,
                }))
            }
            Some(other) => Err(ParamsError::UnknownMode(other.to_string())),
        }
    }

    fn form(
        obj: &Map<String, Value>,
        message: String,
        explicit: bool,
    ) -> Result<Self, ParamsError> {
        let schema = obj
            .get("requestedSchema")
            .cloned()
            .ok_or(ParamsError::NoSchema)?;
        Ok(ElicitRequestParams::Form(FormParams {
            message,
            requested_schema: schema,
            mode_explicit: explicit,
        }))
    }

    /// The params as JSON for the given generation: `elicitationId` is written
    /// for 2025-11-25 only; form mode always spells out `mode`.
    pub fn to_value(&self, generation: Generation) -> Value {
        self.clone().into_value(generation)
    }

    /// [`ElicitRequestParams::to_value`], taking the params (no copy of the
    /// schema).
    pub fn into_value(self, generation: Generation) -> Value {
        let mut m = Map::new();
        match self {
            ElicitRequestParams::Form(f) => {
                m.insert("mode".into(), "form".into());
                m.insert("message".into(), f.message.into());
                m.insert("requestedSchema".into(), f.requested_schema);
            }
            ElicitRequestParams::Url(u) => {
                m.insert("mode".into(), "url".into());
                m.insert("message".into(), u.message.into());
                m.insert("url".into(), u.url.into());
                if generation == Generation::Legacy
                    && let Some(id) = u.elicitation_id
                {
                    m.insert("elicitationId".into(), id.into());
                }
            }
        }
        Value::Object(m)
    }
}

/// Why `elicitation/create` params cannot be used at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// Not a JSON object.
    #[error("elicitation params must be an object")]
    NotAnObject,
    /// `message` is not a string.
    #[error("\"message\" must be a string")]
    MessageNotAString,
    /// No `message`.
    #[error("\"message\" is missing")]
    NoMessage,
    /// URL mode without a string `url`.
    #[error("URL mode needs a string \"url\"")]
    NoUrl,
    /// `elicitationId` is not a string.
    #[error("\"elicitationId\" must be a string")]
    IdNotAString,
    /// A mode that is neither form nor URL (as written).
    #[error("unknown elicitation mode {0}")]
    UnknownMode(String),
    /// Form mode without `requestedSchema`.
    #[error("form mode needs \"requestedSchema\"")]
    NoSchema,
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted (form: with content; URL: consent only).
    Accept,
    /// An explicit no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

impl ElicitAction {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        }
    }
}

/// `ElicitResult`: `{action, content?}` (2025-11-25 adds an optional `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// accept / decline / cancel.
    pub action: ElicitAction,
    /// Form answers, on accept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Optional metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ElicitResult {
    /// An accept with content.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
        }
    }

    /// An accept without content (URL-mode consent).
    pub fn consent() -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: None,
            meta: None,
        }
    }

    /// A decline or cancel.
    pub fn refuse(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            meta: None,
        }
    }

    /// As JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `notifications/elicitation/complete` params (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCompleteParams {
    /// The id from the original URL-mode request.
    #[serde(rename = "elicitationId")]
    pub elicitation_id: String,
}

/// `-32042` URLElicitationRequiredError data (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitationRequiredData {
    /// URL-mode elicitations, each with `elicitationId`.
    pub elicitations: Vec<Value>,
    /// Extra keys are allowed.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_mode_is_form() {
        let p = ElicitRequestParams::from_value(&json!({
            "message": "m", "requestedSchema": {"type":"object","properties":{}}
        }))
        .unwrap();
        assert!(matches!(
            p,
            ElicitRequestParams::Form(FormParams {
                mode_explicit: false,
                ..
            })
        ));
    }

    #[test]
    fn url_mode_with_and_without_id() {
        let with = json!({"mode":"url","message":"m","url":"https://x/y","elicitationId":"e1"});
        let p = ElicitRequestParams::from_value(&with).unwrap();
        assert_eq!(p.to_value(Generation::Legacy), with);
        let modern = p.to_value(Generation::Modern);
        assert!(modern.get("elicitationId").is_none());
        let p2 = ElicitRequestParams::from_value(&modern).unwrap();
        assert!(matches!(
            p2,
            ElicitRequestParams::Url(UrlParams {
                elicitation_id: None,
                ..
            })
        ));
    }

    #[test]
    fn unusable_params_say_why() {
        let e = ElicitRequestParams::from_value(&json!({"mode":"url","message":"m"}));
        assert_eq!(e, Err(ParamsError::NoUrl));
        assert!(e.unwrap_err().to_string().contains("url"));
        assert_eq!(
            ElicitRequestParams::from_value(&json!({"mode":"video","message":"m"})),
            Err(ParamsError::UnknownMode("\"video\"".into()))
        );
        assert_eq!(
            ElicitRequestParams::from_value(&json!(3)),
            Err(ParamsError::NotAnObject)
        );
    }

    #[test]
    fn elicit_result_wire_shape() {
        let r: ElicitResult = serde_json::from_value(json!({"action":"decline"})).unwrap();
        assert_eq!(r.action, ElicitAction::Decline);
        assert!(serde_json::from_value::<ElicitResult>(json!({"action":"maybe"})).is_err());
        let mut c = Map::new();
        c.insert("x".into(), json!(30.5));
        assert_eq!(
            ElicitResult::accept(c).to_value(),
            json!({"action":"accept","content":{"x":30.5}})
        );
    }
}
