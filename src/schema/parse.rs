//! Lenient parsing of a `requestedSchema` JSON value, which is also its
//! validation: [`parse_schema`] builds the model from whatever is usable and
//! reports everything else as [`Finding`]s; [`validate_schema`] keeps only the
//! findings.
//!
//! Severity choices:
//! - MUST for anything that leaves the eight spec shapes (nested objects,
//!   arrays other than the enum arrays, unknown `type` or `format`, keyword
//!   values of the wrong JSON type, bad `required`, defaults that do not fit,
//!   `min > max`, empty enums, options without `const`/`title`, `enumNames`
//!   of the wrong length) and for fields no value can satisfy
//!   (`schema-unsatisfiable-field`, e.g. `format: date` with `maxLength: 5`).
//! - MUST `schema-too-large` / `schema-too-deep` when the input exceeds
//!   elicitkit's bounds ([`super::limits`]); the excess is not parsed.
//! - SHOULD for `pattern` (shown on a spec page, absent from `schema.ts`),
//!   other unknown keywords and duplicate enum values.
//! - INFO for legacy `enumNames`: still a member of the `schema.ts` union,
//!   so a server using it conforms; SEP-1330 only marks it legacy.
//!
//! Offending parts are left out of the model (a bad default is dropped,
//! inverted bounds are dropped, an unusable field is dropped), so the model
//! is always internally consistent.

use serde_json::{Map, Number, Value};

use super::formats::{format_admits_range, matches_format};
use super::limits::{MAX_BOUND, MAX_DEPTH, MAX_OPTIONS, MAX_PROPERTIES};
use super::model::{
    BooleanField, EnumOption, FieldSchema, MultiSelectField, MultiSelectStyle, NumberField,
    RequestedSchema, SingleSelectField, SingleSelectStyle, StringField, StringFormat,
};
use crate::findings::{Finding, Severity, pointer_push};

/// Every rule id [`validate_schema`] can report.
pub const SCHEMA_RULES: &[&str] = &[
    "schema-not-object",
    "schema-type-not-object",
    "schema-properties-missing",
    "schema-properties-not-object",
    "schema-required-not-string-array",
    "schema-required-unknown-property",
    "schema-property-not-object",
    "schema-missing-type",
    "schema-unsupported-type",
    "schema-nested-object",
    "schema-array-of-objects",
    "schema-unsupported-array",
    "schema-shape-mismatch",
    "schema-keyword-wrong-type",
    "schema-unknown-format",
    "schema-min-greater-than-max",
    "schema-unsatisfiable-field",
    "schema-empty-enum",
    "schema-option-missing-const-title",
    "schema-enum-names-length-mismatch",
    "schema-default-wrong-type",
    "schema-default-out-of-range",
    "schema-default-bad-format",
    "schema-default-not-in-enum",
    "schema-default-wrong-item-count",
    "schema-too-large",
    "schema-too-deep",
    "schema-unsupported-pattern",
    "schema-unknown-keyword",
    "schema-duplicate-enum-value",
    "schema-legacy-enum-names",
];

/// Validates a `requestedSchema`; pointers are JSON Pointers into it.
pub fn validate_schema(schema: &Value) -> Vec<Finding> {
    parse_schema(schema).1
}

/// Builds the model from whatever is usable and reports everything else.
///
/// Returns `None` only when the value is not an object (or too deep).
pub fn parse_schema(schema: &Value) -> (Option<RequestedSchema>, Vec<Finding>) {
    let mut cx = Cx::default();
    let model = cx.root(schema);
    (model, cx.out)
}

impl RequestedSchema {
    /// Lenient parse; see [`parse_schema`].
    pub fn from_value(schema: &Value) -> (Option<RequestedSchema>, Vec<Finding>) {
        parse_schema(schema)
    }
}

