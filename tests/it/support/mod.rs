//! What the integration tests share. Each family uses its own subset.
#![allow(dead_code)]

pub mod answering;
pub mod cluster;
pub mod interop;
pub mod load;
pub mod need;
#[cfg(feature = "net")]
pub mod raw;
#[cfg(feature = "net")]
#[path = "../../rmcp_server/fuzz_harness.rs"]
pub mod rmcp_harness;
#[path = "../../rmcp_server/mod.rs"]
pub mod rmcp_server;
pub mod serve;
pub mod server;
pub mod tls;
