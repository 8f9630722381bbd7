//! Validation of an `ElicitResult.content` object against a parsed schema.
//!
//! Every finding's rule id maps 1:1 to an [`InvalidKind`]. Choices:
//! - any JSON number satisfies `number` (a decimal like `30.5` is fine);
//! - `integer` needs a value without fractional part; `30.0` counts as an
//!   integer (JSON Schema 2020-12 semantics), `30.5` is `WrongType`;
//! - lengths count Unicode scalar values (`chars()`), as JSON Schema does;
//! - multi-select items may repeat (the spec does not say `uniqueItems`);
//! - a property the schema does not declare is a SHOULD finding
//!   (`content-unknown-property`): the spec says content "matches the
//!   schema" but the schema does not forbid extra keys. After
//!   [`MAX_UNKNOWN_REPORTED`] of them the rest are summarised in one finding;
//! - `null` is a wrong type, not a missing value.
//!
//! Pointers are JSON Pointers into the `content` object (`/age`, `/tags/1`).

use serde_json::{Map, Value};

use super::formats::matches_format;
use super::limits::MAX_UNKNOWN_REPORTED;
use super::model::{EnumOption, FieldSchema, RequestedSchema};
use super::parse::is_integral;
use crate::findings::{Finding, Severity, pointer_push};

/// Why a content value is invalid; one rule id each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InvalidKind {
    /// A `required` field is absent.
    MissingRequired,
    /// The value has the wrong JSON type (or a non-integer for `integer`).
    WrongType,
    /// A number lies outside `minimum`/`maximum`.
    OutOfRange,
    /// A string is shorter than `minLength`.
    TooShort,
    /// A string is longer than `maxLength`.
    TooLong,
    /// A string does not match its `format`.
    BadFormat,
    /// A select value is not one of the options.
    NotInEnum,
    /// A multi-select has fewer than `minItems` items.
    TooFewItems,
    /// A multi-select has more than `maxItems` items.
    TooManyItems,
    /// A property the schema does not declare (SHOULD, not MUST).
    UnknownProperty,
}

impl InvalidKind {
    /// Every kind, in declaration order.
    pub const ALL: [InvalidKind; 10] = [
        InvalidKind::MissingRequired,
        InvalidKind::WrongType,
        InvalidKind::OutOfRange,
        InvalidKind::TooShort,
        InvalidKind::TooLong,
        InvalidKind::BadFormat,
        InvalidKind::NotInEnum,
        InvalidKind::TooFewItems,
        InvalidKind::TooManyItems,
        InvalidKind::UnknownProperty,
    ];

    /// The stable rule id used in findings.
    pub fn rule(&self) -> &'static str {
        match self {
            InvalidKind::MissingRequired => "content-missing-required",
            InvalidKind::WrongType => "content-wrong-type",
            InvalidKind::OutOfRange => "content-out-of-range",
            InvalidKind::TooShort => "content-too-short",
            InvalidKind::TooLong => "content-too-long",
            InvalidKind::BadFormat => "content-bad-format",
            InvalidKind::NotInEnum => "content-not-in-enum",
            InvalidKind::TooFewItems => "content-too-few-items",
            InvalidKind::TooManyItems => "content-too-many-items",
            InvalidKind::UnknownProperty => "content-unknown-property",
        }
    }

    /// The severity its findings carry.
    pub fn severity(&self) -> Severity {
        match self {
            InvalidKind::UnknownProperty => Severity::Should,
            _ => Severity::Must,
        }
    }

    /// The kind behind a rule id, if it is one of ours.
    pub fn from_rule(rule: &str) -> Option<InvalidKind> {
        InvalidKind::ALL.into_iter().find(|k| k.rule() == rule)
    }
}

fn push(out: &mut Vec<Finding>, kind: InvalidKind, pointer: String, message: String) {
    out.push(Finding {
        severity: kind.severity(),
        pointer,
        rule: kind.rule().to_string(),
        message,
    });
}

/// Validates a `content` value (normally an object) against `schema`.
///
/// A non-object `content` is one `WrongType` finding at pointer `""`.
pub fn validate_content(schema: &RequestedSchema, content: &Value) -> Vec<Finding> {
    match content.as_object() {
        Some(map) => validate_content_map(schema, map),
        None => {
            let mut out = Vec::new();
            push(
                &mut out,
                InvalidKind::WrongType,
                String::new(),
                "content must be a JSON object".into(),
            );
            out
        }
    }
}

