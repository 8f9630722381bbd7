//! Completing a server's URL-flow page the way a plain browser would: find
//! the first `<form>`, keep hidden values, fill visible fields with generated
//! values, and submit it `application/x-www-form-urlencoded`.
//!
//! The HTML scanner is deliberately tiny and tolerant: tag and attribute
//! names are case-insensitive, values may be double-, single- or unquoted,
//! comments and `<script>`/`<style>` bodies are skipped, and nothing panics
//! on malformed markup. It is not an HTML parser; it reads forms.

use super::leg::{Auth, HttpMethod, Outgoing, Target};
use std::sync::Arc;

/// One form control that a submission may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormField {
    /// The tag: `input`, `textarea`, `select` or `button`.
    pub tag: String,
    /// `type` attribute, lowercased (`text` when absent on an input).
    pub kind: String,
    /// `name` attribute (controls without one are never submitted).
    pub name: String,
    /// `value` attribute (for a select: the first option's value).
    pub value: Option<String>,
    /// Whether `checked` (checkboxes and radios) is present.
    pub checked: bool,
    /// The constraints a browser enforces before it submits.
    pub rules: FieldRules,
}

/// A control's validation attributes (`pattern`, `minlength`, `maxlength`,
/// `min`, `max`, `required`): a browser refuses to submit a value that
/// breaks them, so generated values keep to them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRules {
    /// `pattern` (the whole value must match).
    pub pattern: Option<String>,
    /// `minlength`.
    pub min_length: Option<usize>,
    /// `maxlength`.
    pub max_length: Option<usize>,
    /// `min` (numbers).
    pub min: Option<String>,
    /// `max` (numbers).
    pub max: Option<String>,
    /// `required`.
    pub required: bool,
}

/// The prefix of every secret-like value the browser types (API keys,
/// passwords): a marker checks search for in later replies and states.
pub const SECRET_MARKER: &str = "ekSECRET";

/// The prefix of every other free-text value the browser types (names,
/// notes, the local part of emails), so checks can find what was typed on a
/// page in later replies and states, whatever the field is called.
pub const TYPED_MARKER: &str = "ektyped";

/// A value the browser typed into a page's field (generated, not one the
/// page gave), as it was sent: checks search later replies and states for
/// it, whatever shape the field's `pattern` or `maxlength` forced on it
/// (a marker may not fit a six-digit code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typed {
    /// The field's name.
    pub field: String,
    /// The value sent.
    pub value: String,
    /// Whether it was typed as a secret (a password or key-like field).
    pub secret: bool,
}

/// The secret-like value typed into field `salt` of a form filled with `seed`.
pub fn secret_value(seed: u64, salt: u64) -> String {
    format!("{SECRET_MARKER}{}", hex(seed, salt, 24))
}

/// The first form of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlForm {
    /// `method`, lowercased (`get` when absent).
    pub method: String,
    /// `action` as written (`None` = the page's own URL).
    pub action: Option<String>,
    /// Named controls in document order.
    pub fields: Vec<FormField>,
}

/// A start or end tag with its attributes.
#[derive(Debug)]
struct Tag {
    name: String,
    end: bool,
    attrs: Vec<(String, String)>,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Scans tags one by one.
struct Scanner<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a str) -> Self {
        Scanner { s, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    /// Skips to just after `needle` (case-insensitive ASCII), or to the end.
    fn skip_past(&mut self, needle: &str) {
        let hay = self.rest().as_bytes();
        let n = needle.as_bytes();
        let found = hay
            .windows(n.len().max(1))
            .position(|w| w.eq_ignore_ascii_case(n));
        self.pos = match found {
            Some(i) => self.pos + i + n.len(),
            None => self.s.len(),
        };
    }

    fn next_tag(&mut self) -> Option<Tag> {
        loop {
            let rest = self.rest();
            let lt = rest.find('<')?;
            self.pos += lt + 1;
            let rest = self.rest();
            if rest.starts_with("!--") {
                self.skip_past("-->");
                continue;
            }
            if rest.starts_with('!') || rest.starts_with('?') {
                self.skip_past(">");
                continue;
            }
            let (end, after_slash) = match rest.strip_prefix('/') {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let name_len = after_slash
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
                .count();
            if name_len == 0 {
                continue; // a stray '<'
            }
            let name = after_slash[..name_len].to_ascii_lowercase();
            self.pos += usize::from(end) + name_len;
            let attrs = self.attributes();
            if !end && (name == "script" || name == "style") {
                self.skip_past(&format!("</{name}"));
                self.skip_past(">");
            }
            return Some(Tag { name, end, attrs });
        }
    }

    /// Reads attributes up to and including the closing `>`.
    fn attributes(&mut self) -> Vec<(String, String)> {
        let mut attrs = Vec::new();
        let bytes = self.s.as_bytes();
        let mut i = self.pos;
        loop {
            while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
                i += 1;
            }
            if i >= bytes.len() {
                break;
            }
            if bytes[i] == b'>' {
                i += 1;
                break;
            }
            let start = i;
            while i < bytes.len()
                && !bytes[i].is_ascii_whitespace()
                && !matches!(bytes[i], b'=' | b'>' | b'/')
            {
                i += 1;
            }
            let key = self.s.get(start..i).unwrap_or("").to_ascii_lowercase();
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            let mut value = String::new();
            if i < bytes.len() && bytes[i] == b'=' {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                    let q = bytes[i];
                    let vstart = i + 1;
                    let vend = bytes[vstart..]
                        .iter()
                        .position(|&b| b == q)
                        .map_or(bytes.len(), |p| vstart + p);
                    value = decode_entities(self.s.get(vstart..vend).unwrap_or(""));
                    i = (vend + 1).min(bytes.len());
                } else {
                    let vstart = i;
                    while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                        i += 1;
                    }
                    value = decode_entities(self.s.get(vstart..i).unwrap_or(""));
                }
            }
            if !key.is_empty() {
                attrs.push((key, value));
            } else if i == start {
                i += 1; // never loop without progress
            }
        }
        self.pos = i.min(self.s.len());
        attrs
    }
}

