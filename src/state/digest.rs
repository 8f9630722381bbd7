//! The origin-request digest a state is bound to, and the canonical JSON it
//! is computed over.
//!
//! # Canonical JSON
//!
//! [`canonical_json`] prints a `serde_json::Value` with:
//! - object keys sorted **bytewise on their UTF-8 encoding** (which equals
//!   Unicode code point order; note this differs from RFC 8785/JCS, which
//!   sorts by UTF-16 code units, only for keys mixing characters above
//!   U+FFFF with characters in U+E000..U+FFFF);
//! - no insignificant whitespace;
//! - strings escaped and numbers printed exactly as `serde_json` prints them;
//! - nesting capped at [`MAX_DEPTH`] arrays/objects (deeper input is an
//!   error, never a stack overflow). `serde_json`'s parser stops at 128, so
//!   anything parsed from text fits.
//!
//! # Request digest
//!
//! [`request_digest`] is SHA-256 over the canonical JSON of the three-element
//! array `[method, name, arguments]`, e.g.
//! `["tools/call","get_weather",{"location":"NY"}]`.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Deepest nesting of arrays/objects [`canonical_json`] accepts.
pub const MAX_DEPTH: usize = 256;

/// Why a value has no canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// Arrays/objects nest deeper than [`MAX_DEPTH`].
    #[error("JSON nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Prints `value` in the canonical form described in the module docs.
pub fn canonical_json(value: &Value) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(64);
    write_value(value, 0, &mut out)?;
    Ok(out)
}

/// SHA-256 over the canonical JSON of `[method, name, arguments]`.
pub fn request_digest(
    method: &str,
    name: &str,
    arguments: &Value,
) -> Result<[u8; 32], CanonicalError> {
    let mut out = String::with_capacity(64 + method.len() + name.len());
    out.push('[');
    write_str(method, &mut out);
    out.push(',');
    write_str(name, &mut out);
    out.push(',');
    write_value(arguments, 1, &mut out)?;
    out.push(']');
    Ok(Sha256::digest(out.as_bytes()).into())
}

fn write_str(s: &str, out: &mut String) {
    // serde_json's string escaping; serializing a &str cannot fail.
    match serde_json::to_string(s) {
        Ok(q) => out.push_str(&q),
        Err(_) => out.push_str("\"\""),
    }
}

fn write_value(v: &Value, depth: usize, out: &mut String) -> Result<(), CanonicalError> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            if depth >= MAX_DEPTH {
                return Err(CanonicalError::TooDeep);
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, depth + 1, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            if depth >= MAX_DEPTH {
                return Err(CanonicalError::TooDeep);
            }
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_value(item, depth + 1, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_no_whitespace() {
        let v = json!({"b": 1, "a": [true, null, "x\"y"], "A": {"z": 1.5, "é": 2}});
        assert_eq!(
            canonical_json(&v).unwrap(),
            r#"{"A":{"z":1.5,"é":2},"a":[true,null,"x\"y"],"b":1}"#
        );
    }

    #[test]
    fn digest_ignores_key_order_but_not_values() {
        let a = request_digest("tools/call", "w", &json!({"x": 1, "y": 2})).unwrap();
        let b = request_digest("tools/call", "w", &json!({"y": 2, "x": 1})).unwrap();
        let c = request_digest("tools/call", "w", &json!({"y": 2, "x": 3})).unwrap();
        let d = request_digest("tools/call", "v", &json!({"y": 2, "x": 1})).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        let expect: [u8; 32] = Sha256::digest(br#"["tools/call","w",{"x":1,"y":2}]"#).into();
        assert_eq!(a, expect);
    }

    #[test]
    fn deep_input_is_an_error_not_a_crash() {
        let mut v = json!(0);
        for _ in 0..(MAX_DEPTH + 10) {
            v = Value::Array(vec![v]);
        }
        assert_eq!(canonical_json(&v), Err(CanonicalError::TooDeep));
        let mut ok = json!(0);
        for _ in 0..MAX_DEPTH {
            ok = Value::Array(vec![ok]);
        }
        assert!(canonical_json(&ok).is_ok());
    }
}
