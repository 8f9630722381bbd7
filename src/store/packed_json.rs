//! JSON values as the memory store packs them (outcomes, structured
//! content): each value is one header byte (its kind in the top three bits,
//! a length or count under 31 in the other five, else 31 and a [`varint`])
//! and its bytes, with no quotes, colons or commas. A masked-key outcome
//! `{"connected":true,"key":"sk-…abcd"}` packs into 27 bytes where compact
//! JSON takes 37. Numbers keep the text serde_json writes for them, so every
//! value reads back equal to the one packed.

use serde_json::{Map, Number, Value};

use super::varint;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
/// A number: its JSON text.
const NUMBER: u8 = 3;
const STRING: u8 = 4;
/// An array: its count, then its items.
const ARRAY: u8 = 5;
/// An object: its count, then each key (a length and its text) and value.
const OBJECT: u8 = 6;

/// The five low bits of a header that say "a varint follows".
const LONG: u8 = 31;

/// Deeper values than this read as corrupt (packing never nests deeper than
/// the values serde_json builds; the bound keeps a damaged entry from
/// taking the stack).
const MAX_DEPTH: usize = 256;

/// Why bytes hold no packed value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum PackedError {
    /// They end inside a value.
    #[error("cut short")]
    CutShort,
    /// Bytes follow the value.
    #[error("{0} bytes after the value")]
    Trailing(usize),
    /// A header names no kind of value.
    #[error("unknown kind {0}")]
    UnknownKind(u8),
    /// Values nest deeper than [`MAX_DEPTH`].
    #[error("nested too deep")]
    TooDeep,
    /// A string or key is not UTF-8.
    #[error("not UTF-8: {0}")]
    NotUtf8(std::str::Utf8Error),
    /// A number's text is no JSON number.
    #[error("number {0:?}: not a JSON number")]
    BadNumber(String),
}

/// Appends `v` packed.
pub(super) fn put(b: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => b.push(NULL << 5),
        Value::Bool(false) => b.push(FALSE << 5),
        Value::Bool(true) => b.push(TRUE << 5),
        Value::Number(n) => text(b, NUMBER, &n.to_string()),
        Value::String(s) => text(b, STRING, s),
        Value::Array(items) => {
            header(b, ARRAY, items.len());
            items.iter().for_each(|i| put(b, i));
        }
        Value::Object(fields) => {
            header(b, OBJECT, fields.len());
            for (k, v) in fields {
                varint::put(b, k.len() as u64);
                b.extend_from_slice(k.as_bytes());
                put(b, v);
            }
        }
    }
}

/// `v` packed.
pub(super) fn to_vec(v: &Value) -> Vec<u8> {
    let mut b = Vec::new();
    put(&mut b, v);
    b
}

/// The value `b` holds, all of it; why not when it holds no packed value
/// or more than one.
pub(super) fn from_slice(b: &[u8]) -> Result<Value, PackedError> {
    let mut at = 0;
    let v = get(b, &mut at, 0)?;
    match at == b.len() {
        true => Ok(v),
        false => Err(PackedError::Trailing(b.len() - at)),
    }
}

fn header(b: &mut Vec<u8>, kind: u8, n: usize) {
    if n < usize::from(LONG) {
        b.push(kind << 5 | n as u8);
    } else {
        b.push(kind << 5 | LONG);
        varint::put(b, n as u64);
    }
}

fn text(b: &mut Vec<u8>, kind: u8, s: &str) {
    header(b, kind, s.len());
    b.extend_from_slice(s.as_bytes());
}

fn get(b: &[u8], at: &mut usize, depth: usize) -> Result<Value, PackedError> {
    if depth > MAX_DEPTH {
        return Err(PackedError::TooDeep);
    }
    let h = *b.get(*at).ok_or(PackedError::CutShort)?;
    *at += 1;
    let n = match h & LONG {
        LONG => varint::get(b, at).ok_or(PackedError::CutShort)? as usize,
        n => usize::from(n),
    };
    Ok(match h >> 5 {
        NULL => Value::Null,
        FALSE => Value::Bool(false),
        TRUE => Value::Bool(true),
        NUMBER => {
            let t = str_at(b, at, n)?;
            Value::Number(
                t.parse::<Number>()
                    .map_err(|_| PackedError::BadNumber(t.to_owned()))?,
            )
        }
        STRING => Value::String(str_at(b, at, n)?.to_owned()),
        ARRAY => {
            let mut items = Vec::with_capacity(n.min(b.len() - *at));
            for _ in 0..n {
                items.push(get(b, at, depth + 1)?);
            }
            Value::Array(items)
        }
        OBJECT => {
            let mut fields = Map::new();
            for _ in 0..n {
                let len = varint::get(b, at).ok_or(PackedError::CutShort)? as usize;
                let k = str_at(b, at, len)?.to_owned();
                fields.insert(k, get(b, at, depth + 1)?);
            }
            Value::Object(fields)
        }
        kind => return Err(PackedError::UnknownKind(kind)),
    })
}

/// The `n` bytes at `*at` as text, moving `*at` past them.
fn str_at<'a>(b: &'a [u8], at: &mut usize, n: usize) -> Result<&'a str, PackedError> {
    let end = at
        .checked_add(n)
        .filter(|&e| e <= b.len())
        .ok_or(PackedError::CutShort)?;
    let t = std::str::from_utf8(&b[*at..end]).map_err(PackedError::NotUtf8)?;
    *at = end;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_value_reads_back_equal() {
        let long = "x".repeat(300);
        for v in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(-2.5e-300),
            json!(0.1),
            json!(""),
            json!("é…\u{1F600}\"\\\n"),
            json!("x".repeat(30)),
            json!("x".repeat(31)),
            json!(long),
            json!([]),
            json!({}),
            json!([1, "two", null, [3.25, {"k": false}]]),
            json!({"masked": "sk-…abcd", "": 1, "list": (0..40).collect::<Vec<_>>()}),
            json!({"itinerary": {"from": "AMS", "to": "LIS"}, "passenger": {"name": "Ada"}}),
        ] {
            let b = to_vec(&v);
            assert_eq!(from_slice(&b), Ok(v.clone()), "{v}");
            // No longer than compact JSON, but for a bare number (its header
            // is one byte more) and a string of 128 bytes or more (its header
            // and length take three bytes where quotes take two).
            let slack = usize::from(v.is_number() || v == json!(long));
            assert!(
                b.len() <= serde_json::to_vec(&v).unwrap().len() + slack,
                "{v}"
            );
        }
        let billing = json!({"connected": true, "key": "sk-…abcd"});
        assert_eq!(
            (to_vec(&billing).len(), billing.to_string().len()),
            (27, 37)
        );
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let good = to_vec(&json!({"a": [1, "b", {"c": null}]}));
        for cut in 0..good.len() {
            assert!(from_slice(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(from_slice(&extra), Err(PackedError::Trailing(1)));
        assert_eq!(from_slice(&[7 << 5]), Err(PackedError::UnknownKind(7)));
        assert_eq!(
            from_slice(&[NUMBER << 5 | 2, b'x', b'y']),
            Err(PackedError::BadNumber("xy".into()))
        );
        assert!(matches!(
            from_slice(&[STRING << 5 | 1, 0xff]),
            Err(PackedError::NotUtf8(_))
        ));
        assert_eq!(
            from_slice(&[STRING << 5 | LONG, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            Err(PackedError::CutShort)
        );
        let deep = [vec![ARRAY << 5 | 1; 1000], vec![NULL]].concat();
        assert_eq!(from_slice(&deep), Err(PackedError::TooDeep));
    }
}
