//! 2026-07-28 HTTP headers: names, the `=?base64?…?=` value codec, and the
//! header-versus-body check a server answers with `-32020` (HTTP 400).
//!
//! Values that are not plain printable ASCII (0x20–0x7E), that have leading or
//! trailing whitespace, or that look like the sentinel itself travel as
//! `=?base64?<standard base64 of the UTF-8 bytes>?=` with lowercase markers.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// `Mcp-Method`.
pub const METHOD: &str = "Mcp-Method";
/// `Mcp-Name`.
pub const NAME: &str = "Mcp-Name";
/// `MCP-Session-Id` (2025-11-25 only).
pub const SESSION_ID: &str = "MCP-Session-Id";
/// Prefix of per-argument headers (`Mcp-Param-{Name}`).
pub const PARAM_PREFIX: &str = "Mcp-Param-";
/// `Server-Timing`, where the reference server reports `state` and `app` durations.
pub const SERVER_TIMING: &str = "Server-Timing";
/// elicitkit's own response header naming the instance that answered
/// (lower case: it is used as an `http` header name as is).
pub const INSTANCE: &str = "elicitkit-instance";

const SENTINEL_OPEN: &str = "=?base64?";
const SENTINEL_CLOSE: &str = "?=";

/// Why a header value cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    /// The sentinel's payload is not valid standard base64.
    #[error("invalid base64 inside the =?base64?…?= sentinel")]
    BadBase64,
    /// The decoded bytes are not UTF-8.
    #[error("the =?base64?…?= payload is not UTF-8")]
    NotUtf8,
    /// A plain value carries characters a plain value may not.
    #[error("header value has characters outside printable ASCII or surrounding whitespace")]
    InvalidCharacters,
}

fn is_plain_safe(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !looks_like_sentinel(value)
}

fn looks_like_sentinel(value: &str) -> bool {
    value.starts_with(SENTINEL_OPEN) && value.ends_with(SENTINEL_CLOSE)
}

/// Encodes a value for an `Mcp-*` header: as is when safe, else the base64 sentinel.
pub fn encode_value(value: &str) -> String {
    if is_plain_safe(value) {
        value.to_owned()
    } else {
        format!(
            "{SENTINEL_OPEN}{}{SENTINEL_CLOSE}",
            STANDARD.encode(value.as_bytes())
        )
    }
}

/// Decodes an `Mcp-*` header value (the raw bytes as received).
pub fn decode_value(raw: &[u8]) -> Result<String, HeaderValueError> {
    let s = std::str::from_utf8(raw).map_err(|_| HeaderValueError::InvalidCharacters)?;
    if looks_like_sentinel(s) && s.len() >= SENTINEL_OPEN.len() + SENTINEL_CLOSE.len() {
        let inner = &s[SENTINEL_OPEN.len()..s.len() - SENTINEL_CLOSE.len()];
        let bytes = STANDARD
            .decode(inner)
            .map_err(|_| HeaderValueError::BadBase64)?;
        return String::from_utf8(bytes).map_err(|_| HeaderValueError::NotUtf8);
    }
    if s.bytes().all(|b| (0x20..=0x7e).contains(&b)) && s.trim() == s {
        Ok(s.to_owned())
    } else {
        Err(HeaderValueError::InvalidCharacters)
    }
}

/// The `Mcp-Name` a request needs: `params.name` for `tools/call` and
/// `prompts/get`, `params.uri` for `resources/read`, none otherwise.
pub fn expected_name<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params?.get(key)?.as_str()
}

/// The headers a 2026-07-28 client sends for a request, names and values (encoded).
pub fn request_headers(
    method: &str,
    params: Option<&Value>,
    version: &str,
) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (PROTOCOL_VERSION, version.to_owned()),
        (METHOD, encode_value(method)),
    ];
    if let Some(name) = expected_name(method, params) {
        out.push((NAME, encode_value(name)));
    }
    out
}