/// Decodes the common character references in attribute values.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let semi = rest.find(';').filter(|&i| i <= 10);
        let decoded = semi.and_then(|i| {
            let ent = &rest[1..i];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => {
                    let num = ent.strip_prefix('#')?;
                    let code = match num.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                        None => num.parse().ok()?,
                    };
                    char::from_u32(code)
                }
            }?;
            Some((c, i + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Finds the first `<form>` in `html` and its named controls.
pub fn find_form(html: &str) -> Option<HtmlForm> {
    let mut sc = Scanner::new(html);
    let form_tag = loop {
        let t = sc.next_tag()?;
        if t.name == "form" && !t.end {
            break t;
        }
    };
    let mut form = HtmlForm {
        method: form_tag
            .attr("method")
            .map_or_else(|| "get".to_owned(), str::to_ascii_lowercase),
        action: form_tag.attr("action").map(str::to_owned),
        fields: Vec::new(),
    };
    let mut open_select: Option<usize> = None;
    while let Some(t) = sc.next_tag() {
        if t.name == "form" && t.end {
            break;
        }
        if t.end {
            if t.name == "select" {
                open_select = None;
            }
            continue;
        }
        match t.name.as_str() {
            "input" | "textarea" | "button" | "select" => {
                let Some(name) = t.attr("name").filter(|n| !n.is_empty()) else {
                    continue;
                };
                let kind = match t.name.as_str() {
                    "input" => t.attr("type").unwrap_or("text").to_ascii_lowercase(),
                    "button" => t.attr("type").unwrap_or("submit").to_ascii_lowercase(),
                    other => other.to_owned(),
                };
                let num = |k: &str| t.attr(k).and_then(|v| v.trim().parse::<usize>().ok());
                form.fields.push(FormField {
                    tag: t.name.clone(),
                    kind,
                    name: name.to_owned(),
                    value: t.attr("value").map(str::to_owned),
                    checked: t.attrs.iter().any(|(k, _)| k == "checked"),
                    rules: FieldRules {
                        pattern: t.attr("pattern").map(str::to_owned),
                        min_length: num("minlength"),
                        max_length: num("maxlength"),
                        min: t.attr("min").map(str::to_owned),
                        max: t.attr("max").map(str::to_owned),
                        required: t.attrs.iter().any(|(k, _)| k == "required"),
                    },
                });
                if t.name == "select" {
                    open_select = Some(form.fields.len() - 1);
                }
            }
            "option" => {
                if let Some(i) = open_select
                    && form.fields[i].value.is_none()
                {
                    form.fields[i].value = Some(t.attr("value").unwrap_or("").to_owned());
                }
            }
            _ => {}
        }
    }
    Some(form)
}

fn hex(seed: u64, salt: u64, len: usize) -> String {
    let mut x = seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut out = String::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(&format!("{x:016x}"));
    }
    out.truncate(len);
    out
}

fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["key", "token", "secret", "password", "passwd"]
        .iter()
        .any(|w| n.contains(w))
}

