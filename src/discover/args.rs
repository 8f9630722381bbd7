//! Tool arguments from a tool's `inputSchema` (JSON Schema): only the
//! required properties (optional ones are left out, so no constant the
//! server never asked for repeats across calls), every value valid for its
//! schema (`enum`, `const`, `format`, bounds, lengths, `pattern`, nested
//! objects and arrays, local `$ref`s), and every free-form value unique per
//! call number, so two calls never share an id-like argument by accident.

use crate::schema::pattern::{self, Lengths};
use serde_json::{Map, Value, json};

/// Deepest nesting (and `$ref` chain) followed.
const MAX_DEPTH: usize = 8;

/// Arguments for call number `call` (0, 1, ...) of a tool with this
/// `inputSchema`. Calls with different numbers differ in every free-form
/// value; the same number always gives the same arguments.
pub fn arguments(input_schema: &Value, call: u64) -> Map<String, Value> {
    match Gen::new(input_schema, call).value(input_schema, "", 0) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Whether arguments for different calls differ at all (a schema of only
/// booleans or single-value enums does not vary).
pub fn varies(input_schema: &Value) -> bool {
    arguments(input_schema, 0) != arguments(input_schema, 1)
}

struct Gen<'a> {
    root: &'a Value,
    call: u64,
}

impl<'a> Gen<'a> {
    fn new(root: &'a Value, call: u64) -> Self {
        Gen { root, call }
    }

    /// Follows a local `$ref` (`#/$defs/x`, `#/definitions/x`, any JSON pointer).
    fn resolve(&self, schema: &'a Value, depth: usize) -> &'a Value {
        let mut s = schema;
        for _ in 0..MAX_DEPTH.saturating_sub(depth) {
            match s
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix('#'))
            {
                Some(ptr) => match self.root.pointer(ptr) {
                    Some(target) => s = target,
                    None => break,
                },
                None => break,
            }
        }
        s
    }

    fn value(&self, schema: &Value, name: &str, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        let schema = self.resolve(schema, depth);
        if let Some(c) = schema.get("const") {
            return c.clone();
        }
        if let Some(e) = schema
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter(|v| !v.is_null()).collect::<Vec<_>>())
            .filter(|a| !a.is_empty())
        {
            return e[(self.call % e.len() as u64) as usize].clone();
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branch) = schema.get(key).and_then(Value::as_array).and_then(|a| {
                a.iter()
                    .find(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            }) {
                return self.value(branch, name, depth + 1);
            }
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            return self.value(&merge_all_of(schema, all, self, depth), name, depth + 1);
        }
        match type_of(schema) {
            "object" => self.object(schema, depth),
            "array" => {
                let items = schema.get("items").unwrap_or(&Value::Null);
                let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                Value::Array(
                    (0..n.min(16))
                        .map(|i| {
                            Gen::new(self.root, self.call * 16 + i).value(items, name, depth + 1)
                        })
                        .collect(),
                )
            }
            "integer" => self.number(schema, true),
            "number" => self.number(schema, false),
            "boolean" => schema.get("default").cloned().unwrap_or(Value::Bool(true)),
            "null" => Value::Null,
            _ => Value::String(self.string(schema, name)),
        }
    }

    fn object(&self, schema: &Value, depth: usize) -> Value {
        let props = schema.get("properties").and_then(Value::as_object);
        let mut out = Map::new();
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let sub = props.and_then(|p| p.get(req)).unwrap_or(&Value::Null);
            out.insert(req.to_owned(), self.value(sub, req, depth + 1));
        }
        Value::Object(out)
    }

    fn number(&self, schema: &Value, integer: bool) -> Value {
        let f = |k: &str| schema.get(k).and_then(Value::as_f64);
        let mut lo = f("minimum").unwrap_or(1.0);
        if let Some(x) = f("exclusiveMinimum") {
            lo = lo.max(x + 1.0);
        }
        let mut hi = f("maximum").unwrap_or(lo + 1000.0);
        if let Some(x) = f("exclusiveMaximum") {
            hi = hi.min(x - 1.0);
        }
        if lo > hi {
            // Only a fraction fits (e.g. 0 < x < 1), or the bounds contradict.
            let mid = (f("minimum").or(f("exclusiveMinimum")).unwrap_or(0.0)
                + f("maximum").or(f("exclusiveMaximum")).unwrap_or(1.0))
                / 2.0;
            return if integer {
                json!(mid.round() as i64)
            } else {
                json!(mid)
            };
        }
        let (lo, hi) = (lo.ceil(), hi.floor());
        let span = (hi - lo).max(0.0) as u64 + 1;
        let mut v = lo + (self.call % span) as f64;
        if let Some(m) = f("multipleOf").filter(|m| *m > 0.0) {
            v = ((v / m).ceil() * m).min(hi);
        }
        if integer || v.fract() == 0.0 {
            json!(v as i64)
        } else {
            json!(v)
        }
    }

    fn string(&self, schema: &Value, name: &str) -> String {
        let n = self.call;
        let lower = name.to_ascii_lowercase();
        let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
        let by_format = match format {
            "email" | "idn-email" => Some(format!("elicitkit+{n}@example.com")),
            "uri" | "url" | "iri" | "uri-reference" => {
                Some(format!("https://example.com/elicitkit/{n}"))
            }
            "date" => Some(date(n)),
            "date-time" => Some(format!("{}T10:00:00Z", date(n))),
            "time" => Some(format!("10:{:02}:00", n % 60)),
            "uuid" => Some(format!("00000000-0000-4000-8000-{:012x}", n + 1)),
            "ipv4" => Some(format!("192.0.2.{}", 1 + n % 254)),
            "ipv6" => Some(format!("2001:db8::{:x}", n + 1)),
            "hostname" | "idn-hostname" => Some(format!("host{n}.example.com")),
            _ => None,
        };
        let by_name = || {
            if lower.contains("email") {
                Some(format!("elicitkit+{n}@example.com"))
            } else if lower.ends_with("url") || lower.ends_with("uri") || lower.contains("link") {
                Some(format!("https://example.com/elicitkit/{n}"))
            } else if lower.contains("date") {
                Some(date(n))
            } else {
                None
            }
        };
        let stem: String = lower
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(12)
            .collect();
        let plain = if stem.is_empty() {
            format!("elicitkit-{n}")
        } else {
            format!("elicitkit-{stem}-{n}")
        };
        let preferred: Vec<String> = by_format
            .into_iter()
            .chain(by_name())
            .chain([
                plain,
                format!("elicitkit{n}"),
                format!("ek{n}"),
                n.to_string(),
            ])
            .collect();
        let lengths = Lengths {
            min: schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize,
            max: schema
                .get("maxLength")
                .and_then(Value::as_u64)
                .map_or(usize::MAX, |m| m as usize),
        };
        if let Some(p) = schema.get("pattern").and_then(Value::as_str)
            && let Some(v) = pattern::sample(p, false, lengths, &preferred, n)
        {
            return v;
        }
        let first = preferred[0].clone();
        fit_length(first, lengths, n)
    }
}