/// Why request headers disagree with the body (answered with `-32020`, HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderMismatch {
    /// A required header is absent.
    #[error("required header {0} is missing")]
    Missing(&'static str),
    /// A header could not be decoded.
    #[error("header {0} is invalid: {1}")]
    Invalid(&'static str, HeaderValueError),
    /// A header's (decoded) value differs from the body.
    #[error("header {header} is {header_value:?} but the body says {body_value:?}")]
    Differs {
        /// Which header.
        header: &'static str,
        /// The decoded header value.
        header_value: String,
        /// The body's value.
        body_value: String,
    },
    /// An `Mcp-Param-{Name}` header is missing, undecodable, unexpected or
    /// different from the argument it mirrors.
    #[error("header {header}: {problem}")]
    Param {
        /// The full header name.
        header: String,
        /// What is wrong.
        problem: String,
    },
}

/// Checks `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` against the body.
/// `get` returns a header's raw value by (case-insensitive) name.
pub fn check_request_headers<'h>(
    get: impl Fn(&str) -> Option<&'h [u8]>,
    method: &str,
    params: Option<&Value>,
    meta_version: &str,
) -> Result<(), HeaderMismatch> {
    let compare = |header: &'static str, body_value: &str| -> Result<(), HeaderMismatch> {
        let raw = get(header).ok_or(HeaderMismatch::Missing(header))?;
        let decoded = if header == PROTOCOL_VERSION {
            std::str::from_utf8(raw)
                .map(str::to_owned)
                .map_err(|_| HeaderMismatch::Invalid(header, HeaderValueError::InvalidCharacters))?
        } else {
            decode_value(raw).map_err(|e| HeaderMismatch::Invalid(header, e))?
        };
        if decoded == body_value {
            Ok(())
        } else {
            Err(HeaderMismatch::Differs {
                header,
                header_value: decoded,
                body_value: body_value.to_owned(),
            })
        }
    };
    compare(PROTOCOL_VERSION, meta_version)?;
    compare(METHOD, method)?;
    if let Some(name) = expected_name(method, params) {
        compare(NAME, name)?;
    }
    Ok(())
}

