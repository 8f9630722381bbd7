//! Principals: who is calling, from `Authorization: Bearer <token>` (or,
//! on flow pages, the browser session cookie `POST /login` set; see
//! [`super::browser_session`]).
//!
//! Demo mode (the default) takes the token as the principal's name.
//! `--auth-tokens FILE` maps tokens to principals instead: one `token
//! principal` pair per line, `#` comments and blank lines ignored.
//! `--anonymous-principal NAME` (off by default) stands a request that
//! carries no credentials at all in for `NAME`; a request with a bad token
//! is still refused.

use std::collections::HashMap;
use std::path::Path;

use axum::http::{HeaderMap, header};

use super::browser_session::BrowserSessions;

/// Longest token or principal accepted, in bytes.
pub const MAX_TOKEN_LEN: usize = 256;

/// How tokens map to principals.
#[derive(Debug, Clone, Default)]
pub enum Principals {
    /// The token is the principal name.
    #[default]
    Demo,
    /// A fixed token → principal table.
    Tokens(HashMap<String, String>),
}

/// Why an `--auth-tokens` file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum AuthFileError {
    /// The file could not be read.
    #[error("cannot read auth tokens file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is not `token principal`.
    #[error("auth tokens line {line}: {reason}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The same token appears twice.
    #[error("auth tokens line {line}: duplicate token")]
    Duplicate {
        /// 1-based line number.
        line: usize,
    },
    /// No token at all.
    #[error("auth tokens file holds no token")]
    Empty,
}

/// True for a usable token or principal name: 1-256 visible ASCII bytes.
pub fn valid_word(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_TOKEN_LEN && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

impl Principals {
    /// Parses the `token principal` text format.
    pub fn parse_tokens(text: &str) -> Result<Self, AuthFileError> {
        let mut map = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(token), Some(principal), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(AuthFileError::BadLine {
                    line: i + 1,
                    reason: "expected exactly `token principal`",
                });
            };
            if !valid_word(token) || !valid_word(principal) {
                return Err(AuthFileError::BadLine {
                    line: i + 1,
                    reason: "tokens and principals are 1-256 visible ASCII characters",
                });
            }
            if map.insert(token.to_owned(), principal.to_owned()).is_some() {
                return Err(AuthFileError::Duplicate { line: i + 1 });
            }
        }
        if map.is_empty() {
            return Err(AuthFileError::Empty);
        }
        Ok(Principals::Tokens(map))
    }

    /// Reads a tokens file.
    pub fn from_file(path: &Path) -> Result<Self, AuthFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse_tokens(&text)
    }

    /// The principal a token stands for, if any.
    pub fn resolve(&self, token: &str) -> Option<String> {
        match self {
            Principals::Demo => valid_word(token).then(|| token.to_owned()),
            Principals::Tokens(map) => map.get(token).cloned(),
        }
    }
}

/// The principal behind a request: its `Authorization: Bearer` token, else
/// (when `browser` names the session cookie and table) the signed-in
/// browser session, else `anonymous` when the request carries no
/// credentials at all. `None` means "refuse with 401".
pub fn principal_of(
    principals: &Principals,
    anonymous: Option<&str>,
    headers: &HeaderMap,
    browser: Option<(&str, &BrowserSessions)>,
) -> Option<String> {
    if let Some(v) = headers.get(header::AUTHORIZATION) {
        return principals.resolve(bearer_token(v.as_bytes())?);
    }
    if let Some((name, sessions)) = browser
        && let Some(id) = cookie(headers, name)
    {
        return sessions.principal(id);
    }
    anonymous.map(str::to_owned)
}

/// The value of cookie `name` among a request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .find_map(|v| cookie_value(v.as_bytes(), name))
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer_token(value: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(value).ok()?;
    let (scheme, rest) = s.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// The value of cookie `name` in a `Cookie` header value.
pub fn cookie_value<'a>(header: &'a [u8], name: &str) -> Option<&'a str> {
    let s = std::str::from_utf8(header).ok()?;
    s.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_mode_takes_the_token_as_the_name() {
        let p = Principals::Demo;
        assert_eq!(p.resolve("alice").as_deref(), Some("alice"));
        assert_eq!(p.resolve(""), None);
        assert_eq!(p.resolve("has space"), None);
        assert_eq!(p.resolve(&"x".repeat(300)), None);
    }

    #[test]
    fn token_file_maps_and_rejects_bad_lines() {
        let p = Principals::parse_tokens("# c\n\nt1 alice\nt2  bob\n").unwrap();
        assert_eq!(p.resolve("t1").as_deref(), Some("alice"));
        assert_eq!(p.resolve("alice"), None);
        assert!(matches!(
            Principals::parse_tokens("t1\n"),
            Err(AuthFileError::BadLine { line: 1, .. })
        ));
        assert!(matches!(
            Principals::parse_tokens("a b\na c\n"),
            Err(AuthFileError::Duplicate { line: 2 })
        ));
        assert!(matches!(
            Principals::parse_tokens("# only\n"),
            Err(AuthFileError::Empty)
        ));
    }

    #[test]
    fn anonymous_stands_in_only_without_credentials() {
        let p = Principals::Demo;
        let mut h = HeaderMap::new();
        assert_eq!(principal_of(&p, None, &h, None), None);
        assert_eq!(
            principal_of(&p, Some("demo"), &h, None).as_deref(),
            Some("demo")
        );
        let sessions = BrowserSessions::default();
        let id = sessions.sign_in("carol");
        let browser = Some(("ek_session", &sessions));
        h.insert(header::COOKIE, format!("ek_session={id}").parse().unwrap());
        assert_eq!(
            principal_of(&p, Some("demo"), &h, browser).as_deref(),
            Some("carol")
        );
        // A cookie holding a name (or a stale id) signs nobody in.
        h.insert(header::COOKIE, "ek_session=carol".parse().unwrap());
        assert_eq!(principal_of(&p, Some("demo"), &h, browser), None);
        h.insert(header::AUTHORIZATION, "Bearer alice".parse().unwrap());
        assert_eq!(
            principal_of(&p, Some("demo"), &h, None).as_deref(),
            Some("alice")
        );
        h.insert(header::AUTHORIZATION, "Basic x".parse().unwrap());
        assert_eq!(principal_of(&p, Some("demo"), &h, None), None);
    }

    #[test]
    fn header_parsing() {
        assert_eq!(bearer_token(b"Bearer abc"), Some("abc"));
        assert_eq!(bearer_token(b"bearer  abc "), Some("abc"));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(cookie_value(b"a=1; ek_auth=bob", "ek_auth"), Some("bob"));
        assert_eq!(cookie_value(b"a=1", "ek_auth"), None);
    }
}
