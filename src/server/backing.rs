//! What a server stands on besides its router: the `requestState` sealer
//! and the store, built from a [`ServerConfig`] in one place for the
//! listening server ([`super::start`]) and the in-process one
//! ([`super::embed::in_process`]), so the two cannot drift apart (they
//! did: the in-process one once ignored `clock_skew`).

use std::sync::Arc;

use anyhow::Context as _;

use super::ServerConfig;
use crate::state::{KeyRing, Sealer, SealerConfig};
use crate::store::Store;

/// The sealer and the store of one server.
pub struct Backing {
    /// Seals and opens `requestState` with the configured codec, keys,
    /// lifetime and clock skew.
    pub sealer: Sealer,
    /// The store `config.store` names, opened as `serve` opens it.
    pub store: Arc<dyn Store>,
}

/// Builds the sealer (a random key when none is configured, with a
/// warning) and opens the store (logging its caveat, if any).
pub fn build(config: &ServerConfig) -> anyhow::Result<Backing> {
    let keys = match &config.keys {
        Some(k) => k.clone(),
        None => {
            tracing::warn!(
                "no state key given: generated a random key for this process (states will not survive a restart)"
            );
            KeyRing::generate()
        }
    };
    let sealer = Sealer::new(
        &keys,
        config.codec,
        SealerConfig {
            ttl: config.state_ttl,
            clock_skew: config.clock_skew,
            ..SealerConfig::default()
        },
    )
    .context("building the requestState sealer")?;
    let risks = crate::store::Risks {
        volatile: config.allow_volatile_store,
        evicting: config.allow_evicting_store,
    };
    let (store, caveats) =
        crate::store::open_for_serving(&config.store, risks, config.store_memory_budget)
            .context("opening the store")?;
    for c in caveats {
        tracing::warn!("{c}");
    }
    Ok(Backing { sealer, store })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::state::CodecName;

    #[test]
    fn the_sealer_takes_every_lifetime_setting_of_the_config() {
        let config = ServerConfig {
            state_ttl: Duration::from_secs(42),
            clock_skew: Duration::from_millis(1500),
            codec: CodecName::HmacSha256,
            ..ServerConfig::default()
        };
        let b = build(&config).unwrap();
        let c = b.sealer.config();
        assert_eq!(
            (c.ttl, c.clock_skew, b.sealer.codec()),
            (config.state_ttl, config.clock_skew, config.codec)
        );
        assert_eq!(b.store.backend_name(), "memory");
    }
}