/// Validates a `content` object against `schema`.
pub fn validate_content_map(
    schema: &RequestedSchema,
    content: &Map<String, Value>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for name in &schema.required {
        if !content.contains_key(name) {
            push(
                &mut out,
                InvalidKind::MissingRequired,
                pointer_push("", name),
                format!("required field \"{name}\" is missing"),
            );
        }
    }
    let mut known = 0usize;
    for (name, field) in &schema.properties {
        if let Some(v) = content.get(name) {
            known += 1;
            check_value(field, v, name, &mut out);
        }
    }
    if known < content.len() {
        let mut reported = 0usize;
        let mut extra = 0usize;
        for key in content.keys() {
            if schema.field(key).is_some() {
                continue;
            }
            extra += 1;
            if reported < MAX_UNKNOWN_REPORTED {
                reported += 1;
                push(
                    &mut out,
                    InvalidKind::UnknownProperty,
                    pointer_push("", key),
                    format!("\"{key}\" is not a property of the requested schema"),
                );
            }
        }
        if extra > reported {
            push(
                &mut out,
                InvalidKind::UnknownProperty,
                String::new(),
                format!("{} more unknown properties not listed", extra - reported),
            );
        }
    }
    out
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn in_options(options: &[EnumOption], s: &str) -> bool {
    options.iter().any(|o| o.value == s)
}

fn check_value(field: &FieldSchema, v: &Value, name: &str, out: &mut Vec<Finding>) {
    let wrong = |out: &mut Vec<Finding>, want: &str| {
        push(
            out,
            InvalidKind::WrongType,
            pointer_push("", name),
            format!("\"{name}\" must be {want}, got {}", kind_of(v)),
        )
    };
    match field {
        FieldSchema::String(f) => {
            let Some(s) = v.as_str() else {
                return wrong(out, "a string");
            };
            if f.min_length.is_some() || f.max_length.is_some() {
                let len = s.chars().count() as u64;
                if let Some(m) = f.min_length.filter(|m| len < *m) {
                    push(
                        out,
                        InvalidKind::TooShort,
                        pointer_push("", name),
                        format!("\"{name}\" has {len} characters, fewer than minLength {m}"),
                    );
                }
                if let Some(m) = f.max_length.filter(|m| len > *m) {
                    push(
                        out,
                        InvalidKind::TooLong,
                        pointer_push("", name),
                        format!("\"{name}\" has {len} characters, more than maxLength {m}"),
                    );
                }
            }
            if let Some(fmt) = f.format
                && !matches_format(fmt, s)
            {
                push(
                    out,
                    InvalidKind::BadFormat,
                    pointer_push("", name),
                    format!("\"{name}\" is not a valid `{}`", fmt.as_str()),
                );
            }
        }
        FieldSchema::Number(f) => {
            let Some(n) = v.as_number() else {
                return wrong(out, if f.integer { "an integer" } else { "a number" });
            };
            if f.integer && !is_integral(n) {
                return wrong(out, "an integer");
            }
            let x = n.as_f64().unwrap_or(0.0);
            let below = f
                .minimum
                .as_ref()
                .and_then(|m| m.as_f64())
                .filter(|m| x < *m);
            let above = f
                .maximum
                .as_ref()
                .and_then(|m| m.as_f64())
                .filter(|m| x > *m);
            if below.is_some() || above.is_some() {
                push(
                    out,
                    InvalidKind::OutOfRange,
                    pointer_push("", name),
                    format!("\"{name}\" = {n} lies outside minimum/maximum"),
                );
            }
        }
        FieldSchema::Boolean(_) => {
            if !v.is_boolean() {
                wrong(out, "a boolean");
            }
        }
        FieldSchema::SingleSelect(f) => {
            let Some(s) = v.as_str() else {
                return wrong(out, "a string");
            };
            if !in_options(&f.options, s) {
                push(
                    out,
                    InvalidKind::NotInEnum,
                    pointer_push("", name),
                    format!("\"{name}\" is not one of the offered options"),
                );
            }
        }
        FieldSchema::MultiSelect(f) => {
            let Some(items) = v.as_array() else {
                return wrong(out, "an array of strings");
            };
            let base = pointer_push("", name);
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    None => push(
                        out,
                        InvalidKind::WrongType,
                        pointer_push(&base, &i.to_string()),
                        format!("\"{name}\" items must be strings, got {}", kind_of(item)),
                    ),
                    Some(s) if !in_options(&f.options, s) => push(
                        out,
                        InvalidKind::NotInEnum,
                        pointer_push(&base, &i.to_string()),
                        format!("\"{name}\" item is not one of the offered options"),
                    ),
                    Some(_) => {}
                }
            }
            let n = items.len() as u64;
            if let Some(m) = f.min_items.filter(|m| n < *m) {
                push(
                    out,
                    InvalidKind::TooFewItems,
                    base.clone(),
                    format!("\"{name}\" has {n} items, fewer than minItems {m}"),
                );
            }
            if let Some(m) = f.max_items.filter(|m| n > *m) {
                push(
                    out,
                    InvalidKind::TooManyItems,
                    base,
                    format!("\"{name}\" has {n} items, more than maxItems {m}"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse::parse_schema;
    use serde_json::json;

    fn schema() -> RequestedSchema {
        parse_schema(&json!({"type":"object","properties":{
            "name":{"type":"string","minLength":2,"maxLength":5},
            "mail":{"type":"string","format":"email"},
            "age":{"type":"integer","minimum":18,"maximum":130},
            "w":{"type":"number","maximum":10},
            "ok":{"type":"boolean"},
            "c":{"type":"string","oneOf":[{"const":"r","title":"Red"}]},
            "tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":1,"maxItems":2}},
            "required":["name","age"]}))
        .0
        .expect("model")
    }

    fn kinds(content: Value) -> Vec<(String, InvalidKind)> {
        validate_content(&schema(), &content)
            .into_iter()
            .map(|f| {
                (
                    f.pointer,
                    InvalidKind::from_rule(&f.rule).expect("known rule"),
                )
            })
            .collect()
    }

    #[test]
    fn valid_content_has_no_findings() {
        assert!(
            kinds(
                json!({"name":"Ann","age":30,"w":9.5,"ok":true,"c":"r","tags":["a","a"],
                              "mail":"a@b.co"})
            )
            .is_empty()
        );
        assert!(kinds(json!({"name":"éééé","age":30.0})).is_empty());
    }

    #[test]
    fn each_kind_is_reported_with_its_pointer() {
        use InvalidKind::*;
        assert_eq!(
            kinds(json!({"age":30})),
            [("/name".into(), MissingRequired)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":30.5})),
            [("/age".into(), WrongType)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":"30"})),
            [("/age".into(), WrongType)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":17})),
            [("/age".into(), OutOfRange)]
        );
        assert_eq!(
            kinds(json!({"name":"A","age":18})),
            [("/name".into(), TooShort)]
        );
        assert_eq!(
            kinds(json!({"name":"Annabel","age":18})),
            [("/name".into(), TooLong)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"mail":"x"})),
            [("/mail".into(), BadFormat)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"c":"g"})),
            [("/c".into(), NotInEnum)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"tags":["a","z"]})),
            [("/tags/1".into(), NotInEnum)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"tags":[]})),
            [("/tags".into(), TooFewItems)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"tags":["a","b","a"]})),
            [("/tags".into(), TooManyItems)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"x":1})),
            [("/x".into(), UnknownProperty)]
        );
        assert_eq!(
            kinds(json!({"name":"Ann","age":18,"ok":null})),
            [("/ok".into(), WrongType)]
        );
        assert_eq!(kinds(json!([])), [("".into(), WrongType)]);
    }

    #[test]
    fn unknown_properties_are_summarised_past_the_cap() {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), json!("Ann"));
        m.insert("age".into(), json!(20));
        for i in 0..(MAX_UNKNOWN_REPORTED + 10) {
            m.insert(format!("x{i}"), json!(i));
        }
        let f = validate_content(&schema(), &Value::Object(m));
        assert_eq!(f.len(), MAX_UNKNOWN_REPORTED + 1);
        assert!(f.iter().all(|f| f.severity == Severity::Should));
        assert!(f.last().is_some_and(|f| f.message.starts_with("10 more")));
    }

    #[test]
    fn rules_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for k in InvalidKind::ALL {
            assert!(seen.insert(k.rule()));
            assert_eq!(InvalidKind::from_rule(k.rule()), Some(k));
        }
        assert_eq!(InvalidKind::from_rule("schema-not-object"), None);
    }
}
