//! Form content for answers, from the schema engine: valid content, or
//! content that fails the requested schema in one chosen way.
//!
//! A thin adapter over [`crate::schema`], so the flows need not care how a
//! raw `requestedSchema` becomes a model.

use crate::schema::{RequestedSchema, generate_invalid, generate_valid};
use serde_json::{Map, Value};

pub use crate::schema::InvalidKind;

/// Content that satisfies `requested_schema` (deterministic in `seed`). A
/// schema the engine cannot model at all gets an empty object.
pub fn valid_content(requested_schema: &Value, seed: u64) -> Map<String, Value> {
    match RequestedSchema::from_value(requested_schema).0 {
        Some(model) => generate_valid(&model, seed),
        None => Map::new(),
    }
}

/// Content that fails `requested_schema` in the way `kind` names, or `None`
/// when the schema cannot express that failure (or cannot be modelled).
pub fn invalid_content(
    requested_schema: &Value,
    kind: InvalidKind,
    seed: u64,
) -> Option<Map<String, Value>> {
    let model = RequestedSchema::from_value(requested_schema).0?;
    generate_invalid(&model, kind, seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::validate_content;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type":"object","properties":{
            "env":{"type":"string","enum":["staging","prod"]},
            "confirm":{"type":"boolean"},
            "age":{"type":"integer","minimum":18,"maximum":130},
            "email":{"type":"string","format":"email"}
        },"required":["env","confirm"]})
    }

    #[test]
    fn valid_content_validates() {
        let model = RequestedSchema::from_value(&schema()).0.unwrap();
        let c = valid_content(&schema(), 1);
        assert!(c.contains_key("env"));
        assert!(validate_content(&model, &Value::Object(c)).is_empty());
        assert!(valid_content(&json!(42), 1).is_empty());
    }

    #[test]
    fn invalid_content_breaks_the_named_rule() {
        let model = RequestedSchema::from_value(&schema()).0.unwrap();
        let c = invalid_content(&schema(), InvalidKind::NotInEnum, 3).unwrap();
        let findings = validate_content(&model, &Value::Object(c));
        assert!(!findings.is_empty());
        assert!(
            findings
                .iter()
                .all(|f| f.rule == InvalidKind::NotInEnum.rule())
        );
        assert!(
            invalid_content(
                &json!({"type":"object","properties":{}}),
                InvalidKind::OutOfRange,
                1
            )
            .is_none()
        );
    }
}
