//! The reference server without a socket: its router, for driving in
//! process (the fuzz harness's `serve_mrtr` target, tests). The router
//! believes it is served at [`InProcess::base_url`] (URL-flow links and the
//! `Origin`/`Host` allow-list use that address), and nothing listens there.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::watch;

use super::{ServerConfig, app, backing, http, origin};

/// The notional port of an in-process server whose config asks for port 0.
pub const NOTIONAL_PORT: u16 = 8080;

/// A reference server's router with nothing listening.
pub struct InProcess {
    router: axum::Router,
    base_url: String,
    // Held so the app's `closing` signal never fires.
    _closing: watch::Sender<bool>,
}

impl InProcess {
    /// The router (cheap to clone; clones share the server's state).
    pub fn router(&self) -> axum::Router {
        self.router.clone()
    }

    /// `http://IP:PORT`, the address the server thinks it has.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// `http://IP:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url)
    }
}

/// Builds the server of `config` (its `listen` address is only notional;
/// port 0 becomes [`NOTIONAL_PORT`]). No background sweeps run. Needs no
/// runtime to build; its handlers need a Tokio runtime.
pub fn in_process(config: ServerConfig) -> anyhow::Result<InProcess> {
    let mut addr = config.listen;
    if addr.port() == 0 {
        addr.set_port(NOTIONAL_PORT);
    }
    if addr.ip().is_unspecified() {
        addr = SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port()));
    }
    let backing::Backing { sealer, store } = backing::build(&config)?;
    let origins =
        origin::AllowedOrigins::new(addr, &config.allowed_origins, &config.allowed_hosts)?;
    let base_url = format!("http://{addr}");
    let (closing_tx, closing_rx) = watch::channel(false);
    let instance =
        axum::http::HeaderValue::from_str(config.instance_id.as_deref().unwrap_or("in-process"))
            .context("the instance id must be visible ASCII")?;
    let app = Arc::new(app::App::new(
        config,
        sealer,
        store,
        base_url.clone(),
        origins,
        closing_rx,
        instance,
    ));
    Ok(InProcess {
        router: http::router(app),
        base_url,
        _closing: closing_tx,
    })
}
