//! Form content for answers, from the schema engine: valid content, or
//! content that fails the requested schema in one chosen way.
//!
//! A thin adapter over [`crate::schema`], so the flows need not care how a
//! raw `requestedSchema` becomes a model.

use crate::protocol::mrtr::InputRequiredResult;
use crate::schema::{RequestedSchema, generate_invalid, generate_valid};
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::rc::Rc;

pub use crate::schema::InvalidKind;

/// How many parsed schemas each thread keeps (a load run repeats a handful).
const CACHE_SLOTS: usize = 16;

thread_local! {
    static MODELS: RefCell<Vec<(Value, Option<Rc<RequestedSchema>>)>> =
        const { RefCell::new(Vec::new()) };
}

/// The schema engine's model of `requested_schema`, parsed once per thread
/// per distinct schema (most recent first; comparing JSON is cheaper than
/// parsing and validating it again).
fn model_of(requested_schema: &Value) -> Option<Rc<RequestedSchema>> {
    MODELS.with(|cell| {
        let mut cache = cell.borrow_mut();
        if let Some(i) = cache.iter().position(|(v, _)| v == requested_schema) {
            let entry = cache.remove(i);
            let model = entry.1.clone();
            cache.insert(0, entry);
            return model;
        }
        let model = RequestedSchema::from_value(requested_schema).0.map(Rc::new);
        cache.insert(0, (requested_schema.clone(), model.clone()));
        cache.truncate(CACHE_SLOTS);
        model
    })
}

/// Content that satisfies `requested_schema` (deterministic in `seed`). A
/// schema the engine cannot model at all gets an empty object.
pub fn valid_content(requested_schema: &Value, seed: u64) -> Map<String, Value> {
    match model_of(requested_schema) {
        Some(model) => generate_valid(&model, seed),
        None => Map::new(),
    }
}

/// Lays `pins` (answers pinned by field name) over `content`, for the fields
/// `requested_schema` has; other pins are left for other forms.
pub fn pin(content: &mut Map<String, Value>, requested_schema: &Value, pins: &Map<String, Value>) {
    let Some(props) = requested_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return;
    };
    for (k, v) in pins {
        if props.contains_key(k) {
            content.insert(k.clone(), v.clone());
        }
    }
}

/// Content that fails `requested_schema` in the way `kind` names, or `None`
/// when the schema cannot express that failure (or cannot be modelled).
pub fn invalid_content(
    requested_schema: &Value,
    kind: InvalidKind,
    seed: u64,
) -> Option<Map<String, Value>> {
    let model = model_of(requested_schema)?;
    generate_invalid(&model, kind, seed)
}

/// Valid answers for every input request of an `input_required` result:
/// form content generated from the schema, bare consent for URL mode,
/// empty answers for roots and sampling.
pub fn answers_for(ir: &InputRequiredResult, seed: u64) -> Map<String, Value> {
    let mut out = Map::new();
    for (i, (key, req)) in ir.input_requests.iter().flatten().enumerate() {
        let answer = match req.method.as_str() {
            "elicitation/create" => match req.params.get("mode").and_then(Value::as_str) {
                Some("url") => json!({"action": "accept"}),
                _ => {
                    let schema = req.params.get("requestedSchema").unwrap_or(&Value::Null);
                    json!({"action": "accept", "content": valid_content(schema, seed ^ i as u64)})
                }
            },
            "roots/list" => json!({"roots": []}),
            _ => {
                json!({"role":"assistant","content":{"type":"text","text":"elicitkit"},"model":"elicitkit"})
            }
        };
        out.insert(key.clone(), answer);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::validate_content;

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
        // Cached and uncached answers agree, and many schemas evict cleanly.
        assert_eq!(valid_content(&schema(), 9), valid_content(&schema(), 9));
        for i in 0..40 {
            let s = json!({"type":"object","properties":{format!("p{i}"):{"type":"boolean"}}});
            assert!(valid_content(&s, 1).contains_key(&format!("p{i}")));
        }
        assert!(valid_content(&schema(), 1).contains_key("env"));
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
