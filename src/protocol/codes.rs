//! JSON-RPC error codes used by MCP elicitation, both generations.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist (also: methods removed in 2026-07-28, with HTTP 404).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (also: missing `_meta` in 2026-07-28, with HTTP 400).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Implementation-defined server error (JSON-RPC's `-32000..-32099` band;
/// MCP's HTTP transports use it for refusals that are neither a bad request
/// nor an internal fault, such as a session limit).
pub const SERVER_ERROR: i64 = -32000;
/// 2026-07-28: a required `Mcp-*` / `MCP-Protocol-Version` header is missing or differs from the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability it did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// 2025-11-25 only: a URL elicitation must finish first. Retired in 2026-07-28.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// Retired resource-not-found code; 2026-07-28 servers must not emit it.
pub const RETIRED_RESOURCE_NOT_FOUND: i64 = -32002;

/// True for codes in the range the spec reserves (`-32020..=-32099`) that it does not define.
pub fn is_undefined_reserved(code: i64) -> bool {
    (-32099..=-32020).contains(&code)
        && !matches!(
            code,
            HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
        )
}

/// A short name for a code, for tables and logs.
pub fn name(code: i64) -> &'static str {
    match code {
        PARSE_ERROR => "ParseError",
        INVALID_REQUEST => "InvalidRequest",
        METHOD_NOT_FOUND => "MethodNotFound",
        INVALID_PARAMS => "InvalidParams",
        INTERNAL_ERROR => "InternalError",
        SERVER_ERROR => "ServerError",
        HEADER_MISMATCH => "HeaderMismatch",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "MissingRequiredClientCapability",
        UNSUPPORTED_PROTOCOL_VERSION => "UnsupportedProtocolVersion",
        URL_ELICITATION_REQUIRED => "URLElicitationRequired",
        RETIRED_RESOURCE_NOT_FOUND => "ResourceNotFound(retired)",
        _ => "other",
    }
}
