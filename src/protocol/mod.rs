//! Wire types for JSON-RPC 2.0 and both MCP generations, with validators.
//! No I/O: the server, the client, the checker and the fuzz targets all share
//! these types.
//!
//! - [`jsonrpc`]: ids, requests, notifications, responses; a bounded parser.
//! - [`codes`]: error codes (`-32020`, `-32021`, `-32022`, `-32042`, ...).
//! - [`version`]: the two protocol versions and [`Generation`].
//! - [`capabilities`]: `ClientCapabilities` and the elicitation modes they allow.
//! - [`elicitation`]: `elicitation/create` params (form, URL), `ElicitResult`.
//! - [`legacy`]: 2025-11-25 `initialize` types.
//! - [`mrtr`]: 2026-07-28 `_meta`, `resultType`, `InputRequiredResult`, `tools/call` params.
//! - [`headers`]: `Mcp-*` headers, the `=?base64?…?=` codec, header/body checks.
//! - [`sse`]: incremental SSE parser and encoder.
//! - [`body`]: JSON-or-SSE response bodies.
//! - [`validate`]: findings for elicitation requests, input-required results and errors.

pub mod body;
pub mod capabilities;
pub mod codes;
pub mod elicitation;
pub mod headers;
pub mod jsonrpc;
pub mod legacy;
pub mod mrtr;
pub mod sse;
pub mod validate;
pub mod version;

pub use capabilities::{ClientCapabilities, ElicitModes};
pub use elicitation::{ElicitAction, ElicitMode, ElicitRequestParams, ElicitResult};
pub use jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
pub use mrtr::{CallToolParams, InputRequest, InputRequiredResult, RequestMeta, ResultType};
pub use version::Generation;
