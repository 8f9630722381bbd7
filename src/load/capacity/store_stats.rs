//! The shared store's command counter for `--store-stats redis://…`: Redis
//! `INFO stats` `total_commands_processed`, read before and after each
//! capacity sample.

use std::time::Duration;

/// Why `--store-stats` cannot be used.
#[derive(Debug, thiserror::Error)]
pub(super) enum StoreStatsError {
    /// Not a Redis URL.
    #[error("--store-stats: {0}")]
    Url(::redis::RedisError),
    /// The counter could not be read.
    #[error("--store-stats {shown}: {why}")]
    Unread {
        /// The URL, without its password.
        shown: String,
        /// Why.
        why: Unread,
    },
}

/// Why the counter could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unread {
    /// Redis did not answer.
    #[error(transparent)]
    Redis(#[from] ::redis::RedisError),
    /// Its `INFO stats` has no counter.
    #[error("INFO stats has no total_commands_processed")]
    NoCounter,
}

/// The shared store's command counter (Redis `total_commands_processed`).
pub(super) struct StoreStats {
    client: ::redis::Client,
    /// The URL as the report shows it (no password).
    pub(super) shown: String,
}

impl StoreStats {
    pub(super) fn open(url: &str) -> Result<StoreStats, StoreStatsError> {
        let client = ::redis::Client::open(url).map_err(StoreStatsError::Url)?;
        let shown = redact(url);
        let s = StoreStats { client, shown };
        s.read_blocking().map_err(|why| StoreStatsError::Unread {
            shown: s.shown.clone(),
            why,
        })?;
        Ok(s)
    }

    fn read_blocking(&self) -> Result<u64, Unread> {
        let mut c = self
            .client
            .get_connection_with_timeout(Duration::from_secs(2))?;
        let info: String = ::redis::cmd("INFO").arg("stats").query(&mut c)?;
        parse_commands(&info).ok_or(Unread::NoCounter)
    }

    pub(super) async fn read(&self) -> Option<u64> {
        let client = self.client.clone();
        let me = StoreStats {
            client,
            shown: self.shown.clone(),
        };
        tokio::task::spawn_blocking(move || me.read_blocking().ok())
            .await
            .ok()
            .flatten()
    }
}

/// `total_commands_processed` from Redis `INFO stats` text.
pub fn parse_commands(info: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A Redis URL without its password.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(unparsable URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_info_and_urls() {
        let info = "# Stats\r\ntotal_connections_received:3\r\ntotal_commands_processed:12345\r\n";
        assert_eq!(parse_commands(info), Some(12345));
        assert_eq!(parse_commands("# Stats\r\n"), None);
        assert_eq!(
            redact("redis://:hunter2@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }
}
