//! Secret and URL heuristics (spec §3.6 rules 1 and 4).
//!
//! **Forms.** A free-input field (string or number) that asks for a secret
//! is a `form-asks-for-secret` finding (spec §3.6 rule 1, a MUST: secrets
//! belong in URL mode). Its severity follows how plainly it asks
//! ([`SecretAsk`]): a name or title that names a password, API key, token,
//! client secret, private key or card number/CVC, or `format: password`, is
//! MUST; a secret word only in the description, or a weaker word anywhere
//! (PIN, SSN, OTP/2FA or verification code, "secret", IBAN, seed phrase…),
//! is SHOULD, for review (a word match is a heuristic, spec digest §6.A 7).
//! Words under a negation in the same sentence (`do not give us your PIN`,
//! `we never ask for your password`, `without a password`) do not count: a
//! warning against secrets is not a request for one. Text is split into
//! words (on punctuation, `snake_case`, `kebab-case` and `camelCase`/`APIKey`
//! boundaries) and
//! matched word by word, so `secretary`, `passport`, `tokenizer` or
//! `keyboard` never match. A word followed by a meta word (`password
//! length`, `token count`, `pin type`...) does not count, and `token` does
//! not count next to quantity words (`max token`, `token limit`). Booleans
//! and selects are not checked: their values are fixed by the server, so
//! they cannot carry a typed secret.
//!
//! Clickable URLs (`scheme://` or `www.`) in a field's title, description,
//! option labels or defaults, or in the request `message`, are a SHOULD
//! finding `form-contains-url`. The default of a `format: uri` field is
//! exempt: it pre-fills an input, it is not a link.
//!
//! **URL mode.** [`url_findings`] reports, for one URL:
//! `url-invalid` (MUST; not an absolute URL, or whitespace/control
//! characters), `url-bad-scheme` (MUST; anything but http/https, e.g.
//! `javascript:`, `data:`, `file:`), `url-not-https` (SHOULD; `http:` to a
//! host other than loopback), `url-carries-credentials` (MUST; userinfo, a
//! credential-named parameter with a value, a JWT or `Bearer` value, in the
//! query, fragment or path) and `url-carries-personal-data` (MUST; a
//! personal-data parameter name, or an e-mail address, phone number or SSN
//! pattern in a value or path segment). At most [`MAX_URL_FINDINGS`] are
//! listed per URL.

use serde_json::Value;

use super::formats::is_email;
use super::model::{FieldSchema, RequestedSchema, SingleSelectStyle, StringFormat};
use super::parse::parse_schema;
use crate::findings::{Finding, Severity, pointer_push};

/// Most findings [`url_findings`] reports for one URL.
pub const MAX_URL_FINDINGS: usize = 16;

/// Secret words that do not name the secret outright (see [`PLAIN_WORDS`]
/// for those): a field asking with one of them is for review.
const WEAK_WORDS: &[&str] = &[
    "passcode",
    "secret",
    "secrets",
    "bearer",
    "csc",
    "pin",
    "ssn",
    "otp",
    "totp",
    "2fa",
    "mfa",
    "iban",
    "credential",
    "credentials",
    "mnemonic",
];

/// Word sequences that are secrets together, without naming them outright
/// (see [`PLAIN_PHRASES`]).
const WEAK_PHRASES: &[&[&str]] = &[
    &["signing", "key"],
    &["encryption", "key"],
    &["license", "key"],
    &["security", "code"],
    &["verification", "code"],
    &["auth", "code"],
    &["authentication", "code"],
    &["authorization", "code"],
    &["recovery", "code"],
    &["backup", "code"],
    &["one", "time", "code"],
    &["two", "factor"],
    &["social", "security"],
    &["seed", "phrase"],
    &["recovery", "phrase"],
];

/// Words that, right after a secret word, turn it into metadata.
const META_AFTER: &[&str] = &[
    "length",
    "count",
    "counts",
    "limit",
    "limits",
    "policy",
    "strength",
    "requirements",
    "rules",
    "hint",
    "expiry",
    "expiration",
    "lifetime",
    "ttl",
    "age",
    "size",
    "name",
    "symbol",
    "type",
    "id",
    "ids",
    "address",
    "reset",
];

