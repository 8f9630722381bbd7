//! What the integration tests share. Each family uses its own subset.
#![allow(dead_code)]

pub mod cluster;
pub mod interop;
pub mod load;
pub mod need;
#[path = "../../rmcp_server/mod.rs"]
pub mod rmcp_server;
pub mod serve;
pub mod server;
