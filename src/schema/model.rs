//! The typed `requestedSchema` model: one struct per allowed field shape.
//!
//! The eight `PrimitiveSchemaDefinition` shapes of the spec map onto five
//! [`FieldSchema`] variants: the three single-select shapes share
//! [`SingleSelectField`] (told apart by [`SingleSelectStyle`]) and the two
//! multi-select shapes share [`MultiSelectField`]. Numbers keep their
//! [`serde_json::Number`] so that [`RequestedSchema::to_value`] writes back
//! exactly what was read.

use serde_json::{Map, Number, Value};

/// A form-mode `requestedSchema`: a flat object of primitive fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestedSchema {
    /// Fields in the order the parsed JSON object yielded them (serde_json
    /// without `preserve_order` yields keys sorted).
    pub properties: Vec<(String, FieldSchema)>,
    /// Names of the fields the user must fill in.
    pub required: Vec<String>,
    /// The optional `$schema` dialect URI.
    pub dollar_schema: Option<String>,
}

/// The four `format` values a string field may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StringFormat {
    /// `email`: an e-mail address.
    Email,
    /// `uri`: an absolute URI with a scheme.
    Uri,
    /// `date`: an RFC 3339 full-date, `YYYY-MM-DD`.
    Date,
    /// `date-time`: an RFC 3339 date-time.
    DateTime,
}

impl StringFormat {
    /// Every format, in spec order.
    pub const ALL: [StringFormat; 4] = [
        StringFormat::Email,
        StringFormat::Uri,
        StringFormat::Date,
        StringFormat::DateTime,
    ];

    /// The wire name, e.g. `date-time`.
    pub fn as_str(self) -> &'static str {
        match self {
            StringFormat::Email => "email",
            StringFormat::Uri => "uri",
            StringFormat::Date => "date",
            StringFormat::DateTime => "date-time",
        }
    }

    /// Parses a wire name; `None` for anything outside the four.
    pub fn from_name(name: &str) -> Option<StringFormat> {
        StringFormat::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// `StringSchema`: free text, optionally bounded and formatted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StringField {
    /// Display title.
    pub title: Option<String>,
    /// Help text.
    pub description: Option<String>,
    /// `minLength`, in Unicode scalar values.
    pub min_length: Option<u64>,
    /// `maxLength`, in Unicode scalar values.
    pub max_length: Option<u64>,
    /// `format`.
    pub format: Option<StringFormat>,
    /// `default`.
    pub default: Option<String>,
}

/// `NumberSchema`: `type` `number` or `integer`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumberField {
    /// Display title.
    pub title: Option<String>,
    /// Help text.
    pub description: Option<String>,
    /// True for `"type": "integer"`.
    pub integer: bool,
    /// Inclusive `minimum`.
    pub minimum: Option<Number>,
    /// Inclusive `maximum`.
    pub maximum: Option<Number>,
    /// `default`.
    pub default: Option<Number>,
}

/// `BooleanSchema`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BooleanField {
    /// Display title.
    pub title: Option<String>,
    /// Help text.
    pub description: Option<String>,
    /// `default`.
    pub default: Option<bool>,
}

/// One choice of a select field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumOption {
    /// The value sent back in `content` (`const` or an `enum` entry).
    pub value: String,
    /// Display label (`title` or the matching `enumNames` entry), if any.
    pub title: Option<String>,
}

/// Which of the three single-select shapes a field uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SingleSelectStyle {
    /// `UntitledSingleSelectEnumSchema`: `enum`.
    Untitled,
    /// `TitledSingleSelectEnumSchema`: `oneOf` of `{const, title}`.
    Titled,
    /// `LegacyTitledEnumSchema` (deprecated): `enum` plus `enumNames`.
    LegacyEnumNames,
}

/// A single-select field (`type: "string"` with `enum` or `oneOf`).
#[derive(Debug, Clone, PartialEq)]
pub struct SingleSelectField {
    /// Display title.
    pub title: Option<String>,
    /// Help text.
    pub description: Option<String>,
    /// Wire shape.
    pub style: SingleSelectStyle,
    /// The choices, in order.
    pub options: Vec<EnumOption>,
    /// `default`: one of the option values.
    pub default: Option<String>,
}