/// Quantity words that stop `token` meaning a credential.
const TOKEN_QUANTITY: &[&str] = &[
    "max", "maximum", "min", "minimum", "total", "count", "limit", "budget", "usage", "used",
    "input", "output", "context", "per", "number",
];

/// Splits text into lowercase words on non-alphanumerics and case changes.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let after_alnum_word = prev.is_numeric() && cur.chars().any(char::is_alphabetic);
            if prev.is_lowercase() || after_alnum_word || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Words that, earlier in the same sentence, turn a secret word into a
/// warning against it (`n't` is read as `not`).
const NEGATIONS: &[&str] = &[
    "not", "never", "no", "without", "avoid", "nor", "neither", "nobody", "none",
];

/// How plainly a text asks for a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SecretAsk {
    /// A secret word in passing (a PIN, a code, "secret"): worth a review.
    Word,
    /// It names a password, API key, token, client secret, private key or
    /// card number/CVC outright.
    Plain,
}

/// Secret words that name the secret outright (a field so named or titled
/// asks for it): passwords, API keys, tokens, client secrets, private keys,
/// card numbers and card codes.
const PLAIN_WORDS: &[&str] = &[
    "password",
    "passwords",
    "passwd",
    "pwd",
    "passphrase",
    "apikey",
    "apikeys",
    "privatekey",
    "secretkey",
    "accesskey",
    "accesstoken",
    "refreshtoken",
    "bearertoken",
    "authtoken",
    "apitoken",
    "idtoken",
    "sessiontoken",
    "clientsecret",
    "token",
    "cvv",
    "cvc",
    "cvv2",
    "cvc2",
    "creditcard",
    "cardnumber",
];

/// Phrases that name the secret outright (see [`PLAIN_WORDS`]).
const PLAIN_PHRASES: &[&[&str]] = &[
    &["api", "key"],
    &["api", "keys"],
    &["private", "key"],
    &["secret", "key"],
    &["access", "key"],
    &["client", "secret"],
    &["credit", "card"],
    &["debit", "card"],
    &["payment", "card"],
    &["card", "number"],
    &["card", "no"],
    &["cc", "number"],
];

/// True when `text` (a field name, title or description) asks for a secret.
pub fn asks_for_secret(text: &str) -> bool {
    secret_ask(text).is_some()
}

/// How plainly `text` asks for a secret, if it does (the plainest sentence
/// decides).
pub fn secret_ask(text: &str) -> Option<SecretAsk> {
    let normalised = text.replace("n't", " not").replace("n’t", " not");
    normalised
        .split(['.', '!', '?', ';', '\n'])
        .filter_map(sentence_secret_ask)
        .max()
}

fn sentence_secret_ask(text: &str) -> Option<SecretAsk> {
    let words = split_words(text);
    let has = |set: &[&str], w: &str| set.contains(&w);
    let phrase_at = |i: usize, phrase: &[&str]| {
        let end = i + phrase.len();
        end <= words.len()
            && words[i..end].iter().zip(phrase.iter()).all(|(a, b)| a == b)
            && !words.get(end).is_some_and(|n| has(META_AFTER, n))
    };
    let mut found = None;
    for (i, w) in words.iter().enumerate() {
        if words.get(i + 1).is_some_and(|n| has(META_AFTER, n)) {
            continue;
        }
        if words[..i].iter().any(|x| has(NEGATIONS, x)) {
            break;
        }
        let ask = if w == "token" {
            if words.iter().any(|x| has(TOKEN_QUANTITY, x)) {
                continue;
            }
            SecretAsk::Plain
        } else if has(PLAIN_WORDS, w) || PLAIN_PHRASES.iter().any(|p| phrase_at(i, p)) {
            SecretAsk::Plain
        } else if has(WEAK_WORDS, w) || WEAK_PHRASES.iter().any(|p| phrase_at(i, p)) {
            SecretAsk::Word
        } else {
            continue;
        };
        found = found.max(Some(ask));
    }
    found
}

