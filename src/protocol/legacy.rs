//! 2025-11-25 lifecycle types: `initialize` params and result.

use super::capabilities::ClientCapabilities;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `initialize`.
pub const METHOD_INITIALIZE: &str = "initialize";
/// `notifications/initialized`.
pub const METHOD_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`.
pub const METHOD_CANCELLED: &str = "notifications/cancelled";

/// `Implementation`: a name and a version, plus optional extras.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Program name.
    pub name: String,
    /// Program version.
    pub version: String,
    /// `title`, `websiteUrl`, ... kept verbatim.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Implementation {
    /// elicitkit's own identity.
    pub fn elicitkit() -> Self {
        Implementation {
            name: "elicitkit".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            other: Map::new(),
        }
    }

    /// The identity the checker, discovery and the fuzzer send.
    pub fn elicitkit_check() -> Self {
        Implementation {
            name: "elicitkit-check".into(),
            ..Self::elicitkit()
        }
    }
}

/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The version the client wants.
    pub protocol_version: String,
    /// What the client supports.
    #[serde(default)]
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// Server capabilities (kept opaque).
    #[serde(default)]
    pub capabilities: Value,
    /// Who the server is.
    pub server_info: Implementation,
    /// Optional usage notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}
