//! Serving other machines: the public base URL links name, and what the
//! server must say before it listens beyond loopback.
//!
//! Flow links (`/flow/<id>`) name `--public-url` when given, else
//! `http://` + the bound address. A public URL's origin and host are
//! allowed by the `Origin`/`Host` guard too (the browser posting the flow
//! page sends them), and an https one makes the flow cookies `Secure`.
//! Listening on an unspecified address (`0.0.0.0`, `[::]`) needs a public
//! URL: no link could name that.

use std::net::SocketAddr;

use super::auth::Principals;

/// A checked `--public-url`: `http(s)://host[:port]`, no path, query,
/// fragment or credentials; kept without a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    base: String,
    host: String,
    https: bool,
}

/// Why a public URL or the listen address cannot serve flow links.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// A `--public-url` that is not a bare http(s) origin.
    #[error("--public-url {given:?} {why}: give a base URL like https://mcp.example.com")]
    PublicUrl {
        /// As given.
        given: String,
        /// What is wrong.
        why: &'static str,
    },
    /// An unspecified listen address without a public URL.
    #[error("--listen {0} needs --public-url: flow links must name an address clients can reach")]
    Unreachable(SocketAddr),
}

impl PublicUrl {
    /// Parses and checks a public base URL.
    pub fn parse(s: &str) -> Result<Self, LinkError> {
        let bad = |why: &'static str| LinkError::PublicUrl {
            given: s.to_owned(),
            why,
        };
        let u = url::Url::parse(s.trim()).map_err(|_| bad("is not a URL"))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(bad("must be http or https"));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(bad("must not hold credentials"));
        }
        if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
            return Err(bad("must have no path, query or fragment"));
        }
        let host = u.host_str().ok_or_else(|| bad("has no host"))?.to_owned();
        let host = match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        };
        Ok(PublicUrl {
            base: u.as_str().trim_end_matches('/').to_owned(),
            host,
            https: u.scheme() == "https",
        })
    }

    /// `scheme://host[:port]`, as links start and as the browser's `Origin`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `host[:port]` for the `Host` allow-list (no port: any port).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// True for https (cookies get `Secure`).
    pub fn is_https(&self) -> bool {
        self.https
    }
}

/// Refuses a configuration whose flow links could name no reachable
/// address: an unspecified listen address without a public URL.
pub fn check_links(listen: SocketAddr, public: Option<&PublicUrl>) -> Result<(), LinkError> {
    if listen.ip().is_unspecified() && public.is_none() {
        return Err(LinkError::Unreachable(listen));
    }
    Ok(())
}

/// What the operator must be told before serving beyond loopback (or
/// with `--allow-remote` given, which says that is the plan).
pub fn warnings(
    listen: SocketAddr,
    allow_remote: bool,
    principals: &Principals,
    anonymous: Option<&str>,
) -> Vec<String> {
    if listen.ip().is_loopback() && !allow_remote {
        return Vec::new();
    }
    let mut w = Vec::new();
    if matches!(principals, Principals::Demo) {
        w.push(format!(
            "remote mode on {listen} with demo auth: ANY bearer token is accepted as the user it names \
             (anyone reaching this port can act as anyone); use --auth-tokens FILE"
        ));
    }
    if let Some(name) = anonymous {
        w.push(format!(
            "remote mode on {listen} with --anonymous-principal: requests without credentials act as {name:?}"
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_bare_origins() {
        let p = PublicUrl::parse("https://mcp.example.com/").unwrap();
        assert_eq!(
            (p.base(), p.host(), p.is_https()),
            ("https://mcp.example.com", "mcp.example.com", true)
        );
        let p = PublicUrl::parse("http://10.0.0.5:8080").unwrap();
        assert_eq!(
            (p.base(), p.host(), p.is_https()),
            ("http://10.0.0.5:8080", "10.0.0.5:8080", false)
        );
        for bad in [
            "mcp.example.com",
            "ftp://x",
            "https://u:p@x",
            "https://x/mcp",
            "https://x/?a=1",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_unspecified_address_needs_a_public_url_and_demo_auth_is_flagged() {
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let lan: SocketAddr = "192.0.2.7:8080".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let e = check_links(any, None).unwrap_err().to_string();
        assert!(e.contains("--public-url"), "{e}");
        let p = PublicUrl::parse("https://mcp.example.com").unwrap();
        assert!(check_links(any, Some(&p)).is_ok());
        assert!(check_links(lan, None).is_ok());
        let w = warnings(lan, true, &Principals::Demo, Some("demo"));
        assert_eq!(w.len(), 2);
        assert!(
            w[0].contains("ANY bearer token") && w[0].contains("--auth-tokens"),
            "{w:?}"
        );
        assert!(warnings(lo, false, &Principals::Demo, None).is_empty());
        assert_eq!(warnings(lo, true, &Principals::Demo, None).len(), 1);
        let tokens = Principals::parse_tokens("t alice\n").unwrap();
        assert!(warnings(lan, true, &tokens, None).is_empty());
    }
}