/// Depth of a JSON value (scalars are 0), computed without recursion and
/// stopping as soon as `limit` is exceeded.
pub(crate) fn depth_exceeds(v: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        if d > limit {
            return true;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    false
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// True when the number has no fractional part (`30` or `30.0`).
pub(crate) fn is_integral(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

#[derive(Default)]
struct Cx {
    out: Vec<Finding>,
}

impl Cx {
    fn must(&mut self, ptr: &str, rule: &str, msg: String) {
        self.out.push(Finding::new(Severity::Must, ptr, rule, msg));
    }

    fn should(&mut self, ptr: &str, rule: &str, msg: String) {
        self.out
            .push(Finding::new(Severity::Should, ptr, rule, msg));
    }

    fn root(&mut self, v: &Value) -> Option<RequestedSchema> {
        let Some(obj) = v.as_object() else {
            self.must(
                "",
                "schema-not-object",
                format!(
                    "requestedSchema must be a JSON object, got {}",
                    type_name(v)
                ),
            );
            return None;
        };
        if depth_exceeds(v, MAX_DEPTH) {
            self.must(
                "",
                "schema-too-deep",
                format!("requestedSchema nests deeper than {MAX_DEPTH} levels; not parsed"),
            );
            return None;
        }
        let mut model = RequestedSchema::default();
        match obj.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            other => self.must(
                "/type",
                "schema-type-not-object",
                format!(
                    "requestedSchema `type` must be \"object\", got {}",
                    other.map_or("nothing".to_string(), |t| t.to_string())
                ),
            ),
        }
        model.dollar_schema = self.opt_str(obj, "$schema", "");
        match obj.get("properties") {
            None => self.must(
                "/properties",
                "schema-properties-missing",
                "requestedSchema must have `properties` (use {} for a bare confirmation)".into(),
            ),
            Some(Value::Object(props)) => {
                if props.len() > MAX_PROPERTIES {
                    self.must(
                        "/properties",
                        "schema-too-large",
                        format!(
                            "{} properties exceed elicitkit's bound of {MAX_PROPERTIES}; the rest are ignored",
                            props.len()
                        ),
                    );
                }
                for (name, fv) in props.iter().take(MAX_PROPERTIES) {
                    let ptr = pointer_push("/properties", name);
                    if let Some(field) = self.field(fv, &ptr) {
                        model.properties.push((name.clone(), field));
                    }
                }
            }
            Some(other) => self.must(
                "/properties",
                "schema-properties-not-object",
                format!("`properties` must be an object, got {}", type_name(other)),
            ),
        }
        if let Some(req) = obj.get("required") {
            self.required(req, obj, &mut model);
        }
        self.unknown_keys(obj, &["$schema", "type", "properties", "required"], "");
        Some(model)
    }

    fn required(&mut self, req: &Value, obj: &Map<String, Value>, model: &mut RequestedSchema) {
        let Some(items) = req.as_array() else {
            self.must(
                "/required",
                "schema-required-not-string-array",
                format!(
                    "`required` must be an array of strings, got {}",
                    type_name(req)
                ),
            );
            return;
        };
        let declared = obj.get("properties").and_then(Value::as_object);
        for (i, item) in items.iter().enumerate().take(MAX_PROPERTIES) {
            let ptr = pointer_push("/required", &i.to_string());
            let Some(name) = item.as_str() else {
                self.must(
                    &ptr,
                    "schema-required-not-string-array",
                    format!(
                        "`required` entries must be strings, got {}",
                        type_name(item)
                    ),
                );
                continue;
            };
            if !declared.is_some_and(|p| p.contains_key(name)) {
                self.must(
                    &ptr,
                    "schema-required-unknown-property",
                    format!("`required` names \"{name}\", which is not a property"),
                );
                continue;
            }
            // Keep only fields that made it into the model, once each.
            if model.field(name).is_some() && !model.is_required(name) {
                model.required.push(name.to_string());
            }
        }
    }

    fn unknown_keys(&mut self, obj: &Map<String, Value>, allowed: &[&str], ptr: &str) {
        for key in obj.keys() {
            if allowed.contains(&key.as_str()) {
                continue;
            }
            let p = pointer_push(ptr, key);
            if key == "pattern" {
                self.should(
                    &p,
                    "schema-unsupported-pattern",
                    "`pattern` is not part of the elicitation StringSchema in schema.ts; clients may ignore it".into(),
                );
            } else {
                self.should(
                    &p,
                    "schema-unknown-keyword",
                    format!("`{key}` is not a keyword of this field shape; clients may ignore it"),
                );
            }
        }
    }

    fn wrong_type(&mut self, ptr: &str, key: &str, want: &str, got: &Value) {
        self.must(
            &pointer_push(ptr, key),
            "schema-keyword-wrong-type",
            format!("`{key}` must be {want}, got {}", type_name(got)),
        );
    }

    fn opt_str(&mut self, obj: &Map<String, Value>, key: &str, ptr: &str) -> Option<String> {
        match obj.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(ptr, key, "a string", other);
                None
            }
        }
    }

    fn opt_count(&mut self, obj: &Map<String, Value>, key: &str, ptr: &str) -> Option<u64> {
        let v = obj.get(key)?;
        let n = match v {
            Value::Number(n) if is_integral(n) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
            _ => None,
        };
        if n.is_none() {
            self.wrong_type(ptr, key, "a non-negative integer", v);
        }
        n
    }

    fn opt_number(&mut self, obj: &Map<String, Value>, key: &str, ptr: &str) -> Option<Number> {
        match obj.get(key)? {
            Value::Number(n) => Some(n.clone()),
            other => {
                self.wrong_type(ptr, key, "a number", other);
                None
            }
        }
    }

    fn field(&mut self, v: &Value, ptr: &str) -> Option<FieldSchema> {
        let Some(obj) = v.as_object() else {
            self.must(
                ptr,
                "schema-property-not-object",
                format!("a property schema must be an object, got {}", type_name(v)),
            );
            return None;
        };
        let ty = match obj.get("type") {
            None => {
                self.must(
                    &pointer_push(ptr, "type"),
                    "schema-missing-type",
                    "a property needs `type` (string, number, integer, boolean or array)".into(),
                );
                return None;
            }
            Some(Value::String(t)) => t.as_str(),
            Some(other) => {
                self.must(
                    &pointer_push(ptr, "type"),
                    "schema-unsupported-type",
                    format!("`type` must be a single string, got {other}"),
                );
                return None;
            }
        };
        let title = self.opt_str(obj, "title", ptr);
        let description = self.opt_str(obj, "description", ptr);
        let mut field = match ty {
            "string" if obj.contains_key("enum") || obj.contains_key("oneOf") => {
                FieldSchema::SingleSelect(self.single_select(obj, ptr)?)
            }
            "string" => FieldSchema::String(self.string(obj, ptr)),
            "number" | "integer" => FieldSchema::Number(self.number(obj, ptr, ty == "integer")),
            "boolean" => {
                self.unknown_keys(obj, &["type", "title", "description", "default"], ptr);
                let default = match obj.get("default") {
                    None => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(other) => {
                        self.default_wrong_type(ptr, "a boolean", other);
                        None
                    }
                };
                FieldSchema::Boolean(BooleanField {
                    default,
                    ..Default::default()
                })
            }
            "array" => FieldSchema::MultiSelect(self.multi_select(obj, ptr)?),
            "object" => {
                self.must(
                    ptr,
                    "schema-nested-object",
                    "nested objects are not allowed; only top-level primitive properties".into(),
                );
                return None;
            }
            other => {
                self.must(
                    &pointer_push(ptr, "type"),
                    "schema-unsupported-type",
                    format!(
                        "`type` \"{other}\" is none of string, number, integer, boolean, array"
                    ),
                );
                return None;
            }
        };
        match &mut field {
            FieldSchema::String(f) => (f.title, f.description) = (title, description),
            FieldSchema::Number(f) => (f.title, f.description) = (title, description),
            FieldSchema::Boolean(f) => (f.title, f.description) = (title, description),
            FieldSchema::SingleSelect(f) => (f.title, f.description) = (title, description),
            FieldSchema::MultiSelect(f) => (f.title, f.description) = (title, description),
        }
        Some(field)
    }

    fn default_wrong_type(&mut self, ptr: &str, want: &str, got: &Value) {
        self.must(
            &pointer_push(ptr, "default"),
            "schema-default-wrong-type",
            format!("`default` must be {want}, got {}", type_name(got)),
        );
    }

    fn default_out_of_range(&mut self, ptr: &str, why: String) {
        self.must(
            &pointer_push(ptr, "default"),
            "schema-default-out-of-range",
            why,
        );
    }

    /// Drops both bounds and reports when `min > max`.
    fn bounds<T: PartialOrd + std::fmt::Display>(
        &mut self,
        ptr: &str,
        keys: (&str, &str),
        min: &mut Option<T>,
        max: &mut Option<T>,
    ) {
        if let (Some(lo), Some(hi)) = (min.as_ref(), max.as_ref())
            && lo > hi
        {
            self.must(
                ptr,
                "schema-min-greater-than-max",
                format!("`{}` {lo} is greater than `{}` {hi}", keys.0, keys.1),
            );
            *min = None;
            *max = None;
        }
    }

    fn too_large_bound(&mut self, ptr: &str, key: &str, v: &mut Option<u64>) {
        if v.is_some_and(|n| n > MAX_BOUND) {
            self.must(
                &pointer_push(ptr, key),
                "schema-too-large",
                format!("`{key}` exceeds elicitkit's bound of {MAX_BOUND}"),
            );
            *v = None;
        }
    }

    fn string(&mut self, obj: &Map<String, Value>, ptr: &str) -> StringField {
        self.unknown_keys(
            obj,
            &[
                "type",
                "title",
                "description",
                "minLength",
                "maxLength",
                "format",
                "default",
            ],
            ptr,
        );
        let mut min_length = self.opt_count(obj, "minLength", ptr);
        let mut max_length = self.opt_count(obj, "maxLength", ptr);
        self.too_large_bound(ptr, "minLength", &mut min_length);
        self.bounds(
            ptr,
            ("minLength", "maxLength"),
            &mut min_length,
            &mut max_length,
        );
        let mut format = match self.opt_str(obj, "format", ptr) {
            None => None,
            Some(name) => {
                let f = StringFormat::from_name(&name);
                if f.is_none() {
                    self.must(
                        &pointer_push(ptr, "format"),
                        "schema-unknown-format",
                        format!("`format` \"{name}\" is none of email, uri, date, date-time"),
                    );
                }
                f
            }
        };
        if let Some(f) = format
            && !format_admits_range(f, min_length.unwrap_or(0), max_length)
        {
            self.must(
                ptr,
                "schema-unsatisfiable-field",
                format!(
                    "no `{}` value has a length within minLength/maxLength",
                    f.as_str()
                ),
            );
            format = None;
        }
        let default = match obj.get("default") {
            None => None,
            Some(Value::String(s)) => {
                let len = s.chars().count() as u64;
                if min_length.is_some_and(|m| len < m) || max_length.is_some_and(|m| len > m) {
                    self.default_out_of_range(
                        ptr,
                        format!("`default` has {len} characters, outside minLength/maxLength"),
                    );
                    None
                } else if let Some(f) = format.filter(|f| !matches_format(*f, s)) {
                    self.must(
                        &pointer_push(ptr, "default"),
                        "schema-default-bad-format",
                        format!("`default` is not a valid `{}`", f.as_str()),
                    );
                    None
                } else {
                    Some(s.clone())
                }
            }
            Some(other) => {
                self.default_wrong_type(ptr, "a string", other);
                None
            }
        };
        StringField {
            min_length,
            max_length,
            format,
            default,
            ..Default::default()
        }
    }

    fn number(&mut self, obj: &Map<String, Value>, ptr: &str, integer: bool) -> NumberField {
        self.unknown_keys(
            obj,
            &[
                "type",
                "title",
                "description",
                "minimum",
                "maximum",
                "default",
            ],
            ptr,
        );
        let mut minimum = self.opt_number(obj, "minimum", ptr);
        let mut maximum = self.opt_number(obj, "maximum", ptr);
        let (mut lo, mut hi) = (
            minimum.as_ref().and_then(Number::as_f64),
            maximum.as_ref().and_then(Number::as_f64),
        );
        if let (Some(l), Some(h)) = (lo, hi)
            && l > h
        {
            self.must(
                ptr,
                "schema-min-greater-than-max",
                format!("`minimum` {l} is greater than `maximum` {h}"),
            );
            (minimum, maximum, lo, hi) = (None, None, None, None);
        }
        if integer
            && let (Some(l), Some(h)) = (lo, hi)
            && l.ceil() > h.floor()
        {
            self.must(
                ptr,
                "schema-unsatisfiable-field",
                format!("no integer lies within minimum {l} and maximum {h}"),
            );
            minimum = None;
            maximum = None;
            lo = None;
            hi = None;
        }
        let default = match obj.get("default") {
            None => None,
            Some(Value::Number(n)) if integer && !is_integral(n) => {
                self.default_wrong_type(ptr, "an integer", &Value::Number(n.clone()));
                None
            }
            Some(Value::Number(n)) => {
                let x = n.as_f64().unwrap_or(0.0);
                if lo.is_some_and(|l| x < l) || hi.is_some_and(|h| x > h) {
                    self.default_out_of_range(
                        ptr,
                        format!("`default` {n} lies outside minimum/maximum"),
                    );
                    None
                } else {
                    Some(n.clone())
                }
            }
            Some(other) => {
                self.default_wrong_type(ptr, "a number", other);
                None
            }
        };
        NumberField {
            integer,
            minimum,
            maximum,
            default,
            ..Default::default()
        }
    }

    /// Parses an `enum` array of strings; `None` when unusable.
    fn enum_options(&mut self, v: &Value, ptr: &str) -> Option<Vec<EnumOption>> {
        let Some(items) = v.as_array() else {
            self.must(
                ptr,
                "schema-keyword-wrong-type",
                format!("`enum` must be an array of strings, got {}", type_name(v)),
            );
            return None;
        };
        self.option_count(items.len(), ptr)?;
        let mut out: Vec<EnumOption> = Vec::with_capacity(items.len().min(MAX_OPTIONS));
        for (i, item) in items.iter().enumerate().take(MAX_OPTIONS) {
            let p = pointer_push(ptr, &i.to_string());
            match item.as_str() {
                Some(s) => self.push_option(&mut out, s.to_string(), None, &p),
                None => self.must(
                    &p,
                    "schema-keyword-wrong-type",
                    format!("`enum` entries must be strings, got {}", type_name(item)),
                ),
            }
        }
        if out.is_empty() { None } else { Some(out) }
    }

    /// Parses a `oneOf`/`anyOf` array of `{const, title}`; `None` when unusable.
    fn titled_options(&mut self, v: &Value, ptr: &str, key: &str) -> Option<Vec<EnumOption>> {
        let Some(items) = v.as_array() else {
            self.must(
                ptr,
                "schema-keyword-wrong-type",
                format!(
                    "`{key}` must be an array of {{const, title}}, got {}",
                    type_name(v)
                ),
            );
            return None;
        };
        self.option_count(items.len(), ptr)?;
        let mut out: Vec<EnumOption> = Vec::with_capacity(items.len().min(MAX_OPTIONS));
        for (i, item) in items.iter().enumerate().take(MAX_OPTIONS) {
            let p = pointer_push(ptr, &i.to_string());
            let obj = item.as_object();
            let c = obj.and_then(|o| o.get("const")).and_then(Value::as_str);
            let t = obj.and_then(|o| o.get("title")).and_then(Value::as_str);
            match (c, t) {
                (Some(c), Some(t)) => {
                    if let Some(o) = obj {
                        self.unknown_keys(o, &["const", "title"], &p);
                    }
                    self.push_option(&mut out, c.to_string(), Some(t.to_string()), &p);
                }
                _ => self.must(
                    &p,
                    "schema-option-missing-const-title",
                    format!("every `{key}` entry needs a string `const` and a string `title`"),
                ),
            }
        }
        if out.is_empty() { None } else { Some(out) }
    }

    fn option_count(&mut self, n: usize, ptr: &str) -> Option<()> {
        if n == 0 {
            self.must(
                ptr,
                "schema-empty-enum",
                "a select field needs at least one option".into(),
            );
            return None;
        }
        if n > MAX_OPTIONS {
            self.must(
                ptr,
                "schema-too-large",
                format!(
                    "{n} options exceed elicitkit's bound of {MAX_OPTIONS}; the rest are ignored"
                ),
            );
        }
        Some(())
    }

    fn push_option(
        &mut self,
        out: &mut Vec<EnumOption>,
        value: String,
        title: Option<String>,
        p: &str,
    ) {
        if out.iter().any(|o| o.value == value) {
            self.should(
                p,
                "schema-duplicate-enum-value",
                format!("option \"{value}\" appears more than once"),
            );
            return;
        }
        out.push(EnumOption { value, title });
    }

    fn single_select(&mut self, obj: &Map<String, Value>, ptr: &str) -> Option<SingleSelectField> {
        let (style, mut options) = match (obj.get("enum"), obj.get("oneOf")) {
            (Some(_), Some(_)) => {
                self.must(
                    ptr,
                    "schema-shape-mismatch",
                    "a single-select field has either `enum` or `oneOf`, not both".into(),
                );
                return None;
            }
            (Some(e), None) => {
                let style = if obj.contains_key("enumNames") {
                    SingleSelectStyle::LegacyEnumNames
                } else {
                    SingleSelectStyle::Untitled
                };
                (style, self.enum_options(e, &pointer_push(ptr, "enum"))?)
            }
            (None, Some(o)) => (
                SingleSelectStyle::Titled,
                self.titled_options(o, &pointer_push(ptr, "oneOf"), "oneOf")?,
            ),
            (None, None) => return None,
        };
        let mut allowed = vec!["type", "title", "description", "default"];
        allowed.push(if style == SingleSelectStyle::Titled {
            "oneOf"
        } else {
            "enum"
        });
        let mut style = style;
        if style == SingleSelectStyle::LegacyEnumNames {
            allowed.push("enumNames");
            let p = pointer_push(ptr, "enumNames");
            self.out.push(Finding::new(
                Severity::Info,
                &p,
                "schema-legacy-enum-names",
                "`enumNames` is legacy (SEP-1330); prefer `oneOf` with `const`/`title`",
            ));
            let names = obj.get("enumNames").and_then(Value::as_array);
            let enum_len = obj
                .get("enum")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            match names {
                Some(names) if names.iter().all(Value::is_string) => {
                    if names.len() != enum_len {
                        self.must(
                            &p,
                            "schema-enum-names-length-mismatch",
                            format!(
                                "`enumNames` has {} entries but `enum` has {enum_len}",
                                names.len()
                            ),
                        );
                        style = SingleSelectStyle::Untitled;
                    } else if options.len() == enum_len {
                        for (o, n) in options.iter_mut().zip(names) {
                            o.title = n.as_str().map(str::to_string);
                        }
                    } else {
                        // Duplicates or bad entries were dropped; titles no longer line up.
                        style = SingleSelectStyle::Untitled;
                    }
                }
                _ => {
                    self.must(
                        &p,
                        "schema-keyword-wrong-type",
                        "`enumNames` must be an array of strings".into(),
                    );
                    style = SingleSelectStyle::Untitled;
                }
            }
        }
        self.unknown_keys(obj, &allowed, ptr);
        let default = match obj.get("default") {
            None => None,
            Some(Value::String(s)) if options.iter().any(|o| &o.value == s) => Some(s.clone()),
            Some(Value::String(s)) => {
                self.must(
                    &pointer_push(ptr, "default"),
                    "schema-default-not-in-enum",
                    format!("`default` \"{s}\" is not one of the options"),
                );
                None
            }
            Some(other) => {
                self.default_wrong_type(ptr, "a string", other);
                None
            }
        };
        Some(SingleSelectField {
            title: None,
            description: None,
            style,
            options,
            default,
        })
    }

    fn multi_select(&mut self, obj: &Map<String, Value>, ptr: &str) -> Option<MultiSelectField> {
        let items_ptr = pointer_push(ptr, "items");
        let Some(items) = obj.get("items").and_then(Value::as_object) else {
            self.must(
                ptr,
                "schema-unsupported-array",
                "an array property must be a multi-select: `items` with `enum` or `anyOf`".into(),
            );
            return None;
        };
        let item_type = items.get("type").and_then(Value::as_str);
        if item_type == Some("object") || items.contains_key("properties") {
            self.must(
                ptr,
                "schema-array-of-objects",
                "arrays of objects are not allowed; only arrays of enum strings".into(),
            );
            return None;
        }
        let (style, options) = match (items.get("enum"), items.get("anyOf")) {
            (Some(_), Some(_)) => {
                self.must(
                    &items_ptr,
                    "schema-shape-mismatch",
                    "multi-select `items` has either `enum` or `anyOf`, not both".into(),
                );
                return None;
            }
            (Some(e), None) => {
                if item_type != Some("string") {
                    self.must(
                        &pointer_push(&items_ptr, "type"),
                        "schema-shape-mismatch",
                        "untitled multi-select `items` needs `\"type\": \"string\"`".into(),
                    );
                }
                self.unknown_keys(items, &["type", "enum"], &items_ptr);
                let opts = self.enum_options(e, &pointer_push(&items_ptr, "enum"))?;
                (MultiSelectStyle::Untitled, opts)
            }
            (None, Some(a)) => {
                if item_type.is_some_and(|t| t != "string")
                    || items.get("type").is_some_and(|t| !t.is_string())
                {
                    self.must(
                        &pointer_push(&items_ptr, "type"),
                        "schema-shape-mismatch",
                        "titled multi-select `items.type`, when present, must be \"string\"".into(),
                    );
                }
                self.unknown_keys(items, &["type", "anyOf"], &items_ptr);
                let opts = self.titled_options(a, &pointer_push(&items_ptr, "anyOf"), "anyOf")?;
                (MultiSelectStyle::Titled, opts)
            }
            (None, None) => {
                self.must(
                    ptr,
                    "schema-unsupported-array",
                    "an array property must be a multi-select: `items` with `enum` or `anyOf`"
                        .into(),
                );
                return None;
            }
        };
        self.unknown_keys(
            obj,
            &[
                "type",
                "title",
                "description",
                "items",
                "minItems",
                "maxItems",
                "default",
            ],
            ptr,
        );
        let mut min_items = self.opt_count(obj, "minItems", ptr);
        let mut max_items = self.opt_count(obj, "maxItems", ptr);
        self.too_large_bound(ptr, "minItems", &mut min_items);
        self.bounds(
            ptr,
            ("minItems", "maxItems"),
            &mut min_items,
            &mut max_items,
        );
        let default = match obj.get("default") {
            None => None,
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
                let vals: Vec<String> = a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                let n = vals.len() as u64;
                if let Some(bad) = vals
                    .iter()
                    .find(|v| !options.iter().any(|o| &o.value == *v))
                {
                    self.must(
                        &pointer_push(ptr, "default"),
                        "schema-default-not-in-enum",
                        format!("`default` item \"{bad}\" is not one of the options"),
                    );
                    None
                } else if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                    self.must(
                        &pointer_push(ptr, "default"),
                        "schema-default-wrong-item-count",
                        format!("`default` has {n} items, outside minItems/maxItems"),
                    );
                    None
                } else {
                    Some(vals)
                }
            }
            Some(other) => {
                self.default_wrong_type(ptr, "an array of strings", other);
                None
            }
        };
        Some(MultiSelectField {
            title: None,
            description: None,
            style,
            options,
            min_items,
            max_items,
            default,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(v: Value) -> Vec<String> {
        validate_schema(&v).into_iter().map(|f| f.rule).collect()
    }

    #[test]
    fn spec_example_is_clean_and_round_trips() {
        let v = json!({"type":"object","properties":{
            "c":{"type":"array","minItems":1,"maxItems":2,
                 "items":{"anyOf":[{"const":"#F00","title":"Red"},{"const":"#0F0","title":"Green"}]},
                 "default":["#F00"]},
            "age":{"type":"integer","minimum":18,"maximum":130}},
           "required":["c"]});
        let (m, f) = parse_schema(&v);
        assert!(f.is_empty(), "{f:?}");
        let m = m.expect("model");
        assert_eq!(m.properties.len(), 2);
        assert_eq!(m.to_value(), v);
    }

    #[test]
    fn not_an_object() {
        assert_eq!(rules(json!([1])), ["schema-not-object"]);
        assert!(parse_schema(&json!("x")).0.is_none());
    }

    #[test]
    fn nested_and_arrays() {
        let r = rules(json!({"type":"object","properties":{
            "o":{"type":"object","properties":{}},
            "a":{"type":"array","items":{"type":"object"}},
            "n":{"type":"array","items":{"type":"number"}}}}));
        assert_eq!(
            r,
            [
                "schema-array-of-objects",
                "schema-unsupported-array",
                "schema-nested-object"
            ]
        );
    }

    #[test]
    fn defaults_and_bounds() {
        let v = json!({"type":"object","properties":{
            "age":{"type":"integer","minimum":18,"maximum":130,"default":12},
            "n":{"type":"number","minimum":5,"maximum":1},
            "i":{"type":"integer","default":2.5},
            "s":{"type":"string","maxLength":2,"default":"abc"},
            "d":{"type":"string","format":"date","default":"2023-02-30"},
            "e":{"type":"string","enum":["a"],"default":"b"},
            "m":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":1,"default":["a","b"]}}});
        let f = validate_schema(&v);
        let pairs: Vec<(&str, &str)> = f
            .iter()
            .map(|f| (f.pointer.as_str(), f.rule.as_str()))
            .collect();
        assert!(pairs.contains(&("/properties/age/default", "schema-default-out-of-range")));
        assert!(pairs.contains(&("/properties/n", "schema-min-greater-than-max")));
        assert!(pairs.contains(&("/properties/i/default", "schema-default-wrong-type")));
        assert!(pairs.contains(&("/properties/s/default", "schema-default-out-of-range")));
        assert!(pairs.contains(&("/properties/d/default", "schema-default-bad-format")));
        assert!(pairs.contains(&("/properties/e/default", "schema-default-not-in-enum")));
        assert!(pairs.contains(&("/properties/m/default", "schema-default-wrong-item-count")));
        assert_eq!(f.len(), 7, "{f:?}");
        assert!(f.iter().all(|f| f.severity == Severity::Must));
        // The model keeps the fields but drops what was wrong.
        let m = parse_schema(&v).0.expect("model");
        assert_eq!(m.properties.len(), 7);
        assert!(
            m.properties
                .iter()
                .all(|(_, f)| f.default_value().is_none())
        );
    }

    #[test]
    fn pattern_unknown_and_legacy() {
        let f = validate_schema(&json!({"type":"object","properties":{
            "s":{"type":"string","pattern":"^a$","x-ui":1},
            "l":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}}}));
        let got: Vec<(Severity, &str)> = f.iter().map(|f| (f.severity, f.rule.as_str())).collect();
        assert_eq!(
            got,
            [
                (Severity::Info, "schema-legacy-enum-names"),
                (Severity::Should, "schema-unsupported-pattern"),
                (Severity::Should, "schema-unknown-keyword"),
            ]
        );
    }

    #[test]
    fn enum_names_and_options() {
        let r = rules(json!({"type":"object","properties":{
            "l":{"type":"string","enum":["a","b"],"enumNames":["A"]},
            "e":{"type":"string","enum":[]},
            "t":{"type":"string","oneOf":[{"const":"a"},{"const":"b","title":"B"}]}},
            "required":["l","zz"]}));
        assert!(r.contains(&"schema-enum-names-length-mismatch".to_string()));
        assert!(r.contains(&"schema-empty-enum".to_string()));
        assert!(r.contains(&"schema-option-missing-const-title".to_string()));
        assert!(r.contains(&"schema-required-unknown-property".to_string()));
    }

    #[test]
    fn unknown_format_and_unsatisfiable() {
        let r = rules(json!({"type":"object","properties":{
            "a":{"type":"string","format":"ipv4"},
            "b":{"type":"string","format":"date","maxLength":5},
            "c":{"type":"integer","minimum":1.2,"maximum":1.8}}}));
        assert_eq!(
            r,
            [
                "schema-unknown-format",
                "schema-unsatisfiable-field",
                "schema-unsatisfiable-field"
            ]
        );
    }

    #[test]
    fn root_shape_rules() {
        let r = rules(json!({"type":"array","required":"a"}));
        assert_eq!(
            r,
            [
                "schema-type-not-object",
                "schema-properties-missing",
                "schema-required-not-string-array"
            ]
        );
    }

    #[test]
    fn size_and_depth_bounds() {
        let mut deep = json!(1);
        for _ in 0..(MAX_DEPTH + 5) {
            deep = json!([deep]);
        }
        let v = json!({"type":"object","properties":{"a":{"type":"string","default":deep}}});
        assert_eq!(rules(v), ["schema-too-deep"]);
        let props: Map<String, Value> = (0..MAX_PROPERTIES + 1)
            .map(|i| (format!("p{i}"), json!({"type":"boolean"})))
            .collect();
        let v = json!({"type":"object","properties":props});
        let (m, f) = parse_schema(&v);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, "schema-too-large");
        assert_eq!(m.expect("model").properties.len(), MAX_PROPERTIES);
    }

    #[test]
    fn rule_list_is_kebab_case_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for r in SCHEMA_RULES {
            assert!(
                r.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{r}"
            );
            assert!(seen.insert(r), "{r}");
        }
    }
}