/// True when `text` holds something a client would render as a link
/// (`scheme://` after a letter, or `www.` at a word start).
pub fn contains_clickable_url(text: &str) -> bool {
    let b = text.as_bytes();
    for (i, _) in text.match_indices("://") {
        if i > 0 && b[i - 1].is_ascii_alphabetic() {
            return true;
        }
    }
    let lower = text.to_ascii_lowercase();
    lower.match_indices("www.").any(|(i, _)| {
        (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + 4).is_some_and(u8::is_ascii_alphanumeric)
    })
}

fn url_finding(out: &mut Vec<Finding>, pointer: String, what: &str) {
    out.push(Finding::new(
        Severity::Should,
        pointer,
        "form-contains-url",
        format!("{what} contains a clickable URL; form-mode requests should not carry links"),
    ));
}

/// The `form-asks-for-secret` finding of one free-input field, if any.
/// A name or title that names a password, API key, token, client secret,
/// private key or card number/CVC (or `format: password`, which the model
/// drops and `password_format` reports) asks plainly: a MUST, as the spec
/// says. A secret word only in the description, or a weaker word (PIN,
/// code, "secret") anywhere, is a SHOULD to review.
fn secret_field_finding(
    out: &mut Vec<Finding>,
    ptr: &str,
    name: &str,
    field: &FieldSchema,
    password_format: bool,
) {
    let named = [Some(name), field.title()]
        .into_iter()
        .flatten()
        .filter_map(secret_ask)
        .max();
    let described = field.description().and_then(secret_ask);
    let plain = password_format || named == Some(SecretAsk::Plain);
    let (severity, why) = if plain {
        let said = if password_format {
            "its format is password"
        } else if secret_ask(name) == Some(SecretAsk::Plain) {
            "its name names one"
        } else {
            "its title names one"
        };
        (
            Severity::Must,
            format!(
                "field \"{name}\" asks for a secret ({said}): a form MUST NOT ask for passwords, \
                 API keys, tokens or card data; send the user to a URL-mode page instead"
            ),
        )
    } else if named.is_some() || described.is_some() {
        (
            Severity::Should,
            format!(
                "field \"{name}\" appears to ask for a secret (a word match: review it); \
                 secrets belong in URL mode, never in a form"
            ),
        )
    } else {
        return;
    };
    out.push(Finding::new(severity, ptr, "form-asks-for-secret", why));
}

/// Secret-asking fields and clickable URLs in a parsed form schema.
/// Pointers are into the schema (`/properties/password`).
pub fn form_secret_findings(schema: &RequestedSchema) -> Vec<Finding> {
    secret_and_url_findings(schema, &[])
}

/// [`form_secret_findings`], with the names of the fields whose raw schema
/// says `format: password` (not a format of the spec, so not in the model).
fn secret_and_url_findings(schema: &RequestedSchema, password_fields: &[&str]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, field) in &schema.properties {
        let ptr = pointer_push("/properties", name);
        let free_input = matches!(field, FieldSchema::String(_) | FieldSchema::Number(_));
        if free_input {
            let password_format = password_fields.contains(&name.as_str());
            secret_field_finding(&mut out, &ptr, name, field, password_format);
        }
        if field.title().is_some_and(contains_clickable_url) {
            url_finding(&mut out, pointer_push(&ptr, "title"), "the title");
        }
        if field.description().is_some_and(contains_clickable_url) {
            url_finding(
                &mut out,
                pointer_push(&ptr, "description"),
                "the description",
            );
        }
        let uri_field =
            matches!(field, FieldSchema::String(f) if f.format == Some(StringFormat::Uri));
        let default_has_url = match field.default_value() {
            Some(Value::String(s)) => contains_clickable_url(&s),
            Some(Value::Array(a)) => a
                .iter()
                .any(|v| v.as_str().is_some_and(contains_clickable_url)),
            _ => false,
        };
        if default_has_url && !uri_field {
            url_finding(&mut out, pointer_push(&ptr, "default"), "the default");
        }
        let options_have_url = match field {
            FieldSchema::SingleSelect(f) => f.options.iter().any(|o| {
                o.title.as_deref().is_some_and(contains_clickable_url)
                    || (f.style == SingleSelectStyle::Untitled && contains_clickable_url(&o.value))
            }),
            FieldSchema::MultiSelect(f) => f.options.iter().any(|o| {
                o.title.as_deref().is_some_and(contains_clickable_url)
                    || contains_clickable_url(&o.value)
            }),
            _ => false,
        };
        if options_have_url {
            url_finding(&mut out, ptr.clone(), "an option label");
        }
    }
    out
}

