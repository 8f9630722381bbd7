//! Round-trip markers: a load round trip writes `ek-rt-<n>` (its run-wide
//! number) into a free-string tool argument, so a reply that echoes the
//! argument names the round trip it was computed for. A reply carrying
//! another round trip's marker was misrouted (responses of one client sent
//! to another, as in GHSA-345p-7cg4-v4c7); a reply without any marker
//! cannot be attributed and proves nothing either way.

use memchr::memmem;
use std::sync::LazyLock;

/// What every marker starts with.
pub const PREFIX: &str = "ek-rt-";

static FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(PREFIX.as_bytes()));

/// Whom a reply belongs to, by the markers it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// It carries this round trip's marker.
    Ours,
    /// It carries another round trip's marker (the first one seen) and not
    /// ours: a misroute.
    Foreign(u64),
    /// It carries no marker.
    Unattributed,
}

/// Appends ` ek-rt-<n>` (a space, then round trip `n`'s marker) to `out`,
/// a string argument's JSON text.
pub fn append(out: &mut Vec<u8>, n: u64) {
    out.push(b' ');
    out.extend_from_slice(PREFIX.as_bytes());
    out.extend_from_slice(n.to_string().as_bytes());
}

/// [`append`] to a string argument's value.
pub fn append_str(out: &mut String, n: u64) {
    use std::fmt::Write as _;
    let _ = write!(out, " {PREFIX}{n}");
}

/// Reads the markers in `body` against round trip `ours` (`None`: this
/// round trip sent none, so any marker is another's).
pub fn attribute(body: &[u8], ours: Option<u64>) -> Attribution {
    let mut foreign = None;
    for at in FINDER.find_iter(body) {
        let digits = &body[at + PREFIX.len()..];
        let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(n) = std::str::from_utf8(&digits[..len])
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
        else {
            continue;
        };
        if Some(n) == ours {
            return Attribution::Ours;
        }
        foreign.get_or_insert(n);
    }
    foreign.map_or(Attribution::Unattributed, Attribution::Foreign)
}

/// A reply that carries another round trip's marker and not its own: a
/// response meant for another request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the reply to {leg} of round trip {PREFIX}{n} carries round trip {PREFIX}{other}'s marker \
     (a response meant for another request)"
)]
pub struct Misroute {
    /// The leg the reply answered.
    pub leg: String,
    /// The round trip it belongs to.
    pub n: u64,
    /// The round trip whose marker it carries.
    pub other: u64,
}

/// Whose `body` is, the reply to `leg` of round trip `n` (`sent`: our
/// marker went out with the request): `Ok(true)` ours, `Ok(false)` no
/// marker, `Err` a misroute. The leg is named only then.
pub fn judge<L: std::fmt::Display>(
    body: &[u8],
    n: u64,
    sent: bool,
    leg: impl FnOnce() -> L,
) -> Result<bool, Misroute> {
    match attribute(body, sent.then_some(n)) {
        Attribution::Ours => Ok(true),
        Attribution::Unattributed => Ok(false),
        Attribution::Foreign(other) => Err(Misroute {
            leg: leg().to_string(),
            n,
            other,
        }),
    }
}

/// The evidence of a misroute ([`judge`]'s `Err`); `None` when the reply
/// is ours or unattributed.
pub fn misroute(body: &[u8], n: u64, sent: bool, leg: &str) -> Option<String> {
    judge(body, n, sent, || leg).err().map(|m| m.to_string())
}

/// The argument of `args` that can carry a marker under the tool's
/// `inputSchema`: a string value whose property is a plain `string` (no
/// `enum`, `const`, `pattern` or `format`, and room for the marker under
/// any `maxLength`). The first by name; `None` when there is none.
pub fn free_string_argument(
    schema: &serde_json::Value,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<String> {
    let props = schema.get("properties")?.as_object()?;
    args.iter()
        .find(|(k, v)| {
            let (Some(v), Some(p)) = (v.as_str(), props.get(*k)) else {
                return false;
            };
            let room = v.len() + 1 + PREFIX.len() + 20;
            p.get("type").and_then(serde_json::Value::as_str) == Some("string")
                && ["enum", "const", "pattern", "format"]
                    .iter()
                    .all(|c| p.get(c).is_none())
                && p.get("maxLength")
                    .and_then(serde_json::Value::as_u64)
                    .is_none_or(|m| m as usize >= room)
        })
        .map(|(k, _)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_attribute_replies() {
        let mut m = b"web".to_vec();
        append(&mut m, 42);
        assert_eq!(m, b"web ek-rt-42");
        let mut s = String::from("web");
        append_str(&mut s, 42);
        assert_eq!(s.as_bytes(), m);
        let own = br#"{"text":"Deploy web ek-rt-42?"}"#;
        assert_eq!(attribute(own, Some(42)), Attribution::Ours);
        // A longer number is another round trip, not a prefix match.
        let other = br#"{"text":"Deploy web ek-rt-421?"}"#;
        assert_eq!(attribute(other, Some(42)), Attribution::Foreign(421));
        assert_eq!(attribute(own, None), Attribution::Foreign(42));
        assert_eq!(
            attribute(b"{\"text\":\"Deployed web\"}", Some(42)),
            Attribution::Unattributed
        );
        // A prefix without digits is no marker.
        assert_eq!(
            attribute(b"ek-rt-x ek-rt-", Some(1)),
            Attribution::Unattributed
        );
        // Ours anywhere wins over another's (an aggregate may show both).
        assert_eq!(attribute(b"ek-rt-7 ek-rt-42", Some(42)), Attribution::Ours);
    }

    #[test]
    fn only_free_strings_carry_markers() {
        let schema = serde_json::json!({"properties": {
            "env": {"type": "string", "enum": ["a", "b"]},
            "code": {"type": "string", "maxLength": 3},
            "n": {"type": "integer"},
            "service": {"type": "string"},
        }});
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let all = args(serde_json::json!({"env": "a", "code": "AMS", "n": 1, "service": "web"}));
        assert_eq!(
            free_string_argument(&schema, &all).as_deref(),
            Some("service")
        );
        let none = args(serde_json::json!({"env": "a", "code": "AMS", "n": 1}));
        assert_eq!(free_string_argument(&schema, &none), None);
        assert_eq!(free_string_argument(&serde_json::json!({}), &all), None);
    }
}
