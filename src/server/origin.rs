//! DNS-rebinding defence: every request whose `Origin` header is present
//! must name an allowed origin, and every request's `Host` must name an
//! allowed host, else 403 (both generations, every route).
//!
//! Allowed by default: the bound address and `localhost`, `127.0.0.1`,
//! `[::1]`, all on the bound port (as hosts, and as `http://` origins, which
//! is what a browser sends when it posts the URL-flow page back).
//! `--allowed-origin` and `--allowed-host` add more. A request without
//! `Origin` (every non-browser client) is judged by its `Host` alone; one
//! without `Host` (HTTP/1.0) by its `Origin` alone.

use std::net::SocketAddr;

use axum::http::{HeaderMap, header};

/// A host name with an optional port (`None` = any port).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostRule {
    host: String,
    port: Option<u16>,
}

/// An origin: scheme, host, port (default ports filled in).
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginRule {
    scheme: String,
    host: String,
    port: u16,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Origin` is present and not allowed (or unparseable, or `null`).
    Origin,
    /// `Host` is not allowed (or unparseable).
    Host,
}

impl Refusal {
    /// The message of the 403 body.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Origin => "Origin not allowed (see serve --allowed-origin)",
            Refusal::Host => "Host not allowed (see serve --allowed-host)",
        }
    }
}

/// The allowed origins and hosts of one server.
#[derive(Debug, Clone)]
pub struct AllowedOrigins {
    hosts: Vec<HostRule>,
    origins: Vec<OriginRule>,
    /// Every allowed `host:port` in the form the parser gives it back:
    /// a `Host` header equal to one of these (ignoring ASCII case) is
    /// allowed without parsing (the parse would find the same rule), which
    /// is what every request from a client pointed at the server sends.
    exact: Vec<String>,
}

/// `host[:port]` as in a `Host` header; `None` when it is not just that.
fn parse_authority(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim();
    if s.is_empty() || s.contains(['/', '@', '?', '#', ' ', '\\']) {
        return None;
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse::<u16>().ok()?),
        };
        (format!("[{inside}]"), port)
    } else {
        match s.split_once(':') {
            None => (s.to_owned(), None),
            Some((h, p)) => (h.to_owned(), Some(p.parse::<u16>().ok()?)),
        }
    };
    let url = url::Url::parse(&format!("http://{host}/")).ok()?;
    Some((url.host_str()?.to_ascii_lowercase(), port))
}

fn parse_origin(s: &str) -> Option<OriginRule> {
    let url = url::Url::parse(s.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() {
        return None;
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return None;
    }
    Some(OriginRule {
        scheme: url.scheme().to_owned(),
        host: url.host_str()?.to_ascii_lowercase(),
        port: url.port_or_known_default()?,
    })
}

/// A value of the allow-lists that is not an origin or a host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowListError {
    /// The listen address's own host does not read as one.
    #[error("bad listen host {0}")]
    ListenHost(String),
    /// `--allowed-origin`.
    #[error("--allowed-origin {0:?} is not an origin like https://app.example:8443")]
    Origin(String),
    /// `--allowed-host`.
    #[error("--allowed-host {0:?} is not a host like mcp.example or mcp.example:8080")]
    Host(String),
}

impl AllowedOrigins {
    /// The defaults for a server bound to `listen`, plus `extra_origins`
    /// (`scheme://host[:port]`) and `extra_hosts` (`host` = any port, or
    /// `host:port`). Errors name the value that is not an origin or host.
    pub fn new(
        listen: SocketAddr,
        extra_origins: &[String],
        extra_hosts: &[String],
    ) -> Result<Self, AllowListError> {
        let port = listen.port();
        let own = match listen {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        };
        let mut names = vec![own, "localhost".into(), "127.0.0.1".into(), "[::1]".into()];
        names.dedup();
        let mut hosts: Vec<HostRule> = Vec::new();
        let mut origins: Vec<OriginRule> = Vec::new();
        for n in &names {
            let (host, _) =
                parse_authority(n).ok_or_else(|| AllowListError::ListenHost(n.clone()))?;
            hosts.push(HostRule {
                host: host.clone(),
                port: Some(port),
            });
            origins.push(OriginRule {
                scheme: "http".into(),
                host,
                port,
            });
        }
        for o in extra_origins {
            origins.push(parse_origin(o).ok_or_else(|| AllowListError::Origin(o.clone()))?);
        }
        for h in extra_hosts {
            let (host, port) = parse_authority(h).ok_or_else(|| AllowListError::Host(h.clone()))?;
            hosts.push(HostRule { host, port });
        }
        let exact = hosts
            .iter()
            .filter_map(|r| r.port.map(|p| format!("{}:{p}", r.host)))
            .collect();
        Ok(AllowedOrigins {
            hosts,
            origins,
            exact,
        })
    }

    fn host_ok(&self, value: &str) -> bool {
        self.exact.iter().any(|e| e.eq_ignore_ascii_case(value)) || self.host_ok_parsed(value)
    }

    /// [`Self::host_ok`] without the exact-match shortcut.
    fn host_ok_parsed(&self, value: &str) -> bool {
        let Some((host, port)) = parse_authority(value) else {
            return false;
        };
        let port = port.unwrap_or(80);
        self.hosts
            .iter()
            .any(|r| r.host == host && r.port.is_none_or(|p| p == port))
    }

    fn origin_ok(&self, value: &str) -> bool {
        parse_origin(value).is_some_and(|o| self.origins.contains(&o))
    }

    /// Judges a request's `Origin` and `Host` headers.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(o) = headers.get(header::ORIGIN)
            && !o.to_str().is_ok_and(|o| self.origin_ok(o))
        {
            return Err(Refusal::Origin);
        }
        if let Some(h) = headers.get(header::HOST)
            && !h.to_str().is_ok_and(|h| self.host_ok(h))
        {
            return Err(Refusal::Host);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn h(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    fn local(port: u16) -> AllowedOrigins {
        AllowedOrigins::new(SocketAddr::from(([127, 0, 0, 1], port)), &[], &[]).unwrap()
    }

    #[test]
    fn the_exact_match_shortcut_agrees_with_the_parse() {
        let a = AllowedOrigins::new(
            SocketAddr::from(([127, 0, 0, 1], 8080)),
            &[],
            &["mcp.example:9000".into(), "any.example".into()],
        )
        .unwrap();
        for v in [
            "127.0.0.1:8080",
            "LocalHost:8080",
            "[::1]:8080",
            "mcp.example:9000",
            "MCP.EXAMPLE:9000",
            "any.example:1",
            " 127.0.0.1:8080 ",
            "127.0.0.1:8081",
            "127.0.0.1",
            "127.0.0.1:8080/",
            "evil.example:8080",
            "localhost:08080",
        ] {
            assert_eq!(a.host_ok(v), a.host_ok_parsed(v), "{v:?}");
        }
        // Every shortcut entry is one the parse allows.
        for e in &a.exact {
            assert!(a.host_ok_parsed(e), "{e}");
        }
    }

    #[test]
    fn loopback_names_on_the_bound_port_are_allowed() {
        let a = local(8080);
        assert_eq!(a.check(&h(&[])), Ok(()));
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert_eq!(a.check(&h(&[("host", host)])), Ok(()), "{host}");
            let origin = format!("http://{host}");
            assert_eq!(a.check(&h(&[("origin", &origin)])), Ok(()), "{origin}");
        }
        assert_eq!(
            a.check(&h(&[
                ("origin", "http://127.0.0.1:8080"),
                ("host", "127.0.0.1:8080")
            ])),
            Ok(())
        );
    }

    #[test]
    fn foreign_or_malformed_values_are_refused() {
        let a = local(8080);
        for origin in [
            "http://evil.example",
            "http://evil.example:8080",
            "https://127.0.0.1:8080",
            "http://127.0.0.1:9999",
            "http://localhost",
            "null",
            "not a url",
            "http://127.0.0.1:8080/path",
        ] {
            assert_eq!(
                a.check(&h(&[("origin", origin)])),
                Err(Refusal::Origin),
                "{origin}"
            );
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "127.0.0.1",
            "127.0.0.1:8081",
            "127.0.0.1:8080/x",
            "user@127.0.0.1:8080",
            "",
        ] {
            assert_eq!(a.check(&h(&[("host", host)])), Err(Refusal::Host), "{host}");
        }
        // DNS rebinding: the attacker's name in both headers.
        assert_eq!(
            a.check(&h(&[
                ("origin", "http://evil.example:8080"),
                ("host", "evil.example:8080")
            ])),
            Err(Refusal::Origin)
        );
        assert_eq!(
            a.check(&h(&[
                ("origin", "http://127.0.0.1:8080"),
                ("host", "evil.example:8080")
            ])),
            Err(Refusal::Host)
        );
    }

    #[test]
    fn extra_origins_and_hosts_extend_the_defaults() {
        let a = AllowedOrigins::new(
            SocketAddr::from(([127, 0, 0, 1], 8080)),
            &[
                "https://app.example".into(),
                "http://tool.example:3000".into(),
            ],
            &["mcp.example".into(), "gw.example:9000".into()],
        )
        .unwrap();
        assert_eq!(a.check(&h(&[("origin", "https://app.example")])), Ok(()));
        assert_eq!(
            a.check(&h(&[("origin", "https://app.example:443")])),
            Ok(())
        );
        assert_eq!(
            a.check(&h(&[("origin", "http://tool.example:3000")])),
            Ok(())
        );
        assert_eq!(
            a.check(&h(&[("origin", "http://app.example")])),
            Err(Refusal::Origin)
        );
        assert_eq!(a.check(&h(&[("host", "mcp.example")])), Ok(()));
        assert_eq!(a.check(&h(&[("host", "mcp.example:1234")])), Ok(()));
        assert_eq!(a.check(&h(&[("host", "gw.example:9000")])), Ok(()));
        assert_eq!(a.check(&h(&[("host", "gw.example")])), Err(Refusal::Host));
        assert!(
            AllowedOrigins::new(
                SocketAddr::from(([127, 0, 0, 1], 1)),
                &["app.example".into()],
                &[]
            )
            .is_err()
        );
        assert!(
            AllowedOrigins::new(
                SocketAddr::from(([127, 0, 0, 1], 1)),
                &[],
                &["http://x/".into()]
            )
            .is_err()
        );
    }

    #[test]
    fn an_ipv6_listener_allows_its_own_address() {
        let a = AllowedOrigins::new("[::1]:7000".parse().unwrap(), &[], &[]).unwrap();
        assert_eq!(a.check(&h(&[("host", "[::1]:7000")])), Ok(()));
        assert_eq!(a.check(&h(&[("origin", "http://[::1]:7000")])), Ok(()));
        assert_eq!(a.check(&h(&[("host", "localhost:7000")])), Ok(()));
    }
}
