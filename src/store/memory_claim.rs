//! A completion claim as the memory store keeps it: its keep time and its
//! outcome in one run of bytes, held in the claims table ([`ClaimEntry`])
//! or, when the claim completes a flow that has a record, inside that
//! record's entry (see [`super::memory_record`]), so a completed flow keeps
//! one entry.

use serde_json::Value;

use super::heap_size::heap_bytes;
use super::keyed::keyed_by_its_key;
use super::{StoreError, Taken, packed_json, varint};

/// A taken claim in one allocation: its key (16 bytes: the claims table
/// finds an entry by it, so a slot is the entry's pointer and length, not
/// a key beside them), `keep_until_ms` (8 bytes, little endian), then its
/// body: a tag and the outcome: [`BARE`] (none), [`TEXT`] (a
/// `CallToolResult` of one text item: its `isError` byte and the text),
/// [`TEXT_STRUCTURED`] (the same with `structuredContent`: the `isError`
/// byte, the text's length ([`varint`]), the text, the structured content
/// packed ([`packed_json`])) or [`JSON`] (any other outcome, packed). A
/// record keeps the body with its keep time packed (see
/// [`super::memory_record`]).
#[derive(Debug)]
pub(super) struct ClaimEntry(Box<[u8]>);

/// A claim wherever it is kept: its keep time and its body.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClaimRef<'a> {
    pub keep_until_ms: u64,
    pub body: &'a [u8],
}

/// A claim's key: the first 16 bytes of its key text's SHA-256 (two of
/// 2^32 live claims collide with odds near 2^-64).
pub(super) type ClaimKey = [u8; 16];

/// Where an entry's keep time starts (after its key).
const KEEP: usize = 16;

keyed_by_its_key!(ClaimEntry);

const BARE: u8 = 0;
const TEXT: u8 = 1;
const JSON: u8 = 2;
const TEXT_STRUCTURED: u8 = 3;

impl ClaimEntry {
    pub(super) fn new(key: &ClaimKey, keep_until_ms: u64, outcome: Option<&Value>) -> Self {
        let mut b = Vec::with_capacity(KEEP + 2);
        b.extend_from_slice(key);
        b.extend(keep_until_ms.to_le_bytes());
        match outcome {
            None => b.push(BARE),
            Some(v) => match text_result(v) {
                Some(TextResult {
                    text,
                    is_error,
                    structured: None,
                }) => {
                    b.extend([TEXT, u8::from(is_error)]);
                    b.extend_from_slice(text.as_bytes());
                }
                Some(TextResult {
                    text,
                    is_error,
                    structured: Some(st),
                }) => {
                    b.extend([TEXT_STRUCTURED, u8::from(is_error)]);
                    varint::put(&mut b, text.len() as u64);
                    b.extend_from_slice(text.as_bytes());
                    packed_json::put(&mut b, st);
                }
                _ => {
                    b.push(JSON);
                    packed_json::put(&mut b, v);
                }
            },
        }
        ClaimEntry(b.into_boxed_slice())
    }

    /// One moved out of the record under `key`.
    pub(super) fn from_ref(key: &ClaimKey, c: ClaimRef<'_>) -> Self {
        let mut b = Vec::with_capacity(KEEP + 8 + c.body.len());
        b.extend_from_slice(key);
        b.extend(c.keep_until_ms.to_le_bytes());
        b.extend_from_slice(c.body);
        ClaimEntry(b.into_boxed_slice())
    }

    /// Its keep time and body.
    pub(super) fn view(&self) -> ClaimRef<'_> {
        let mut t = [0; 8];
        t.copy_from_slice(&self.0[KEEP..KEEP + 8]);
        ClaimRef {
            keep_until_ms: u64::from_le_bytes(t),
            body: &self.0[KEEP + 8..],
        }
    }

    /// The key it is kept under.
    pub(super) fn key(&self) -> &ClaimKey {
        // Every entry starts with its key (`new`, `from_ref`).
        self.0[..KEEP].try_into().unwrap_or(&[0; KEEP])
    }

    #[cfg(test)]
    pub(super) fn keep_until_ms(&self) -> u64 {
        self.view().keep_until_ms
    }

    /// Heap bytes it holds.
    pub(super) fn heap_bytes(&self) -> u64 {
        heap_bytes(self.0.len())
    }
}