/// Checks the `Mcp-Param-{Name}` headers of a `tools/call` against the
/// arguments they mirror. `params` lists the tool's `x-mcp-header`
/// annotations as `(argument, Name)`. An argument that is present (and not
/// null) needs its header, decoded equal to its value (strings as they are,
/// booleans as `true`/`false`, numbers compared numerically); an absent or
/// null argument must come without one.
pub fn check_param_headers<'h>(
    get: impl Fn(&str) -> Option<&'h [u8]>,
    params: &[(&str, &str)],
    arguments: &serde_json::Map<String, Value>,
) -> Result<(), HeaderMismatch> {
    for (arg, name) in params {
        let header = format!("{PARAM_PREFIX}{name}");
        let fail = |problem: String| HeaderMismatch::Param {
            header: header.clone(),
            problem,
        };
        let raw = get(&header);
        let value = arguments.get(*arg).filter(|v| !v.is_null());
        let (raw, value) = match (raw, value) {
            (None, None) => continue,
            (Some(_), None) => {
                return Err(fail(format!("sent, but the body has no argument {arg:?}")));
            }
            (None, Some(_)) => {
                return Err(fail(format!("missing, but the body has argument {arg:?}")));
            }
            (Some(r), Some(v)) => (r, v),
        };
        let decoded = decode_value(raw).map_err(|e| fail(e.to_string()))?;
        let agrees = match value {
            Value::String(s) => *s == decoded,
            Value::Bool(b) => decoded == if *b { "true" } else { "false" },
            Value::Number(n) => decoded
                .parse::<f64>()
                .ok()
                .zip(n.as_f64())
                .is_some_and(|(h, b)| h == b),
            _ => false,
        };
        if !agrees {
            return Err(fail(format!(
                "{decoded:?} does not match argument {arg:?} = {value}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn param_headers_mirror_their_arguments() {
        let params = [("service", "Service"), ("n", "Count"), ("on", "On")];
        let args = |v: Value| v.as_object().unwrap().clone();
        let check = |pairs: &[(&str, &str)], a: Value| {
            let owned: Vec<(String, Vec<u8>)> = pairs
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.as_bytes().to_vec()))
                .collect();
            check_param_headers(
                |n| {
                    let n = n.to_ascii_lowercase();
                    owned
                        .iter()
                        .find(|(k, _)| *k == n)
                        .map(|(_, v)| v.as_slice())
                },
                &params,
                &args(a),
            )
        };
        assert!(check(&[], json!({})).is_ok());
        assert!(check(&[], json!({"service": null})).is_ok());
        assert!(check(&[("Mcp-Param-Service", "api")], json!({"service": "api"})).is_ok());
        assert!(
            check(
                &[("mcp-param-service", "=?base64?SGVsbG8=?=")],
                json!({"service": "Hello"})
            )
            .is_ok()
        );
        assert!(
            check(
                &[("Mcp-Param-Count", "42"), ("Mcp-Param-On", "true")],
                json!({"n": 42.0, "on": true})
            )
            .is_ok()
        );
        // literal, not base64: the wrapper is incomplete
        assert!(
            check(
                &[("Mcp-Param-Service", "=?base64?SGVsbG8=")],
                json!({"service": "=?base64?SGVsbG8="})
            )
            .is_ok()
        );
        for (pairs, body) in [
            (vec![], json!({"service": "api"})),
            (vec![("Mcp-Param-Service", "api")], json!({})),
            (
                vec![("Mcp-Param-Service", "web")],
                json!({"service": "api"}),
            ),
            (
                vec![("Mcp-Param-Service", "=?base64?SGVsbG8?=")],
                json!({"service": "Hello"}),
            ),
            (
                vec![("Mcp-Param-Service", "=?base64?SGVs!!!bG8=?=")],
                json!({"service": "Hello"}),
            ),
            (vec![("Mcp-Param-Count", "41")], json!({"n": 42})),
            (vec![("Mcp-Param-On", "1")], json!({"on": true})),
        ] {
            let e = check(&pairs, body.clone()).expect_err(&format!("{pairs:?} {body}"));
            assert!(matches!(e, HeaderMismatch::Param { .. }), "{e}");
        }
    }

    #[test]
    fn plain_values_pass_through() {
        assert_eq!(encode_value("tools/call"), "tools/call");
        assert_eq!(decode_value(b"tools/call").unwrap(), "tools/call");
    }

    #[test]
    fn sentinel_lookalike_is_encoded_like_the_spec_example() {
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(
            decode_value(b"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").unwrap(),
            "=?base64?literal?="
        );
    }

    #[test]
    fn unsafe_values_round_trip() {
        for v in ["café", " lead", "trail ", "a\r\nInjected: x", "日本語", ""] {
            let enc = encode_value(v);
            assert!(enc.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{enc}");
            assert_eq!(decode_value(enc.as_bytes()).unwrap(), v);
        }
    }

    #[test]
    fn invalid_values_are_rejected() {
        assert_eq!(
            decode_value(b"=?base64?***?="),
            Err(HeaderValueError::BadBase64)
        );
        assert_eq!(
            decode_value(b"=?base64?/w==?="),
            Err(HeaderValueError::NotUtf8)
        );
        assert_eq!(
            decode_value(b"tab\there"),
            Err(HeaderValueError::InvalidCharacters)
        );
        assert_eq!(
            decode_value(b" x"),
            Err(HeaderValueError::InvalidCharacters)
        );
    }

    #[test]
    fn header_check_names_the_problem() {
        let params = json!({"name": "déploy"});
        let hs = request_headers("tools/call", Some(&params), "2026-07-28");
        let get = |n: &str| {
            hs.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.as_bytes())
        };
        assert_eq!(
            check_request_headers(get, "tools/call", Some(&params), "2026-07-28"),
            Ok(())
        );
        let other = json!({"name": "other"});
        assert!(matches!(
            check_request_headers(get, "tools/call", Some(&other), "2026-07-28"),
            Err(HeaderMismatch::Differs { header: NAME, .. })
        ));
        let none = |_: &str| None;
        assert_eq!(
            check_request_headers(none, "tools/list", None, "2026-07-28"),
            Err(HeaderMismatch::Missing(PROTOCOL_VERSION))
        );
    }
}
