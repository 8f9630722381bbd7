//! What a request body's JSON may cost to parse: a body within
//! `--max-body` can still hold 88,000 object keys, and building that tree
//! costs about 20 times the CPU of a plain body of the same size. A body
//! with more than `--max-json-members` members (object keys and array
//! items) or nested deeper than [`MAX_DEPTH`] is refused before it is
//! parsed, with a 400 that says which limit it passed.
//!
//! The check is one pass over the bytes that builds nothing. Bodies of at
//! most [`SCAN_ABOVE`] bytes are not scanned: they cannot hold more than
//! about 2,000 members, and serde_json's own recursion limit bounds their
//! depth, so the hot path of small requests pays nothing.

use std::fmt;

/// Bodies this long or shorter are not scanned (see the module docs).
pub const SCAN_ABOVE: usize = 4096;

/// Deepest nesting of objects and arrays accepted.
pub const MAX_DEPTH: usize = 64;

/// `--max-json-members`'s default: far above any request of this server's
/// tools, far below what makes a body costly.
pub const DEFAULT_MAX_MEMBERS: usize = 10_000;

/// Why a body is too costly to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Costly {
    /// More members than the limit (counting stopped just past it).
    Members {
        /// The limit.
        max: usize,
    },
    /// Nested deeper than [`MAX_DEPTH`].
    Depth,
}

impl fmt::Display for Costly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Costly::Members { max } => write!(
                f,
                "request body holds more than {max} JSON members (object keys and array items; \
                 --max-json-members)"
            ),
            Costly::Depth => write!(
                f,
                "request body nests JSON objects and arrays deeper than {MAX_DEPTH} levels"
            ),
        }
    }
}

/// Checks `body` against `max_members` and [`MAX_DEPTH`] (only bodies
/// longer than [`SCAN_ABOVE`]). Malformed JSON passes: the parser refuses
/// it, with its own error.
pub fn check(body: &[u8], max_members: usize) -> Result<(), Costly> {
    if body.len() <= SCAN_ABOVE {
        return Ok(());
    }
    // A member is counted at each `,` and at the first value of each
    // container, so `[]` and `{}` count none. Strings are skipped to their
    // closing quote with memchr, so a long string costs next to nothing.
    let (mut members, mut depth, mut opened, mut i) = (0usize, 0usize, false, 0usize);
    while i < body.len() {
        let b = body[i];
        i += 1;
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        }
        if opened && !matches!(b, b']' | b'}') {
            members += 1;
        }
        opened = false;
        match b {
            b'"' => i = after_string(body, i),
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Costly::Depth);
                }
                opened = true;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => members += 1,
            _ => {}
        }
        if members > max_members {
            return Err(Costly::Members { max: max_members });
        }
    }
    Ok(())
}

/// The index just past the string whose opening quote ends at `i` (the
/// end of `body` when it is not closed).
fn after_string(body: &[u8], mut i: usize) -> usize {
    while let Some(j) = memchr::memchr2(b'"', b'\\', &body[i..]) {
        if body[i + j] == b'"' {
            return i + j + 1;
        }
        // A backslash escapes the byte after it.
        i += j + 2;
        if i >= body.len() {
            break;
        }
    }
    body.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pads `json` with trailing spaces past [`SCAN_ABOVE`] (so it is scanned).
    fn padded(json: &str) -> Vec<u8> {
        let mut b = json.as_bytes().to_vec();
        b.resize(SCAN_ABOVE + 1, b' ');
        b
    }

    fn members(json: &str) -> usize {
        // The smallest limit it passes.
        (0..100).find(|&m| check(&padded(json), m).is_ok()).unwrap()
    }

    #[test]
    fn members_are_object_keys_and_array_items() {
        assert_eq!(members("{}"), 0);
        assert_eq!(members("[ ]"), 0);
        assert_eq!(members(r#"{"a":1}"#), 1);
        assert_eq!(members(r#"{"a":[1, 2, 3],"b":{"c":{}}}"#), 6);
        assert_eq!(members(r#"[ "x,y", "{[", "\"]" ]"#), 3, "strings skipped");
        assert_eq!(members(r#"{"a\\":"b\"c,"}"#), 1, "escapes honoured");
    }

    #[test]
    fn a_costly_body_is_refused_and_a_large_plain_one_is_not() {
        let keys: String = (0..88_000).map(|i| format!("\"k{i}\":0,")).collect();
        let body = format!("{{{}\"end\":0}}", keys);
        assert_eq!(
            check(body.as_bytes(), DEFAULT_MAX_MEMBERS),
            Err(Costly::Members {
                max: DEFAULT_MAX_MEMBERS
            })
        );
        let plain = format!(r#"{{"a":"{}"}}"#, "x".repeat(1 << 20));
        assert_eq!(check(plain.as_bytes(), DEFAULT_MAX_MEMBERS), Ok(()));
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(
            check(&padded(&deep), DEFAULT_MAX_MEMBERS),
            Err(Costly::Depth)
        );
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(check(&padded(&ok), DEFAULT_MAX_MEMBERS), Ok(()));
        // Short bodies are not scanned at all.
        assert_eq!(
            check(
                b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
                0
            ),
            Ok(())
        );
    }
}