/// [`form_secret_findings`] plus the `message`, for the `params` of a
/// form-mode `elicitation/create` (or a Gen B input request's `params`).
/// Pointers are into `params`. URL-mode params yield nothing here.
pub fn form_request_findings(params: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return out;
    }
    if let Some(msg) = params.get("message").and_then(Value::as_str)
        && contains_clickable_url(msg)
    {
        url_finding(&mut out, "/message".into(), "the message");
    }
    if let Some(schema) = params.get("requestedSchema")
        && let (Some(model), _) = parse_schema(schema)
    {
        let password_fields: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, v)| v.get("format").and_then(Value::as_str) == Some("password"))
            .map(|(k, _)| k.as_str())
            .collect();
        for mut f in secret_and_url_findings(&model, &password_fields) {
            f.pointer.insert_str(0, "/requestedSchema");
            out.push(f);
        }
    }
    out
}

fn normalise_key(k: &str) -> String {
    k.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

const CREDENTIAL_KEYS: &[&str] = &[
    "token",
    "auth",
    "authorization",
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "secret",
    "apikey",
    "key",
    "privatekey",
    "secretkey",
    "accesskey",
    "session",
    "sessionid",
    "sid",
    "jsessionid",
    "phpsessid",
    "credential",
    "credentials",
    "otp",
    "pin",
    "cvv",
    "cvc",
    "creditcard",
    "cardnumber",
];

const PERSONAL_KEYS: &[&str] = &[
    "email",
    "emailaddress",
    "mail",
    "useremail",
    "ssn",
    "socialsecuritynumber",
    "phone",
    "phonenumber",
    "tel",
    "telephone",
    "mobile",
    "dob",
    "dateofbirth",
    "birthdate",
    "birthday",
    "firstname",
    "lastname",
    "fullname",
    "surname",
    "address",
    "streetaddress",
    "passport",
    "passportnumber",
];

fn is_credential_key(k: &str) -> bool {
    CREDENTIAL_KEYS.contains(&k)
        || ["token", "password", "secret", "apikey", "sessionid"]
            .iter()
            .any(|s| k.ends_with(s))
}

fn looks_like_jwt(v: &str) -> bool {
    v.starts_with("eyJ")
        && v.split('.').count() == 3
        && v.split('.').all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

fn looks_like_phone(v: &str) -> bool {
    let t = v.trim();
    let digits = t.bytes().filter(u8::is_ascii_digit).count();
    let only_phone_chars = t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b' ' | b'-' | b'.' | b'(' | b')'));
    if !only_phone_chars || digits == 0 {
        return false;
    }
    if t.starts_with('+') {
        return (8..=15).contains(&digits);
    }
    // NNN-NNN-NNNN or (NNN) NNN-NNNN style.
    let groups: Vec<&str> = t
        .split([' ', '-', '.', '(', ')'])
        .filter(|g| !g.is_empty())
        .collect();
    groups.len() == 3
        && groups[0].len() == 3
        && groups[1].len() == 3
        && groups[2].len() == 4
        && t.contains(['-', '.', ' ', ')'])
}

fn looks_like_ssn(v: &str) -> bool {
    let b = v.trim().as_bytes();
    b.len() == 11
        && b[3] == b'-'
        && b[6] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 3 || i == 6 || c.is_ascii_digit())
}

fn contains_email(v: &str) -> bool {
    v.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ',' | ';' | '<' | '>' | '"' | '\'' | '(' | ')' | '/' | '?' | '&' | '='
            )
    })
    .any(is_email)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

struct UrlCx {
    out: Vec<Finding>,
    pointer: String,
}

impl UrlCx {
    fn add(&mut self, severity: Severity, rule: &str, msg: String) {
        if self.out.len() < MAX_URL_FINDINGS {
            self.out
                .push(Finding::new(severity, self.pointer.as_str(), rule, msg));
        }
    }

