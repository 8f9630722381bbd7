//! The protocol clients used by `load` and `check`.
//!
//! - [`outcome`]: what every driver records: timed [`Leg`]s, a [`RoundTrip`]
//!   per tool call, and its judged [`Outcome`] / [`ErrorClass`].
//! - [`leg`]: what a driver sends and gets back ([`Outgoing`], [`HttpReply`],
//!   [`LegFailure`]) and a flow's next [`Step`]: plain HTTP, no protocol.
//! - [`modern`]: the 2026-07-28 MRTR client as a sans-I/O state machine
//!   ([`ModernFlow`]), so any HTTP driver can run it; in its walking mode
//!   ([`FlowConfig::explore`]) it is discovery's walk of a tool.
//! - [`drive`]: the one step loop of a [`ModernFlow`] ([`drive()`]) over an
//!   [`Exchange`] that moves each leg.
//! - [`http`]: reqwest as an [`Exchange`] ([`Reqwest`]) and [`run_modern`].
//! - [`h1`]: a lean keep-alive HTTP/1.1 connection to a plain-`http` MCP
//!   endpoint ([`H1Lane`]), the load generator's hot path.
//! - [`policy`]: answer policies ([`AnswerPolicy`]) and state [`Mutation`]s.
//! - [`browser`]: reads and fills a URL-flow page the way a plain browser would.
//! - [`page`]: one flow page's visit (GET, fill, submit) as a sans-I/O step
//!   every driver moves, and the same-origin test of a page.
//! - [`push`]: one 2025-11-25 tool call as a sans-I/O flow: chunks of its
//!   POST and GET streams in, each server message (SSE read once) and the
//!   call's end out; [`http::chunks`] feeds it from reqwest.
//! - [`session_flow`]: what each server message of a 2025-11-25 call means
//!   (answer it, reply, a breach, the call's end), on top of [`push`], with
//!   the load client's and the observer's readings as [`SessionConfig`].
//! - [`legacy`]: the 2025-11-25 session client, a driver of [`session_flow`]
//!   (`discover::legacy` is the other).
//! - [`local`]: a service called in process instead of over a socket (the
//!   stdio bridge's router, a Rust server under the fuzz harness), read
//!   whole or streamed as [`raw`] and [`http::chunks`] read the network.
//! - [`raw`]: hand-built requests of any shape, read whole under a timeout,
//!   with masked [`raw::Exchange`] evidence ([`mask`] keeps secrets out).
//! - [`rejection`]: whether an error rejects a state for the probed reason.
//! - [`reply_status`]: how a reply's transport status is named, the
//!   server's over HTTP, never the stdio bridge's as the server's.
//! - [`rpc`]: the JSON-RPC reading of a reply ([`rpc::Rpc`]).
//! - [`stall`]: what a Nagle + delayed-ACK tail stall is (load and check).
//! - [`stream`]: the lane's connection, plain or TLS, and how long
//!   opening it took.
//! - [`tls`]: `https` targets: the platform's roots, `--cacert`,
//!   `--insecure`, one rustls config per run, and certificate failures in
//!   words with their fix.
//! - [`marker`]: round-trip markers that make replies attributable.
//! - `content`: valid and invalid form content for answers.

pub mod browser;
pub mod content;
pub mod drive;
pub mod h1;
pub mod http;
pub mod leg;
pub mod legacy;
pub mod local;
pub mod marker;
pub mod mask;
pub mod modern;
pub mod outcome;
pub mod page;
pub mod policy;
pub mod push;
pub mod raw;
pub mod rejection;
pub mod reply_status;
pub mod rpc;
pub mod session_flow;
pub mod stall;
pub mod stream;
pub mod tls;

pub use content::InvalidKind;
pub use drive::{Exchange, LegReply, drive};
pub use h1::H1Lane;
pub use http::{Endpoint, Reqwest, run_modern};
pub use leg::{
    Auth, FlowResult, Headers, HttpMethod, HttpReply, LegFailure, Outgoing, Step, Target,
};
pub use legacy::{LegacyClient, LegacyConfig, LegacyError};
pub use modern::{CallTemplate, Expectations, FlowConfig, ModernFlow, ToolCall};
pub use outcome::{ErrorClass, Leg, LegResult, Outcome, RoundTrip, parse_server_timing};
pub use policy::{AnswerPolicy, Mutation};
pub use reply_status::ReplyStatus;
pub use session_flow::{SessionConfig, SessionFlow};
