//! Bounds on the input the schema engine accepts, so that hostile schemas and
//! contents cost bounded time and memory. Exceeding one is reported as a
//! finding (`schema-too-large`, `schema-too-deep`), never a panic.

/// Deepest JSON nesting accepted in a `requestedSchema`.
pub const MAX_DEPTH: usize = 32;
/// Most properties parsed from one `requestedSchema`.
pub const MAX_PROPERTIES: usize = 512;
/// Most options parsed from one `enum` / `oneOf` / `anyOf`.
pub const MAX_OPTIONS: usize = 1024;
/// Largest `minLength` / `minItems` accepted (generation must be able to
/// build a value that long).
pub const MAX_BOUND: u64 = 65_536;
/// Most findings of one kind `validate_content` lists for unknown properties
/// before summarising the rest in one finding.
pub const MAX_UNKNOWN_REPORTED: usize = 64;