    fn value(&mut self, where_: &str, v: &str) {
        if looks_like_jwt(v) || v.trim_start().to_ascii_lowercase().starts_with("bearer ") {
            self.add(
                Severity::Must,
                "url-carries-credentials",
                format!("{where_} carries what looks like a bearer token"),
            );
        } else if contains_email(v) {
            self.add(
                Severity::Must,
                "url-carries-personal-data",
                format!("{where_} carries an e-mail address"),
            );
        } else if looks_like_ssn(v) {
            self.add(
                Severity::Must,
                "url-carries-personal-data",
                format!("{where_} carries what looks like a social security number"),
            );
        } else if looks_like_phone(v) {
            self.add(
                Severity::Must,
                "url-carries-personal-data",
                format!("{where_} carries what looks like a phone number"),
            );
        }
    }

    fn pairs<'a>(
        &mut self,
        part: &str,
        pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
    ) {
        for (k, v) in pairs {
            if self.out.len() >= MAX_URL_FINDINGS {
                return;
            }
            if v.is_empty() {
                continue;
            }
            let nk = normalise_key(&k);
            if is_credential_key(&nk) {
                self.add(
                    Severity::Must,
                    "url-carries-credentials",
                    format!("{part} parameter `{k}` carries a credential; URLs must not"),
                );
            } else if PERSONAL_KEYS.contains(&nk.as_str()) {
                self.add(
                    Severity::Must,
                    "url-carries-personal-data",
                    format!("{part} parameter `{k}` carries personal data; URLs must not"),
                );
            } else {
                self.value(&format!("{part} parameter `{k}`"), &v);
            }
        }
    }
}

/// Findings for a URL-mode `url`, with pointer `""`; see the module docs.
pub fn url_findings(url: &str) -> Vec<Finding> {
    url_findings_at("", url)
}