/// `preferred` if it keeps to the field's rules, else a value that does
/// (from its `pattern`), else `preferred` cut or padded to its lengths.
fn constrain(f: &FormField, preferred: String, salt: u64) -> String {
    use crate::schema::pattern::{Lengths, sample};
    let r = &f.rules;
    let lengths = Lengths {
        min: r.min_length.unwrap_or(0),
        max: r.max_length.unwrap_or(usize::MAX),
    };
    let digits: String = preferred.chars().filter(char::is_ascii_digit).collect();
    let candidates = [
        preferred.clone(),
        preferred
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect(),
        digits,
    ];
    if let Some(p) = &r.pattern
        && let Some(v) = sample(p, true, lengths, &candidates, salt)
    {
        return v;
    }
    let mut v = preferred;
    while v.chars().count() < lengths.min {
        v.push('0');
    }
    v.chars().take(lengths.max).collect()
}

/// A number within a field's `min` / `max` (their midpoint when both are set).
fn number_in(r: &FieldRules) -> String {
    let min = r.min.as_deref().and_then(|v| v.trim().parse::<f64>().ok());
    let max = r.max.as_deref().and_then(|v| v.trim().parse::<f64>().ok());
    let v = match (min, max) {
        (Some(a), Some(b)) => ((a + b) / 2.0).floor().max(a),
        (Some(a), None) => a,
        (None, Some(b)) => b.min(1.0),
        (None, None) => 1.0,
    };
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}

impl HtmlForm {
    /// The name/value pairs a browser would submit, with visible fields filled
    /// deterministically from `seed` (password and key-like fields get a
    /// marked secret, [`secret_value`]; URLs and numbers a plausible value;
    /// emails and other empty text fields a [`TYPED_MARKER`] one), every
    /// value kept to its field's `pattern`, length and range attributes. The
    /// first named submit button is included, as if clicked.
    pub fn fill(&self, seed: u64) -> Vec<(String, String)> {
        self.fill_typed(seed).0
    }

    /// [`HtmlForm::fill`], and the values among them the browser typed
    /// itself ([`Typed`]: text, password, email and key-like fields left
    /// empty by the page).
    pub fn fill_typed(&self, seed: u64) -> (Vec<(String, String)>, Vec<Typed>) {
        let mut out = Vec::new();
        let mut typed = Vec::new();
        let mut radios_done: Vec<&str> = Vec::new();
        let mut submitted = false;
        for (i, f) in self.fields.iter().enumerate() {
            let salt = i as u64;
            let given = f.value.clone().filter(|v| !v.is_empty());
            // A value the browser typed itself, kept to be searched for.
            let mut keep = |value: String, secret: bool| {
                typed.push(Typed {
                    field: f.name.clone(),
                    value: value.clone(),
                    secret,
                });
                value
            };
            let value = match f.kind.as_str() {
                "hidden" => Some(f.value.clone().unwrap_or_default()),
                "submit" | "image" => {
                    if submitted {
                        None
                    } else {
                        submitted = true;
                        Some(f.value.clone().unwrap_or_default())
                    }
                }
                "reset" | "button" | "file" => None,
                "checkbox" => f
                    .checked
                    .then(|| f.value.clone().unwrap_or_else(|| "on".into())),
                "radio" => {
                    let first_of_group = !radios_done.contains(&f.name.as_str());
                    let checked_later = self
                        .fields
                        .iter()
                        .any(|g| g.kind == "radio" && g.name == f.name && g.checked);
                    if first_of_group && (f.checked || !checked_later) {
                        radios_done.push(&f.name);
                        Some(f.value.clone().unwrap_or_else(|| "on".into()))
                    } else {
                        None
                    }
                }
                "password" => Some(keep(constrain(f, secret_value(seed, salt), salt), true)),
                "email" => Some(given.unwrap_or_else(|| {
                    let local = format!("{TYPED_MARKER}{}", hex(seed, salt, 8));
                    keep(constrain(f, format!("{local}@example.com"), salt), false)
                })),
                "url" => {
                    Some(given.unwrap_or_else(|| constrain(f, "https://example.com/".into(), salt)))
                }
                "number" | "range" => Some(given.unwrap_or_else(|| number_in(&f.rules))),
                "select" => Some(f.value.clone().unwrap_or_default()),
                _ if looks_secret(&f.name) && given.is_none() => {
                    Some(keep(constrain(f, secret_value(seed, salt), salt), true))
                }
                _ => Some(given.unwrap_or_else(|| {
                    let marked = format!("{TYPED_MARKER}{}", hex(seed, salt, 8));
                    keep(constrain(f, marked, salt), false)
                })),
            };
            if let Some(v) = value {
                out.push((f.name.clone(), v));
            }
        }
        (out, typed)
    }