/// What a claim's body says to a later taker.
pub(super) fn taken(b: &[u8]) -> Result<Taken, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        id: "claims".into(),
        reason,
    };
    let result = |text: &str, is_error: u8| {
        serde_json::json!({
            "content": [{"type": "text", "text": text}],
            "isError": is_error == 1,
        })
    };
    let short = || corrupt("cut short".into());
    let packed = |b| packed_json::from_slice(b).map_err(|e| corrupt(e.to_string()));
    let rest = b.get(1..).ok_or_else(short)?;
    let outcome = match b[0] {
        BARE => None,
        TEXT => Some(result(utf8(&rest[1..], corrupt)?, rest[0])),
        TEXT_STRUCTURED => {
            let mut at = 1;
            let n = varint::get(rest, &mut at).ok_or_else(short)?;
            let (text, st) = usize::try_from(n)
                .ok()
                .and_then(|n| rest[at..].split_at_checked(n))
                .ok_or_else(short)?;
            let mut v = result(utf8(text, corrupt)?, rest[0]);
            v["structuredContent"] = packed(st)?;
            Some(v)
        }
        _ => Some(packed(rest)?),
    };
    Ok(Taken { outcome })
}

/// `b` as text, or `corrupt`'s error.
fn utf8(b: &[u8], corrupt: impl Fn(String) -> StoreError) -> Result<&str, StoreError> {
    std::str::from_utf8(b).map_err(|e| corrupt(e.to_string()))
}

/// An outcome that is exactly a `CallToolResult` of one text item, with
/// or without `structuredContent`
/// (`{"content":[{"type":"text","text":T}],"isError":B[,"structuredContent":S]}`).
struct TextResult<'a> {
    text: &'a str,
    is_error: bool,
    structured: Option<&'a Value>,
}

fn text_result(v: &Value) -> Option<TextResult<'_>> {
    let o = v.as_object()?;
    let structured = o.get("structuredContent");
    (o.len() == 2 + usize::from(structured.is_some())).then_some(())?;
    let is_error = o.get("isError")?.as_bool()?;
    let [item] = o.get("content")?.as_array()?.as_slice() else {
        return None;
    };
    let item = item.as_object().filter(|i| i.len() == 2)?;
    (item.get("type")?.as_str()? == "text").then_some(())?;
    Some(TextResult {
        text: item.get("text")?.as_str()?,
        is_error,
        structured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_results_are_stored_as_their_text() {
        let deployed = json!({"content":[{"type":"text","text":"Deployed web to production."}],"isError":false});
        // The plain text shape is stored as its text.
        let e = ClaimEntry::new(&[5; 16], 7, Some(&deployed));
        assert_eq!(
            (e.0[24], e.0.len()),
            (TEXT, 26 + "Deployed web to production.".len())
        );
        assert_eq!(e.key(), &[5; 16]);
        assert_eq!(e.keep_until_ms(), 7);
        let billing = json!({"content":[{"type":"text","text":"Billing connected."}],"isError":false,"structuredContent":{"connected":true}});
        let e = ClaimEntry::new(&[5; 16], 7, Some(&billing));
        assert_eq!(
            (e.0[24], e.0.len()),
            (
                TEXT_STRUCTURED,
                // `{"connected":true}` packed: 12 B (18 as JSON).
                27 + "Billing connected.".len() + 12
            )
        );
        assert_eq!(taken(e.view().body).unwrap().outcome, Some(billing));
        let back = ClaimEntry::from_ref(e.key(), e.view());
        assert_eq!((back.keep_until_ms(), back.0), (7, e.0));
    }
}
