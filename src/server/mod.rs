//! The reference elicitation server behind `elicitkit serve`: one endpoint,
//! `/mcp`, serving both protocol generations (told apart per request), demo
//! tools that exercise every elicitation feature, URL-flow pages, and flaw
//! switches that break one rule each.
//!
//! - [`config`]: [`ServerConfig`] (`Default` = a correct server on an
//!   ephemeral loopback port).
//! - [`flaw`]: [`Flaw`] switches and [`FlawSet`].
//! - [`auth`]: principals from bearer tokens (demo mode or a token file),
//!   and the optional anonymous principal; `browser_session`: flow-page
//!   sign-ins (random session ids, login CSRF tokens).
//! - `backing`: the sealer and the store, built from the config once for
//!   the listening and the in-process server.
//! - [`origin`]: the `Origin`/`Host` allow-list (DNS-rebinding defence);
//!   `remote`: the public URL links name, and the warnings before serving
//!   beyond loopback.
//! - `http`: routes, the origin guard, generation choice; `body`: the body
//!   cap, read timeout and bytes-in-flight budget; `json_cost`: the cap on
//!   what a body's JSON costs to parse; `modern`: MRTR; `legacy`: 2025-11-25 requests and SSE push, over the
//!   sessions of `sessions`; `flow`: the URL-flow pages; `tools`: the demo
//!   tools; `conversation`: answers across rounds; `once`: one side effect
//!   per originating request, its outcome kept for repeats; `leak`: what
//!   `--flaw leak` keeps per completed call (bounded).
//! - [`stats`], [`timing`]: `/stats` counters and `Server-Timing`;
//!   `log_text`: client strings made safe for log lines; `log_gate`: one
//!   line per window for events a client triggers at will.
//! - `accept`: the accept loop (connection cap, fair shares, shedding,
//!   graceful end); `holder`: who holds a connection, and how many each;
//!   `conn_phase`: per-connection header-read and keep-alive timeouts and
//!   the body-rate floor; `shed_index`: the open connections in shed order.
//!
//! Embed it with [`start`]; the returned [`RunningServer`] knows its address
//! and shuts down gracefully. [`embed::in_process`] gives the router alone,
//! with no socket (for in-process fuzzing).

pub mod accept;
mod app;
pub mod auth;
mod backing;
mod body;
mod body_budget;
mod browser_session;
mod catalog;
pub mod config;
mod conn_phase;
mod conversation;
pub mod embed;
pub mod flaw;
mod flow;
mod holder;
mod http;
mod json_cost;
mod leak;
mod legacy;
mod log_gate;
mod log_text;
mod modern;
mod non_tool;
mod once;
pub mod origin;
mod remote;
mod reply;
mod result;
mod sessions;
mod shed_index;
pub mod stats;
pub mod stdio;
pub mod store_budget;
pub mod timing;
mod tools;

pub use auth::{AuthFileError, Principals};
pub use config::{INSTANCE_HEADER, ResponseMode, ServerConfig, parse_size};
pub use flaw::{Flaw, FlawSet, UnknownFlaw};
pub use json_cost::DEFAULT_MAX_MEMBERS as DEFAULT_MAX_JSON_MEMBERS;
pub use remote::{PublicUrl, check_links as remote_check_links};
pub use sessions::SessionLimits;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::watch;

/// A server started by [`start`].
pub struct RunningServer {
    addr: SocketAddr,
    router: axum::Router,
    closing: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The router the listener serves (clones share the server's state):
    /// `serve --stdio` hands it the messages read from stdin.
    pub fn router(&self) -> axum::Router {
        self.router.clone()
    }

    /// `http://IP:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://IP:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// Stops accepting, ends open streams, and waits (at most
    /// [`accept::SHUTDOWN_GRACE`], 5 s) for in-flight requests.
    pub async fn shutdown(self) {
        let _ = self.closing.send(true);
        let mut task = self.task;
        let bound = accept::SHUTDOWN_GRACE + Duration::from_secs(1);
        match tokio::time::timeout(bound, &mut task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "server ended with an I/O error"),
            Ok(Err(e)) => tracing::warn!(error = %e, "server task failed"),
            Err(_) => {
                tracing::warn!("graceful shutdown timed out; aborting open connections");
                task.abort();
                let _ = task.await;
            }
        }
    }

    /// Waits until the server stops (it stops only via [`RunningServer::shutdown`]
    /// or an I/O error).
    pub async fn wait(self) -> std::io::Result<()> {
        self.task.await.unwrap_or(Ok(()))
    }
}

/// Every `--sweep-interval`, moves due pending records to `Expired` (so
/// the audit log shows abandoned flows), then forgets what `--retention`
/// allows (see [`crate::store::retention`]), until the server closes. Runs
/// on the blocking pool whatever the backend, so a large purge never holds
/// up a runtime worker.
fn spawn_store_sweeper(app: Arc<app::App>) {
    tokio::spawn(async move {
        let mut closing = app.closing.clone();
        let retention = u64::try_from(app.cfg.retention.as_millis()).unwrap_or(u64::MAX);
        let clock = app.cfg.clock.clone();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(app.cfg.sweep_interval) => {}
                _ = closing.wait_for(|c| *c) => return,
            }
            let (store, clock) = (app.store.clone(), clock.clone());
            let swept = tokio::task::spawn_blocking(move || {
                let now = clock.now_ms();
                let expired = store.expire_due(now)?;
                let purged = store.purge(now, retention)?;
                Ok::<_, crate::store::StoreError>((expired, purged))
            })
            .await;
            match swept {
                Ok(Ok((expired, purged))) if expired > 0 || !purged.is_empty() => tracing::debug!(
                    expired,
                    purged_records = purged.records,
                    purged_audit = purged.audit,
                    purged_claims = purged.claims,
                    "store sweep"
                ),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "store sweep failed"),
                Err(e) => tracing::warn!(error = %e, "store sweep task failed"),
            }
        }
    });
}