    /// `fill(seed)` encoded as an `application/x-www-form-urlencoded` body.
    pub fn encoded_body(&self, seed: u64) -> String {
        encode(&self.fill(seed))
    }

    /// The absolute URL to submit to, resolved against the page's URL (or the
    /// `action` as written when the page URL is not absolute).
    pub fn target(&self, page_url: &str) -> String {
        let action = self.action.as_deref().unwrap_or("");
        match url::Url::parse(page_url).and_then(|u| u.join(action)) {
            Ok(u) => u.to_string(),
            Err(_) if action.is_empty() => page_url.to_owned(),
            Err(_) => action.to_owned(),
        }
    }
}

/// The browser-style GET of a flow page (with the primary principal's auth).
pub fn page_request(url: &str) -> Outgoing {
    Outgoing {
        leg: "flow page GET".into(),
        target: Target::Page {
            url: url.to_owned(),
        },
        method: HttpMethod::Get,
        headers: Arc::new([(
            "Accept".into(),
            "text/html,application/xhtml+xml,*/*;q=0.8".into(),
        )]),
        body: Vec::new(),
        auth: Auth::Primary,
    }
}

/// Name/value pairs as an `application/x-www-form-urlencoded` body.
fn encode(pairs: &[(String, String)]) -> String {
    let mut ser = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        ser.append_pair(k, v);
    }
    ser.finish()
}

/// The submission of the first form of `html` (fetched from `page_url`), as
/// a browser would send it; `None` when the page has no form.
pub fn submit_request(page_url: &str, html: &str, seed: u64) -> Option<Outgoing> {
    submit_typed(page_url, html, seed).map(|(out, _)| out)
}

