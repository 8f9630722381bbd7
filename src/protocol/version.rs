//! Protocol versions and the two generations elicitkit speaks.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The 2025-11-25 protocol version string (sessions, server push).
pub const LEGACY: &str = "2025-11-25";
/// The 2026-07-28 protocol version string (stateless, MRTR).
pub const MODERN: &str = "2026-07-28";
/// Versions the reference server and clients support, newest first.
pub const SUPPORTED: [&str; 2] = [MODERN, LEGACY];

/// Which wire generation a message or server belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Generation {
    /// 2025-11-25: `initialize`, sessions, `elicitation/create` pushed over SSE.
    #[serde(rename = "2025-11-25")]
    Legacy,
    /// 2026-07-28: per-request `_meta`, `input_required` results, retries.
    #[serde(rename = "2026-07-28")]
    Modern,
}

impl Generation {
    /// The protocol version string of this generation.
    pub fn version(self) -> &'static str {
        match self {
            Generation::Legacy => LEGACY,
            Generation::Modern => MODERN,
        }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version())
    }
}

impl FromStr for Generation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            LEGACY | "legacy" => Ok(Generation::Legacy),
            MODERN | "modern" | "mrtr" => Ok(Generation::Modern),
            other => Err(format!(
                "unknown generation {other:?}: expected {LEGACY} (legacy) or {MODERN} (modern)"
            )),
        }
    }
}