/// `allOf` folded into one schema: the parent's keys, then every branch's
/// properties and required names.
fn merge_all_of(parent: &Value, all: &[Value], g: &Gen<'_>, depth: usize) -> Value {
    let mut out = parent.as_object().cloned().unwrap_or_default();
    out.remove("allOf");
    let mut props = out
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut required: Vec<Value> = out
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for b in all {
        let b = g.resolve(b, depth);
        if let Some(p) = b.get("properties").and_then(Value::as_object) {
            props.extend(p.clone());
        }
        if let Some(r) = b.get("required").and_then(Value::as_array) {
            required.extend(r.iter().cloned());
        }
        for (k, v) in b.as_object().into_iter().flatten() {
            if !matches!(k.as_str(), "properties" | "required") {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    if !props.is_empty() {
        out.insert("properties".into(), Value::Object(props));
    }
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Value::Object(out)
}

/// The schema's type: `type` (first non-null of a list), else inferred.
fn type_of(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(s)) => s,
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ if schema.get("minimum").is_some() || schema.get("maximum").is_some() => "number",
        _ => "string",
    }
}

/// `2030-01-01` plus `n` days (within a 28-day month, so always valid).
fn date(n: u64) -> String {
    let month = 1 + (n / 28) % 12;
    let day = 1 + n % 28;
    format!("2030-{month:02}-{day:02}")
}

/// Pads or cuts `s` to fit `lengths`, keeping the call number at its end.
fn fit_length(mut s: String, lengths: Lengths, n: u64) -> String {
    let count = s.chars().count();
    if count < lengths.min {
        s.extend(std::iter::repeat_n('x', lengths.min - count));
    }
    if s.chars().count() > lengths.max {
        let tail = n.to_string();
        if tail.len() >= lengths.max {
            return tail.chars().rev().take(lengths.max).collect::<String>();
        }
        let keep = lengths.max - tail.len();
        s = s.chars().take(keep).collect::<String>() + &tail;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_required_properties_and_valid_values() {
        let schema = json!({"type":"object","properties":{
            "item":{"type":"string"},
            "quantity":{"type":"integer","minimum":1,"maximum":10},
            "size":{"type":"string","enum":["S","M","L"]},
            "mail":{"type":"string","format":"email"},
            "note":{"type":"string"}},
            "required":["item","quantity","size","mail"]});
        let a = arguments(&schema, 0);
        assert_eq!(a.len(), 4, "{a:?}");
        assert!(!a.contains_key("note"), "optional arguments are left out");
        assert_eq!(a["item"], "elicitkit-item-0");
        assert_eq!(a["quantity"], 1);
        assert_eq!(a["size"], "S");
        assert_eq!(a["mail"], "elicitkit+0@example.com");
        let b = arguments(&schema, 1);
        assert_ne!(a["item"], b["item"], "free-form values are unique per call");
        assert_eq!(b["quantity"], 2);
        assert!(varies(&schema));
        assert!(!varies(
            &json!({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})
        ));
        assert!(arguments(&json!({"type":"object"}), 0).is_empty());
        assert!(arguments(&json!(null), 0).is_empty());
    }

    #[test]
    fn constraints_nested_schemas_and_refs() {
        let schema = json!({"type":"object","$defs":{"code":{"type":"string","pattern":"^[A-Z]{3}$"}},
            "properties":{
                "from":{"$ref":"#/$defs/code"},
                "when":{"type":"string","format":"date"},
                "ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
                "tags":{"type":"array","minItems":2,"items":{"type":"string","maxLength":4}},
                "who":{"type":"object","properties":{"id":{"type":"string","minLength":20},"x":{"type":"string"}},"required":["id"]},
                "pick":{"anyOf":[{"type":"null"},{"type":"integer","minimum":5,"maximum":5}]},
                "all":{"allOf":[{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]}]}
            },
            "required":["from","when","ratio","tags","who","pick","all"]});
        for call in 0..4 {
            let a = arguments(&schema, call);
            let from = a["from"].as_str().unwrap();
            assert_eq!(
                pattern::matches("^[A-Z]{3}$", from, false),
                Some(true),
                "{from}"
            );
            assert_eq!(a["when"].as_str().unwrap().len(), 10);
            let r = a["ratio"].as_f64().unwrap();
            assert!(r > 0.0 && r < 1.0, "{r}");
            let tags = a["tags"].as_array().unwrap();
            assert_eq!(tags.len(), 2);
            assert!(
                tags.iter()
                    .all(|t| t.as_str().unwrap().chars().count() <= 4),
                "{tags:?}"
            );
            assert!(a["who"]["id"].as_str().unwrap().len() >= 20);
            assert!(a["who"].get("x").is_none());
            assert_eq!(a["pick"], 5);
            assert_eq!(a["all"]["a"], true);
        }
    }

    #[test]
    fn a_self_referencing_schema_ends() {
        let schema =
            json!({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]});
        let a = arguments(&schema, 0);
        assert!(a.contains_key("next"));
    }
}