/// [`submit_request`], and the values the browser typed into it.
pub fn submit_typed(page_url: &str, html: &str, seed: u64) -> Option<(Outgoing, Vec<Typed>)> {
    let form = find_form(html)?;
    let (pairs, typed) = form.fill_typed(seed);
    let encoded = encode(&pairs);
    let mut target = form.target(page_url);
    let (method, body) = if form.method == "get" {
        target.push(if target.contains('?') { '&' } else { '?' });
        target.push_str(&encoded);
        (HttpMethod::Get, Vec::new())
    } else {
        (HttpMethod::Post, encoded.into_bytes())
    };
    let out = Outgoing {
        leg: "flow page POST".into(),
        target: Target::Page { url: target },
        method,
        headers: Arc::new([
            (
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
            ("Accept".into(), "text/html, */*;q=0.8".into()),
        ]),
        body,
        auth: Auth::Primary,
    };
    Some((out, typed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: &str = r#"<!doctype html>
<html><head><title>Connect billing</title><style>form > input { color: red }</style></head>
<body><h1>Connect billing</h1>
<!-- <form action="/decoy"> -->
<form method="post" action="/flow/abc123">
  <input type="hidden" name="csrf" value="tok&amp;en/+=">
  <label>API key <input type="password" name="api_key"></label>
  <button type="submit">Connect</button>
</form></body></html>"#;

    #[test]
    fn reads_the_reference_page() {
        let f = find_form(REFERENCE).unwrap();
        assert_eq!(f.method, "post");
        assert_eq!(f.action.as_deref(), Some("/flow/abc123"));
        let pairs = f.fill(7);
        assert_eq!(pairs[0], ("csrf".into(), "tok&en/+=".into()));
        assert_eq!(pairs[1].0, "api_key");
        assert!(pairs[1].1.starts_with(SECRET_MARKER));
        assert_eq!(pairs[1].1.len(), SECRET_MARKER.len() + 24);
        assert_eq!(pairs.len(), 2, "unnamed button is not submitted");
        assert_eq!(f.fill(7), f.fill(7));
        assert_ne!(f.fill(7), f.fill(8));
        let body = f.encoded_body(7);
        assert!(body.starts_with("csrf=tok%26en%2F%2B%3D&api_key=ekSECRET"));
        assert_eq!(
            f.target("http://127.0.0.1:9/flow/abc123"),
            "http://127.0.0.1:9/flow/abc123"
        );
    }

    #[test]
    fn tolerates_case_quotes_and_attribute_order() {
        let html = "<FORM ACTION='/f/1' Method=POST><INPUT value=xyz NAME=csrf TYPE=HIDDEN/>\
                    <input name=\"api_key\" type=\"PASSWORD\" ><Input name=email type=email>\
                    <input type=text name=note value=''><textarea name=t></textarea>\
                    <select name=s><option value=a>A<option value=b>B</select>\
                    <input type=checkbox name=c1 checked><input type=checkbox name=c2>\
                    <input type=radio name=r value=1><input type=radio name=r value=2 checked>\
                    <input type=submit name=go value=Go><input type=submit name=no value=No></form>\
                    <form action=/second><input name=z></form>";
        let f = find_form(html).unwrap();
        assert_eq!(f.method, "post");
        assert_eq!(f.action.as_deref(), Some("/f/1"));
        let pairs = f.fill(1);
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("csrf"), Some("xyz"));
        assert!(get("api_key").unwrap().starts_with(SECRET_MARKER));
        assert!(get("email").unwrap().ends_with("@example.com"));
        assert!(get("note").unwrap().starts_with(TYPED_MARKER));
        assert!(get("email").unwrap().starts_with(TYPED_MARKER));
        assert!(get("t").is_some());
        assert_eq!(get("s"), Some("a"));
        assert_eq!(get("c1"), Some("on"));
        assert_eq!(get("c2"), None);
        assert_eq!(get("r"), Some("2"));
        assert_eq!(get("go"), Some("Go"));
        assert_eq!(get("no"), None);
        assert_eq!(get("z"), None, "only the first form");
        assert_eq!(
            f.target("http://h:1/flow/x?y=1"),
            "http://h:1/f/1",
            "absolute-path action"
        );
    }

    #[test]
    fn values_keep_to_the_fields_constraints() {
        let html = "<form method=post><input type=hidden name=id value=f1>\
            <input type=password name=api_key required minlength=12 pattern='[A-Za-z0-9]+'>\
            <input name=code pattern='[0-9]{6}'><input name=short maxlength=4>\
            <input type=number name=n min=3 max=9><input name=pin minlength=40></form>";
        let f = find_form(html).unwrap();
        assert_eq!(f.fields[1].rules.min_length, Some(12));
        assert!(f.fields[1].rules.required);
        for seed in 0..20 {
            let pairs = f.fill(seed);
            let get = |k: &str| pairs.iter().find(|(n, _)| n == k).unwrap().1.clone();
            let key = get("api_key");
            assert!(key.starts_with(SECRET_MARKER), "{key}");
            assert!(key.len() >= 12 && key.bytes().all(|b| b.is_ascii_alphanumeric()));
            let code = get("code");
            assert!(
                code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()),
                "{code}"
            );
            assert!(get("short").chars().count() <= 4);
            assert_eq!(get("n"), "6");
            assert!(get("pin").chars().count() >= 40);
        }
    }

    #[test]
    fn what_was_typed_is_told_whatever_the_pattern_made_of_it() {
        let html = "<form method=post><input type=hidden name=csrf value=c>\
            <input type=password name=code pattern='[0-9]{6}' required>\
            <input name=note><input name=given value=kept><select name=s><option value=a></select></form>";
        let f = find_form(html).unwrap();
        let (pairs, typed) = f.fill_typed(3);
        assert_eq!(pairs, f.fill(3));
        let names: Vec<&str> = typed.iter().map(|t| t.field.as_str()).collect();
        assert_eq!(names, ["code", "note"], "only values the browser made up");
        let code = &typed[0];
        assert!(code.secret);
        assert!(
            code.value.len() == 6 && code.value.bytes().all(|b| b.is_ascii_digit()),
            "{code:?}"
        );
        assert!(
            !code.value.contains(SECRET_MARKER),
            "the marker does not fit"
        );
        assert!(pairs.contains(&("code".to_owned(), code.value.clone())));
        assert!(!typed[1].secret && typed[1].value.starts_with(TYPED_MARKER));
        let (out, sent) = submit_typed("http://h/p", html, 3).unwrap();
        assert_eq!(sent, typed);
        assert_eq!(Some(out), submit_request("http://h/p", html, 3));
    }

    #[test]
    fn missing_form_and_garbage_do_not_panic() {
        assert_eq!(find_form("<p>no form here</p>"), None);
        for junk in [
            "",
            "<",
            "<form",
            "<form action=\"unterminated",
            "<<<>>><form><input name='a",
            "<form><input name=a value=&#xZZ;&#99999999;&bogus",
            "<script><form action=/x></script>",
            "é<ß<form méthod=ü><input naμe=x>",
        ] {
            let _ = find_form(junk).map(|f| f.fill(0));
        }
        let f = find_form("<form><input name=a value='&#x41;&lt;&gt;&amp'></form>").unwrap();
        assert_eq!(f.fields[0].value.as_deref(), Some("A<>&amp"));
        assert_eq!(f.method, "get");
        assert_eq!(f.target("http://h/p"), "http://h/p");
        assert_eq!(
            find_form("<script>'<form action=/x>'</script>"),
            None,
            "script bodies are skipped"
        );
    }
}