/// Which of the two multi-select shapes a field uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MultiSelectStyle {
    /// `UntitledMultiSelectEnumSchema`: `items: {type: "string", enum}`.
    Untitled,
    /// `TitledMultiSelectEnumSchema`: `items: {anyOf: [{const, title}]}`.
    Titled,
}

/// A multi-select field (`type: "array"` of enum strings).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiSelectField {
    /// Display title.
    pub title: Option<String>,
    /// Help text.
    pub description: Option<String>,
    /// Wire shape.
    pub style: MultiSelectStyle,
    /// The choices, in order.
    pub options: Vec<EnumOption>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `default`: option values.
    pub default: Option<Vec<String>>,
}

/// One field of a form: the eight spec shapes in five variants.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldSchema {
    /// Free text.
    String(StringField),
    /// A number or integer.
    Number(NumberField),
    /// A checkbox.
    Boolean(BooleanField),
    /// Pick one (untitled, titled or legacy `enumNames`).
    SingleSelect(SingleSelectField),
    /// Pick several (untitled or titled).
    MultiSelect(MultiSelectField),
}

impl FieldSchema {
    /// The field's `title`.
    pub fn title(&self) -> Option<&str> {
        match self {
            FieldSchema::String(f) => f.title.as_deref(),
            FieldSchema::Number(f) => f.title.as_deref(),
            FieldSchema::Boolean(f) => f.title.as_deref(),
            FieldSchema::SingleSelect(f) => f.title.as_deref(),
            FieldSchema::MultiSelect(f) => f.title.as_deref(),
        }
    }

    /// The field's `description`.
    pub fn description(&self) -> Option<&str> {
        match self {
            FieldSchema::String(f) => f.description.as_deref(),
            FieldSchema::Number(f) => f.description.as_deref(),
            FieldSchema::Boolean(f) => f.description.as_deref(),
            FieldSchema::SingleSelect(f) => f.description.as_deref(),
            FieldSchema::MultiSelect(f) => f.description.as_deref(),
        }
    }

    /// The `default` as JSON, if any.
    pub fn default_value(&self) -> Option<Value> {
        match self {
            FieldSchema::String(f) => f.default.clone().map(Value::String),
            FieldSchema::Number(f) => f.default.clone().map(Value::Number),
            FieldSchema::Boolean(f) => f.default.map(Value::Bool),
            FieldSchema::SingleSelect(f) => f.default.clone().map(Value::String),
            FieldSchema::MultiSelect(f) => f
                .default
                .as_ref()
                .map(|d| Value::Array(d.iter().cloned().map(Value::String).collect())),
        }
    }

    /// The spec JSON for this field.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        let (title, description) = (self.title(), self.description());
        match self {
            FieldSchema::String(f) => {
                m.insert("type".into(), "string".into());
                put_u64(&mut m, "minLength", f.min_length);
                put_u64(&mut m, "maxLength", f.max_length);
                if let Some(fmt) = f.format {
                    m.insert("format".into(), fmt.as_str().into());
                }
            }
            FieldSchema::Number(f) => {
                let ty = if f.integer { "integer" } else { "number" };
                m.insert("type".into(), ty.into());
                if let Some(n) = &f.minimum {
                    m.insert("minimum".into(), Value::Number(n.clone()));
                }
                if let Some(n) = &f.maximum {
                    m.insert("maximum".into(), Value::Number(n.clone()));
                }
            }
            FieldSchema::Boolean(_) => {
                m.insert("type".into(), "boolean".into());
            }
            FieldSchema::SingleSelect(f) => {
                m.insert("type".into(), "string".into());
                match f.style {
                    SingleSelectStyle::Untitled => {
                        m.insert("enum".into(), option_values(&f.options));
                    }
                    SingleSelectStyle::LegacyEnumNames => {
                        m.insert("enum".into(), option_values(&f.options));
                        let names = f
                            .options
                            .iter()
                            .map(|o| Value::String(o.title.clone().unwrap_or_default()))
                            .collect();
                        m.insert("enumNames".into(), Value::Array(names));
                    }
                    SingleSelectStyle::Titled => {
                        m.insert("oneOf".into(), titled_options(&f.options));
                    }
                }
            }
            FieldSchema::MultiSelect(f) => {
                m.insert("type".into(), "array".into());
                let mut items = Map::new();
                match f.style {
                    MultiSelectStyle::Untitled => {
                        items.insert("type".into(), "string".into());
                        items.insert("enum".into(), option_values(&f.options));
                    }
                    MultiSelectStyle::Titled => {
                        items.insert("anyOf".into(), titled_options(&f.options));
                    }
                }
                m.insert("items".into(), Value::Object(items));
                put_u64(&mut m, "minItems", f.min_items);
                put_u64(&mut m, "maxItems", f.max_items);
            }
        }
        if let Some(t) = title {
            m.insert("title".into(), t.into());
        }
        if let Some(d) = description {
            m.insert("description".into(), d.into());
        }
        if let Some(d) = self.default_value() {
            m.insert("default".into(), d);
        }
        Value::Object(m)
    }
}

