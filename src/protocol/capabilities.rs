//! Client capabilities, and which elicitation modes they allow.
//!
//! `"elicitation": {}` means form only (kept for backward compatibility);
//! no `elicitation` key means the server must not elicit at all.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `ClientCapabilities`: the keys elicitkit reads, with every other key kept verbatim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// `elicitation: {form?, url?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// `sampling` (deprecated in 2026-07-28), kept opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// `roots` (deprecated in 2026-07-28), kept opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Value>,
    /// Any other capability (`experimental`, `extensions`, `tasks`, ...).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `elicitation: {form?: {}, url?: {}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Present when form mode is declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Map<String, Value>>,
    /// Present when URL mode is declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Map<String, Value>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The elicitation modes a client accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ElicitModes {
    /// Form mode allowed.
    pub form: bool,
    /// URL mode allowed.
    pub url: bool,
}

impl ElicitModes {
    /// True when any mode is allowed.
    pub fn any(self) -> bool {
        self.form || self.url
    }
}

impl ClientCapabilities {
    /// No optional capabilities: `{}`.
    pub fn none() -> Self {
        Self::default()
    }

    /// `{"elicitation": {}}`: the backward-compatible spelling of form only.
    pub fn elicitation_empty() -> Self {
        Self {
            elicitation: Some(ElicitationCapability::default()),
            ..Self::default()
        }
    }

    /// Declares exactly the given modes (`{"elicitation":{"form":{},"url":{}}}` and so on).
    pub fn with_modes(form: bool, url: bool) -> Self {
        Self {
            elicitation: Some(ElicitationCapability {
                form: form.then(Map::new),
                url: url.then(Map::new),
                other: Map::new(),
            }),
            ..Self::default()
        }
    }

    /// Which elicitation modes these capabilities allow.
    pub fn elicit_modes(&self) -> ElicitModes {
        match &self.elicitation {
            None => ElicitModes::default(),
            Some(e) if e.form.is_none() && e.url.is_none() => ElicitModes {
                form: true,
                url: false,
            },
            Some(e) => ElicitModes {
                form: e.form.is_some(),
                url: e.url.is_some(),
            },
        }
    }

    /// Reads capabilities from JSON, tolerating anything (non-objects read as none).
    pub fn from_value_lenient(v: &Value) -> Self {
        serde_json::from_value(v.clone()).unwrap_or_default()
    }

    /// As JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_elicitation_means_form_only() {
        let c: ClientCapabilities = serde_json::from_value(json!({"elicitation":{}})).unwrap();
        assert_eq!(
            c.elicit_modes(),
            ElicitModes {
                form: true,
                url: false
            }
        );
        let c: ClientCapabilities =
            serde_json::from_value(json!({"elicitation":{"url":{}}})).unwrap();
        assert_eq!(
            c.elicit_modes(),
            ElicitModes {
                form: false,
                url: true
            }
        );
        let c: ClientCapabilities = serde_json::from_value(json!({"sampling":{}})).unwrap();
        assert!(!c.elicit_modes().any());
    }

    #[test]
    fn round_trips_and_keeps_unknown_keys() {
        let v = json!({"elicitation":{"form":{},"url":{}},"extensions":{"x":{}}});
        let c: ClientCapabilities = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(c.to_value(), v);
        assert_eq!(
            ClientCapabilities::with_modes(true, false).to_value(),
            json!({"elicitation":{"form":{}}})
        );
    }
}
