//! The `requestedSchema` engine: typed model, schema validation, content
//! validation, value generation and secret heuristics. No I/O; nothing here
//! panics on any input, and input size and depth are bounded ([`limits`]).
//!
//! - [`model`]: [`RequestedSchema`] and the eight field shapes as
//!   [`FieldSchema`]; `to_value()` writes the spec JSON back.
//! - [`parse`]: [`parse_schema`] / [`RequestedSchema::from_value`] (lenient:
//!   model plus findings) and [`validate_schema`] (findings only).
//! - [`content`]: [`validate_content`] for an `ElicitResult.content`, with
//!   one rule id per [`InvalidKind`].
//! - [`generate`]: seeded [`random_schema`], [`generate_valid`] and
//!   [`generate_invalid`] for the fuzz targets and the load generator.
//! - [`secrets`]: form fields asking for secrets, clickable URLs in forms,
//!   and URL-mode URLs that carry credentials or personal data.
//! - [`formats`]: the four string formats, checked without regex.
//! - [`pattern`]: values that satisfy a `pattern` (JSON Schema or HTML).

pub mod content;
pub mod formats;
pub mod generate;
pub mod limits;
pub mod model;
pub mod parse;
pub mod pattern;
pub mod secrets;

pub use content::{InvalidKind, validate_content, validate_content_map};
pub use formats::matches_format;
pub use generate::{SeedRng, generate_invalid, generate_valid, random_schema, valid_value};
pub use model::{
    BooleanField, EnumOption, FieldSchema, MultiSelectField, MultiSelectStyle, NumberField,
    RequestedSchema, SingleSelectField, SingleSelectStyle, StringField, StringFormat,
};
pub use parse::{SCHEMA_RULES, parse_schema, validate_schema};
pub use secrets::{
    SecretAsk, asks_for_secret, contains_clickable_url, form_request_findings,
    form_secret_findings, secret_ask, split_words, url_findings, url_findings_at,
};