impl RequestedSchema {
    /// Looks a field up by name.
    pub fn field(&self, name: &str) -> Option<&FieldSchema> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }

    /// True when `name` is listed in `required`.
    pub fn is_required(&self, name: &str) -> bool {
        self.required.iter().any(|r| r == name)
    }

    /// The spec JSON (`{"type":"object","properties":{...},"required":[...]}`).
    ///
    /// `required` is written only when non-empty.
    pub fn to_value(&self) -> Value {
        let mut root = Map::new();
        if let Some(s) = &self.dollar_schema {
            root.insert("$schema".into(), s.as_str().into());
        }
        root.insert("type".into(), "object".into());
        let props = self
            .properties
            .iter()
            .map(|(n, f)| (n.clone(), f.to_value()))
            .collect();
        root.insert("properties".into(), Value::Object(props));
        if !self.required.is_empty() {
            let req = self.required.iter().cloned().map(Value::String).collect();
            root.insert("required".into(), Value::Array(req));
        }
        Value::Object(root)
    }
}

fn put_u64(m: &mut Map<String, Value>, key: &str, v: Option<u64>) {
    if let Some(v) = v {
        m.insert(key.into(), Value::from(v));
    }
}

fn option_values(options: &[EnumOption]) -> Value {
    Value::Array(
        options
            .iter()
            .map(|o| Value::String(o.value.clone()))
            .collect(),
    )
}

fn titled_options(options: &[EnumOption]) -> Value {
    Value::Array(
        options
            .iter()
            .map(|o| {
                let mut m = Map::new();
                m.insert("const".into(), o.value.as_str().into());
                m.insert(
                    "title".into(),
                    o.title.as_deref().unwrap_or(o.value.as_str()).into(),
                );
                Value::Object(m)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn format_names_round_trip() {
        for f in StringFormat::ALL {
            assert_eq!(StringFormat::from_name(f.as_str()), Some(f));
        }
        assert_eq!(StringFormat::from_name("ipv4"), None);
    }

    #[test]
    fn titled_multi_select_writes_items_any_of() {
        let f = FieldSchema::MultiSelect(MultiSelectField {
            title: None,
            description: None,
            style: MultiSelectStyle::Titled,
            options: vec![EnumOption {
                value: "#F00".into(),
                title: Some("Red".into()),
            }],
            min_items: Some(1),
            max_items: None,
            default: Some(vec!["#F00".into()]),
        });
        assert_eq!(
            f.to_value(),
            json!({"type":"array","minItems":1,
                   "items":{"anyOf":[{"const":"#F00","title":"Red"}]},
                   "default":["#F00"]})
        );
    }

    #[test]
    fn schema_lookup_helpers() {
        let s = RequestedSchema {
            properties: vec![("a".into(), FieldSchema::Boolean(BooleanField::default()))],
            required: vec!["a".into()],
            dollar_schema: None,
        };
        assert!(s.field("a").is_some());
        assert!(s.field("b").is_none());
        assert!(s.is_required("a"));
        assert_eq!(
            s.to_value(),
            json!({"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]})
        );
    }
}