/// [`url_findings`] with every finding at `pointer` (e.g. `/params/url`).
pub fn url_findings_at(pointer: &str, url: &str) -> Vec<Finding> {
    let mut cx = UrlCx {
        out: Vec::new(),
        pointer: pointer.to_string(),
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        cx.add(
            Severity::Must,
            "url-invalid",
            "the URL contains whitespace or control characters".into(),
        );
        return cx.out;
    }
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => {
            cx.add(
                Severity::Must,
                "url-invalid",
                format!("not a valid absolute URL: {e}"),
            );
            return cx.out;
        }
    };
    match parsed.scheme() {
        "https" => {}
        "http" => {
            let loopback = match parsed.host() {
                Some(url::Host::Domain(d)) => {
                    d.eq_ignore_ascii_case("localhost")
                        || d.to_ascii_lowercase().ends_with(".localhost")
                }
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            };
            if !loopback {
                cx.add(
                    Severity::Should,
                    "url-not-https",
                    "the URL uses http to a non-loopback host; use https outside development"
                        .into(),
                );
            }
        }
        other => {
            cx.add(
                Severity::Must,
                "url-bad-scheme",
                format!("scheme `{other}:` is not http or https; clients must not open it"),
            );
            return cx.out;
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        cx.add(
            Severity::Must,
            "url-carries-credentials",
            "the URL carries userinfo (user:pass@); URLs must not carry credentials".into(),
        );
    }
    cx.pairs("query", parsed.query_pairs());
    if let Some(frag) = parsed.fragment() {
        cx.pairs("fragment", url::form_urlencoded::parse(frag.as_bytes()));
    }
    for seg in parsed.path().split('/') {
        if seg.is_empty() {
            continue;
        }
        let decoded = percent_decode(seg);
        cx.value("a path segment", &decoded);
    }
    cx.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn word_splitting() {
        assert_eq!(split_words("myAPIKey"), ["my", "api", "key"]);
        assert_eq!(split_words("api_key-v2"), ["api", "key", "v2"]);
        assert_eq!(split_words("oauth2Token"), ["oauth2", "token"]);
        assert_eq!(split_words("Card №: CVV"), ["card", "cvv"]);
        assert_eq!(split_words(""), Vec::<String>::new());
    }

    #[test]
    fn secret_positives() {
        for t in [
            "password",
            "newPassword",
            "confirm_password",
            "Passphrase",
            "api_key",
            "apiKey",
            "OPENAI_API_KEY",
            "GitHub token",
            "access_token",
            "refreshToken",
            "Bearer token",
            "client secret",
            "Your secret",
            "privateKey",
            "SSH private key",
            "Credit card",
            "cardNumber",
            "Card number",
            "CVV",
            "cvc2",
            "PIN",
            "pin_code",
            "SSN",
            "Social security number",
            "OTP",
            "2FA code",
            "One-time code",
            "Verification code",
            "TOTP",
            "IBAN",
            "Seed phrase",
            "Enter your password (min 8 characters)",
            "Your PIN. Do not share it with anyone",
            "API key (not your password)",
        ] {
            assert!(asks_for_secret(t), "{t}");
        }
    }

    #[test]
    fn secret_negatives() {
        for t in [
            "name",
            "email",
            "username",
            "user_name",
            "Token count",
            "max_tokens",
            "Maximum tokens",
            "Token limit",
            "tokenizer",
            "secretary",
            "Secretariat",
            "passport",
            "Passenger",
            "keyboard",
            "Key name",
            "sort key",
            "pinned",
            "spinning",
            "Password length",
            "Minimum password length",
            "Card type",
            "Gift",
            "Department",
            "",
            "Notes. Do not give us your phone number, PIN, password or card number.",
            "We will never ask for your password",
            "Don't paste your API key here",
            "A nickname, without any secret",
        ] {
            assert!(!asks_for_secret(t), "{t}");
        }
    }

    #[test]
    fn clickable_urls() {
        assert!(contains_clickable_url("see https://x.org"));
        assert!(contains_clickable_url("WWW.example.com"));
        assert!(contains_clickable_url("(www.a.b)"));
        assert!(!contains_clickable_url("use the www. prefix? no: awww.x"));
        assert!(!contains_clickable_url("ratio 3://"));
        assert!(!contains_clickable_url("plain text"));
    }

    #[test]
    fn form_findings() {
        let schema = parse_schema(&json!({"type":"object","properties":{
            "password":{"type":"string"},
            "remember_password":{"type":"boolean"},
            "name":{"type":"string","description":"see https://example.com/help"},
            "site":{"type":"string","format":"uri","default":"https://example.com"},
            "pick":{"type":"string","oneOf":[{"const":"a","title":"www.evil.example"}]}}}))
        .0
        .expect("model");
        let f = form_secret_findings(&schema);
        let got: Vec<(&str, &str)> = f
            .iter()
            .map(|f| (f.pointer.as_str(), f.rule.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("/properties/name/description", "form-contains-url"),
                ("/properties/password", "form-asks-for-secret"),
                ("/properties/pick", "form-contains-url"),
            ]
        );
        // A field named password asks plainly: the spec's MUST.
        assert_eq!(f[1].severity, Severity::Must);
        assert_eq!(f[0].severity, Severity::Should);
    }

    /// (pointer, severity) of every form-asks-for-secret finding of a form.
    fn secret_rows(props: Value) -> Vec<(String, Severity)> {
        form_request_findings(&json!({"message": "m",
            "requestedSchema": {"type": "object", "properties": props}}))
        .into_iter()
        .filter(|f| f.rule == "form-asks-for-secret")
        .map(|f| (f.pointer, f.severity))
        .collect()
    }

    #[test]
    fn secret_fields_by_strength() {
        let p = |n: &str| format!("/requestedSchema/properties/{n}");
        // The spec's own example of what a form must not do.
        assert_eq!(
            secret_rows(json!({"api_key": {"type": "string", "title": "Enter your API key"}})),
            [(p("api_key"), Severity::Must)]
        );
        // A password by its title only; by format only.
        assert_eq!(
            secret_rows(json!({"pw": {"type": "string", "title": "Your account password"}})),
            [(p("pw"), Severity::Must)]
        );
        assert_eq!(
            secret_rows(json!({"value": {"type": "string", "format": "password"}})),
            [(p("value"), Severity::Must)]
        );
        for (name, title) in [
            ("token", "GitHub token"),
            ("secret", "Client secret"),
            ("key", "SSH private key"),
            ("cc", "Card number"),
            ("code", "CVC"),
        ] {
            assert_eq!(
                secret_rows(json!({name: {"type": "string", "title": title}})),
                [(p(name), Severity::Must)],
                "{title}"
            );
        }
        // Weak: a secret word only in the description, or a weaker word.
        assert_eq!(
            secret_rows(json!({"note": {"type": "string",
                "description": "The password you use for the portal"}})),
            [(p("note"), Severity::Should)]
        );
        assert_eq!(
            secret_rows(json!({"pin": {"type": "string", "title": "PIN"}})),
            [(p("pin"), Severity::Should)]
        );
        // A warning against secrets asks for none.
        assert!(
            secret_rows(json!({"note": {"type": "string",
                "description": "Never paste your password or API key here"}}))
            .is_empty()
        );
        assert!(
            secret_rows(json!({"max_tokens": {"type": "number", "title": "Max tokens"}}))
                .is_empty()
        );
    }

    #[test]
    fn form_request_prefixes_pointers() {
        let f = form_request_findings(&json!({"message":"Go to http://x.org",
            "requestedSchema":{"type":"object","properties":{"apiKey":{"type":"string"}}}}));
        let got: Vec<&str> = f.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(got, ["/message", "/requestedSchema/properties/apiKey"]);
        assert!(form_request_findings(&json!({"mode":"url","message":"https://x"})).is_empty());
    }

    fn url_rules(u: &str) -> Vec<String> {
        url_findings(u).into_iter().map(|f| f.rule).collect()
    }

    #[test]
    fn url_rules_fire() {
        assert!(url_rules("https://example.com/elicit/abc?x=1").is_empty());
        assert!(url_rules("http://127.0.0.1:8080/e").is_empty());
        assert!(url_rules("http://[::1]/e").is_empty());
        assert!(url_rules("http://localhost/e").is_empty());
        assert_eq!(url_rules("/relative"), ["url-invalid"]);
        assert_eq!(url_rules("https://x.org/a b"), ["url-invalid"]);
        assert_eq!(url_rules("javascript:alert(1)"), ["url-bad-scheme"]);
        assert_eq!(url_rules("data:text/html,hi"), ["url-bad-scheme"]);
        assert_eq!(url_rules("http://example.com/e"), ["url-not-https"]);
        assert_eq!(url_rules("https://u:p@x.org/"), ["url-carries-credentials"]);
        assert_eq!(
            url_rules("https://x.org/?access_token=abc"),
            ["url-carries-credentials"]
        );
        assert_eq!(
            url_rules("https://x.org/#token=abc"),
            ["url-carries-credentials"]
        );
        assert_eq!(
            url_rules("https://x.org/?api-key=1"),
            ["url-carries-credentials"]
        );
        assert_eq!(
            url_rules("https://x.org/?Password=hunter2"),
            ["url-carries-credentials"]
        );
        assert_eq!(
            url_rules("https://x.org/?a=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"),
            ["url-carries-credentials"]
        );
        assert_eq!(
            url_rules("https://x.org/?user=a%40b.com"),
            ["url-carries-personal-data"]
        );
        assert_eq!(
            url_rules("https://x.org/u/alice@example.com/"),
            ["url-carries-personal-data"]
        );
        assert_eq!(
            url_rules("https://x.org/?ssn=123"),
            ["url-carries-personal-data"]
        );
        assert_eq!(
            url_rules("https://x.org/?q=123-45-6789"),
            ["url-carries-personal-data"]
        );
        assert_eq!(
            url_rules("https://x.org/?c=%2B44%2020%207946%200958"),
            ["url-carries-personal-data"]
        );
        assert_eq!(
            url_rules("https://x.org/?c=555-123-4567"),
            ["url-carries-personal-data"]
        );
        // Empty values, ids and ordinary numbers are fine.
        assert!(url_rules("https://x.org/?token=&id=123456789012&page=2").is_empty());
    }

    #[test]
    fn url_findings_are_bounded() {
        let q: String = (0..100).map(|i| format!("t{i}_token=x&")).collect();
        let f = url_findings(&format!("https://x.org/?{q}"));
        assert_eq!(f.len(), MAX_URL_FINDINGS);
    }
}
