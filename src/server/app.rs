//! [`App`]: the state every handler shares (config, sealer, store, counters,
//! legacy sessions, URL-flow waiters) and the helpers that reach the store
//! without blocking the async runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use tokio::sync::{Notify, watch};

use crate::protocol::jsonrpc::RequestId;
use crate::state::{Claims, Sealer, StateError};
use crate::store::{Mode, NewRecord, Record, Store, StoreError, is_plausible_id};

use super::body_budget::BodyBudget;
use super::browser_session::{BrowserSessions, CookieNames};
use super::config::ServerConfig;
use super::flaw::Flaw;
use super::origin::AllowedOrigins;
use super::sessions::Sessions;
use super::stats::{Stats, bump};
use super::timing::Timing;

/// Shared server state.
pub struct App {
    /// The configuration the server was started with.
    pub cfg: ServerConfig,
    /// Seals and opens `requestState`.
    pub sealer: Sealer,
    /// Pending URL flows and legacy elicitations.
    pub store: Arc<dyn Store>,
    /// Counters (shared with the accept loop).
    pub stats: Arc<Stats>,
    /// Request-body bytes in flight.
    pub bodies: BodyBudget,
    /// The public base URL links name: `--public-url`, else
    /// `http://` + the bound address.
    pub base_url: String,
    /// Legacy (2025-11-25) sessions.
    pub sessions: Sessions,
    /// The `Origin` and `Host` values requests may carry.
    pub origins: AllowedOrigins,
    /// Browsers signed in on the flow pages.
    pub browser: BrowserSessions,
    /// Names (and `Secure`) of the flow-page cookies.
    pub cookies: CookieNames,
    /// Wakes legacy calls waiting for a URL flow page to be submitted.
    flows: Mutex<HashMap<String, Arc<Notify>>>,
    blocking_store: bool,
    /// Flips to `true` when the server shuts down.
    pub closing: watch::Receiver<bool>,
    /// The [`super::config::INSTANCE_HEADER`] value of every response.
    pub instance: axum::http::HeaderValue,
    /// The one reply slot of [`Flaw::CrossTalk`].
    reply_slot: Mutex<Option<(RequestId, Value)>>,
    /// What [`Flaw::Leak`] keeps.
    hoard: super::leak::Hoard,
}

impl App {
    /// Builds the shared state; `instance` names this process in responses.
    pub fn new(
        cfg: ServerConfig,
        sealer: Sealer,
        store: Arc<dyn Store>,
        base_url: String,
        origins: AllowedOrigins,
        closing: watch::Receiver<bool>,
        instance: axum::http::HeaderValue,
    ) -> Self {
        let blocking_store = store.backend_name() != "memory";
        let sessions = Sessions::new(cfg.sessions, cfg.clock.clone());
        let bodies = BodyBudget::new(
            cfg.max_body_in_flight,
            cfg.max_body_in_flight_per_principal,
            cfg.body_read_timeout,
        );
        let base_url_is_https = base_url.starts_with("https://");
        App {
            sealer,
            store,
            stats: Arc::new(Stats::default()),
            bodies,
            base_url,
            sessions,
            origins,
            browser: BrowserSessions::new(cfg.clock.clone()),
            cookies: CookieNames::new(base_url_is_https),
            flows: Mutex::new(HashMap::new()),
            blocking_store,
            closing,
            instance,
            reply_slot: Mutex::new(None),
            hoard: super::leak::Hoard::default(),
            cfg,
        }
    }

    /// Now by the server's clock ([`ServerConfig::clock`]), in Unix ms.
    pub fn now_ms(&self) -> u64 {
        self.cfg.clock.now_ms()
    }

    /// [`Flaw::CrossTalk`]: puts this call's reply (`id`, `result`) into
    /// the process-wide slot, lets overlapping calls overwrite it for a
    /// moment, then answers with whatever the slot holds (another call's
    /// reply when one came in meanwhile; its own when the slot was taken).
    pub async fn cross_talk(&self, id: RequestId, result: Value) -> (RequestId, Value) {
        let put = |v| self.reply_slot.lock().map(|mut s| s.replace(v)).ok();
        put((id.clone(), result.clone()));
        tokio::time::sleep(Duration::from_millis(3)).await;
        let taken = self.reply_slot.lock().ok().and_then(|mut s| s.take());
        taken.unwrap_or((id, result))
    }