/// Every quarter of the idle timeout (50 ms to 10 s), closes and removes
/// legacy sessions that went unused for it, until the server closes.
fn spawn_session_sweeper(app: Arc<app::App>) {
    let every =
        (app.sessions.limits().idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(10));
    tokio::spawn(async move {
        let mut closing = app.closing.clone();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = closing.wait_for(|c| *c) => return,
            }
            let n = app.sessions.expire(app.now_ms());
            let signed_out = app.browser.sweep();
            if n > 0 || signed_out > 0 {
                tracing::debug!(expired = n, signed_out, "closed idle sessions");
            }
        }
    });
}

/// Binds, builds the shared state and starts serving in a background task.
pub async fn start(config: ServerConfig) -> anyhow::Result<RunningServer> {
    if !config.listen.ip().is_loopback() && !config.allow_remote {
        anyhow::bail!(
            "refusing to listen on non-loopback address {}: pass --allow-remote to do that on purpose",
            config.listen
        );
    }
    remote::check_links(config.listen, config.public_url.as_ref())?;
    for w in remote::warnings(
        config.listen,
        config.allow_remote,
        &config.principals,
        config.anonymous_principal.as_deref(),
    ) {
        tracing::warn!("{w}");
    }
    let backing::Backing { sealer, store } = backing::build(&config)?;
    let listener =
        accept::bind(config.listen).with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let (mut allowed_origins, mut allowed_hosts) =
        (config.allowed_origins.clone(), config.allowed_hosts.clone());
    if let Some(p) = &config.public_url {
        allowed_origins.push(p.base().to_owned());
        allowed_hosts.push(p.host().to_owned());
    }
    let origins = origin::AllowedOrigins::new(addr, &allowed_origins, &allowed_hosts)?;
    if addr.ip().is_unspecified() && allowed_hosts.is_empty() {
        tracing::warn!(
            "listening on {addr}: requests reach it by other names, which the Host check refuses; add them with --allowed-host"
        );
    }
    let base_url = config
        .public_url
        .as_ref()
        .map_or_else(|| format!("http://{addr}"), |p| p.base().to_owned());
    let (closing_tx, closing_rx) = watch::channel(false);
    let instance_id = config
        .instance_id
        .clone()
        .unwrap_or_else(|| format!("{addr}/{}", std::process::id()));
    let instance = axum::http::HeaderValue::from_str(&instance_id)
        .context("--instance-id must be visible ASCII")?;
    tracing::info!(
        %addr,
        instance = %instance_id,
        store = store.backend_name(),
        codec = %config.codec,
        flaws = ?config.flaws.iter().map(Flaw::name).collect::<Vec<_>>(),
        "reference server starting"
    );
    if store.holding().is_some() {
        tracing::info!("{}", store_budget::describe(&config));
    }
    if matches!(config.principals, Principals::Demo) {
        tracing::info!(
            "demo auth (no --auth-tokens): any bearer token is accepted as the principal it names, so \
             made-up names count as principals; each holds at most its share of connections, body \
             bytes, store and sessions, and at a limit the largest holder gives way first"
        );
    }
    let app = Arc::new(app::App::new(
        config,
        sealer,
        store,
        base_url,
        origins,
        closing_rx.clone(),
        instance,
    ));
    spawn_store_sweeper(app.clone());
    spawn_session_sweeper(app.clone());
    let cap = accept::effective_cap(app.cfg.max_connections);
    if cap < app.cfg.max_connections {
        tracing::info!(
            wanted = app.cfg.max_connections,
            cap,
            "--max-connections lowered to what the file descriptor limit allows"
        );
    }
    let per_holder = app
        .cfg
        .max_connections_per_principal
        .unwrap_or_else(|| accept::share_of(cap))
        .min(cap);
    let identify = {
        let app = app.clone();
        Arc::new(holder::Identify::new(move |headers, browser| {
            app.principal_of(headers, browser)
        }))
    };
    let limits = accept::ConnLimits {
        phases: conn_phase::PhaseLimits {
            header_read: app.cfg.header_read_timeout,
            keep_alive: app.cfg.keep_alive_timeout,
            body_grace: app.cfg.body_rate_grace,
            min_body_rate: app.cfg.min_body_rate,
        },
        max_connections: cap,
        per_holder,
        // `no-nodelay` leaves Nagle on; with the body written after the head
        // (see `http::split_writes`) a reply waits for the client's delayed ACK.
        nodelay: !app.flaw(Flaw::NoNodelay),
    };
    let stats = app.stats.clone();
    let router = http::router(app);
    let task = tokio::spawn(accept::serve(
        listener,
        router.clone(),
        identify,
        limits,
        stats,
        closing_rx,
    ));
    Ok(RunningServer {
        addr,
        router,
        closing: closing_tx,
        task,
    })
}
