//! Browser sign-ins for the URL-flow pages: `POST /login` trades a token
//! for a random session id, which is all the cookie holds (never the
//! token). Sessions live [`BROWSER_SESSION_TTL`]; the table holds at most
//! [`MAX_BROWSER_SESSIONS`], the one closest to expiry making room.
//!
//! Also the login form's CSRF token: a random value set as a cookie and
//! echoed in a hidden field (double submit). A cross-site form cannot send
//! the cookie (`SameSite=Strict`) nor read it, so it cannot sign a victim
//! in as someone else.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::clock::Clock;

/// How long a browser sign-in lasts.
pub const BROWSER_SESSION_TTL: Duration = Duration::from_secs(3600);

/// Most browser sessions held at once.
pub const MAX_BROWSER_SESSIONS: usize = 100_000;

/// How long a login form's CSRF cookie lasts.
pub const LOGIN_CSRF_TTL: Duration = Duration::from_secs(600);

/// Characters of a session id or CSRF token (256 random bits).
pub const TOKEN_LEN: usize = 43;

/// A fresh 256-bit random token, base64url.
pub fn random_token() -> String {
    let b: [u8; 32] = rand::random();
    URL_SAFE_NO_PAD.encode(b)
}

/// True when `s` could have come from [`random_token`].
pub fn plausible_token(s: &str) -> bool {
    s.len() == TOKEN_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The names of the two cookies: `__Host-` prefixed when they are `Secure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieNames {
    /// The sign-in session.
    pub session: &'static str,
    /// The login form's CSRF token.
    pub login_csrf: &'static str,
    /// Whether they carry `Secure` (the public URL is https).
    pub secure: bool,
}

impl CookieNames {
    /// The names for a server whose public URL is (or is not) https.
    pub fn new(secure: bool) -> Self {
        if secure {
            CookieNames {
                session: "__Host-ek_session",
                login_csrf: "__Host-ek_login",
                secure,
            }
        } else {
            CookieNames {
                session: "ek_session",
                login_csrf: "ek_login",
                secure,
            }
        }
    }

    /// A `Set-Cookie` value: HttpOnly, SameSite=Strict, Path=/, `Secure`
    /// over https, living `max_age`.
    pub fn set(&self, name: &str, value: &str, max_age: Duration) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            max_age.as_secs()
        )
    }
}

/// Signed-in browsers: session id → (principal, expiry in Unix ms).
#[derive(Debug, Default)]
pub struct BrowserSessions {
    map: Mutex<HashMap<String, (String, u64)>>,
    clock: Clock,
}

impl BrowserSessions {
    /// No one signed in; expiries by `clock`.
    pub fn new(clock: Clock) -> Self {
        BrowserSessions {
            map: Mutex::default(),
            clock,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, u64)>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Signs `principal` in: a new session id for the cookie.
    pub fn sign_in(&self, principal: &str) -> String {
        let now = self.clock.now_ms();
        let ttl = u64::try_from(BROWSER_SESSION_TTL.as_millis()).unwrap_or(u64::MAX);
        let id = random_token();
        let mut m = self.lock();
        if m.len() >= MAX_BROWSER_SESSIONS {
            m.retain(|_, (_, exp)| *exp > now);
        }
        if m.len() >= MAX_BROWSER_SESSIONS
            && let Some(oldest) = m
                .iter()
                .min_by_key(|(_, (_, e))| *e)
                .map(|(k, _)| k.clone())
        {
            m.remove(&oldest);
        }
        m.insert(id.clone(), (principal.to_owned(), now.saturating_add(ttl)));
        id
    }

    /// The principal signed in under `id`, if the session is live.
    pub fn principal(&self, id: &str) -> Option<String> {
        if !plausible_token(id) {
            return None;
        }
        let now = self.clock.now_ms();
        let mut m = self.lock();
        match m.get(id) {
            Some((p, exp)) if *exp > now => Some(p.clone()),
            Some(_) => {
                m.remove(id);
                None
            }
            None => None,
        }
    }

    /// Forgets expired sessions; returns how many went.
    pub fn sweep(&self) -> usize {
        let now = self.clock.now_ms();
        let mut m = self.lock();
        let before = m.len();
        m.retain(|_, (_, exp)| *exp > now);
        before - m.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_hands_out_random_ids_that_name_the_principal() {
        let s = BrowserSessions::default();
        let a = s.sign_in("alice");
        let b = s.sign_in("alice");
        assert_ne!(a, b);
        assert!(plausible_token(&a));
        assert_eq!(s.principal(&a).as_deref(), Some("alice"));
        assert_eq!(s.principal("alice"), None, "a name is not a session");
        assert_eq!(s.principal(&random_token()), None);
        assert_eq!(s.sweep(), 0);
    }

    #[test]
    fn cookies_are_strict_http_only_and_secure_over_https() {
        let plain = CookieNames::new(false);
        let c = plain.set(plain.session, "x", Duration::from_secs(60));
        assert_eq!(
            c,
            "ek_session=x; Path=/; HttpOnly; SameSite=Strict; Max-Age=60"
        );
        let tls = CookieNames::new(true);
        let c = tls.set(tls.session, "x", Duration::from_secs(60));
        assert!(
            c.starts_with("__Host-ek_session=x;") && c.ends_with("; Secure"),
            "{c}"
        );
    }
}