    /// A `tools/call` completed (its final result is going out): with
    /// [`Flaw::Leak`], keep memory and a descriptor for it.
    pub fn completed_call(&self) {
        if self.flaw(Flaw::Leak) {
            self.hoard.keep_one();
        }
    }

    /// The principal behind a request: its bearer token, else (for
    /// `browser` routes: flow pages, `/stats`) its signed-in browser
    /// session, else the anonymous principal if the server has one (see
    /// [`super::auth::principal_of`]). `None` means 401.
    pub fn principal_of(&self, headers: &axum::http::HeaderMap, browser: bool) -> Option<String> {
        super::auth::principal_of(
            &self.cfg.principals,
            self.cfg.anonymous_principal.as_deref(),
            headers,
            browser.then_some((self.cookies.session, &self.browser)),
        )
    }

    /// True when `flaw` is switched on.
    pub fn flaw(&self, flaw: Flaw) -> bool {
        self.cfg.flaws.has(flaw)
    }

    /// Runs a store operation: inline for memory, on the blocking pool otherwise.
    pub async fn store_call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    {
        if !self.blocking_store {
            return f(self.store.as_ref());
        }
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(store.as_ref()))
            .await
            .map_err(|_| StoreError::Poisoned)?
    }

    /// The page URL of a flow.
    pub fn flow_url(&self, id: &str) -> String {
        format!("{}/flow/{id}", self.base_url)
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.cfg.state_ttl.as_millis()).unwrap_or(u64::MAX / 4)
    }

    /// Creates a pending URL flow bound to `principal` and the request
    /// digest, serving the request whose completion key is `origin`
    /// ([`super::once::Origin::key`]).
    pub async fn create_flow(
        &self,
        principal: &str,
        digest: [u8; 32],
        origin: &str,
    ) -> Result<Record, StoreError> {
        let csrf: [u8; 24] = rand::random();
        self.create_record(
            principal,
            digest,
            Mode::Url,
            Some(URL_SAFE_NO_PAD.encode(csrf)),
            self.ttl_ms(),
            origin,
        )
        .await
    }

    /// Creates a pending record serving the request whose completion key
    /// is `origin` (the store may keep that completion in the record's
    /// entry).
    pub async fn create_record(
        &self,
        principal: &str,
        digest: [u8; 32],
        mode: Mode,
        csrf: Option<String>,
        ttl_ms: u64,
        origin: &str,
    ) -> Result<Record, StoreError> {
        let now = self.now_ms();
        let new = NewRecord {
            principal: principal.to_owned(),
            client_id: None,
            request_digest: digest,
            mode,
            created_at_ms: now,
            expires_at_ms: now.saturating_add(ttl_ms.max(1)),
            csrf_token: csrf,
            origin: Some(origin.to_owned()),
        };
        self.store_call(move |s| s.create(&new)).await
    }

    /// Reads a record (ids that cannot exist read as `None`).
    pub async fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        if !is_plausible_id(id) {
            return Ok(None);
        }
        let id = id.to_owned();
        let now = self.now_ms();
        self.store_call(move |s| s.get(&id, now)).await
    }

    /// Cancels a pending flow; a failure (already settled, gone) is ignored.
    pub async fn cancel_flow(&self, id: &str, principal: &str) {
        let (id, p) = (id.to_owned(), principal.to_owned());
        let now = self.now_ms();
        if let Err(e) = self.store_call(move |s| s.cancel(&id, &p, now)).await {
            tracing::debug!(error = %e, "cancel of a flow had no effect");
        }
    }

    /// The notifier a legacy call waits on for flow `id`.
    pub fn flow_notify(&self, id: &str) -> Arc<Notify> {
        let mut m = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(id.to_owned()).or_default().clone()
    }

    /// Wakes anyone waiting on flow `id` and forgets the notifier.
    pub fn flow_settled(&self, id: &str) {
        let n = {
            let mut m = self.flows.lock().unwrap_or_else(|p| p.into_inner());
            m.remove(id)
        };
        if let Some(n) = n {
            n.notify_waiters();
        }
    }

    /// Forgets the notifier of flow `id` (the waiter gave up).
    pub fn flow_forget(&self, id: &str) {
        let mut m = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        m.remove(id);
    }

    /// Counters as JSON, with the store's counters.
    pub fn stats_json(&self) -> Value {
        let mut v = self.stats.to_json();
        if let Some(o) = v.as_object_mut() {
            let s = &self.sessions;
            o.insert("active_sessions".into(), s.len().into());
            o.insert(
                "sessions".into(),
                serde_json::json!({
                    "active": s.len(),
                    "expired": s.expired.load(std::sync::atomic::Ordering::Relaxed),
                    "replaced": s.replaced.load(std::sync::atomic::Ordering::Relaxed),
                    "shed": s.shed.load(std::sync::atomic::Ordering::Relaxed),
                }),
            );
            o.insert(
                "store".into(),
                serde_json::to_value(self.store.counters()).unwrap_or(Value::Null),
            );
            o.insert("store_backend".into(), self.store.backend_name().into());
            if let Some(h) = self.store.holding() {
                o.insert("memory".into(), super::stats::memory_json(&h));
            }
            o.insert("retention".into(), self.cfg.retention_json());
            o.insert(
                "request_bodies".into(),
                serde_json::json!({
                    "bytes_in_flight": self.bodies.in_flight(),
                    "refused_over_budget": self.bodies.refused(),
                    "cut_for_others": self.bodies.cut(),
                }),
            );
        }
        v
    }

    /// Seals a new state for `principal` and the request digest.
    pub fn seal_state(
        &self,
        principal: &str,
        digest: [u8; 32],
        round: u32,
        payload: Vec<u8>,
        timing: &mut Timing,
    ) -> Result<String, crate::state::SealError> {
        timing.state(|| {
            let mut claims =
                self.sealer
                    .claims(principal, None, digest, round, payload, self.now_ms());
            if self.flaw(Flaw::NoExpiry) {
                claims.expires_at = u64::MAX;
            }
            let sealed = self.sealer.seal(&claims);
            if sealed.is_ok() {
                bump(&self.stats.states_sealed);
            }
            sealed
        })
    }

    /// Opens a state and checks its binding. `Ok(None)` only under
    /// `accept-tampered-state`, for a state that failed verification.
    pub fn open_state(
        &self,
        token: &str,
        principal: &str,
        digest: &[u8; 32],
        timing: &mut Timing,
    ) -> Result<Option<Claims>, StateError> {
        let opened = timing.state(|| {
            let mut buf = Vec::new();
            let now = self.now_ms();
            let c = self.sealer.verify_in(token.as_bytes(), now, &mut buf)?;
            if !self.flaw(Flaw::NoExpiry) {
                self.sealer.check_lifetime(c.expires_at, now)?;
            }
            let unchecked =
                self.flaw(Flaw::IgnorePrincipal) || self.flaw(Flaw::IgnoreStatePrincipal);
            if c.principal != principal && !unchecked {
                return Err(StateError::WrongPrincipal);
            }
            if &c.request_digest != digest && !self.flaw(Flaw::IgnoreRequestBinding) {
                return Err(StateError::WrongRequest);
            }
            Ok(c.to_claims())
        });
        match opened {
            Ok(c) => {
                bump(&self.stats.states_opened);
                Ok(Some(c))
            }
            Err(
                StateError::BadTag
                | StateError::Malformed(_)
                | StateError::UnknownKey(_)
                | StateError::UnsupportedVersion(_)
                | StateError::TooLarge,
            ) if self.flaw(Flaw::AcceptTamperedState) => Ok(None),
            Err(e) => {
                self.stats.rejected(&e);
                Err(e)
            }
        }
    }

    /// Sleeps up to `d`, returning early when the server shuts down.
    pub async fn sleep_or_close(&self, d: Duration) {
        let mut closing = self.closing.clone();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = closing.wait_for(|c| *c) => {}
        }
    }
}
