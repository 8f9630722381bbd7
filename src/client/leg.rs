//! The legs every driver of a flow moves: an [`Outgoing`] request (where,
//! how, whose token), the [`HttpReply`] or [`LegFailure`] that came back,
//! and the [`Step`] a flow takes next. Plain HTTP data, no protocol: the
//! MRTR client ([`super::modern`]), the 2025-11-25 client, the browser and
//! the drivers ([`super::drive`], [`super::http`], [`super::h1`]) share them.

use super::outcome::{Connection, LegResult, RoundTrip};
use bytes::Bytes;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The MCP endpoint.
    Mcp,
    /// A URL-flow page (absolute, or relative to the MCP URL's origin).
    Page {
        /// The URL as the server gave it (or a form action resolved against it).
        url: String,
    },
}

/// HTTP method of an outgoing request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// POST.
    Post,
    /// GET.
    Get,
}

/// Whose credentials the driver attaches (`Authorization: Bearer <token>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The principal that started the flow.
    Primary,
    /// Another principal (cross-principal probes).
    Other,
}

/// Request headers other than `Authorization`, as name and value, shared:
/// every call of a round trip (and of a scenario) sends the same ones.
pub type Headers = Arc<[(String, String)]>;

/// One request for the driver to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// Leg name, e.g. `tools/call #2 retry` (a metric label).
    pub leg: Cow<'static, str>,
    /// Where to send it.
    pub target: Target,
    /// GET or POST.
    pub method: HttpMethod,
    /// Headers other than `Authorization`.
    pub headers: Headers,
    /// The body (empty for GET).
    pub body: Vec<u8>,
    /// Whose token to attach.
    pub auth: Auth,
}

/// What came back for an [`Outgoing`], with the driver's timings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpReply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, if any (the common media types borrowed, not
    /// copied: see [`super::http::content_type_of`]).
    pub content_type: Option<Cow<'static, str>>,
    /// `Server-Timing`'s `state` and `app` durations, when reported
    /// ([`super::outcome::parse_server_timing`]).
    pub server_timing: (Option<Duration>, Option<Duration>),
    /// The whole body.
    pub body: Bytes,
    /// Time until the response headers arrived.
    pub to_headers: Duration,
    /// Time until the first body byte arrived (`to_headers` for an empty body).
    pub to_first_byte: Duration,
    /// Time until the body was read.
    pub total: Duration,
    /// The connection it went on.
    pub connection: Connection,
    /// Time until the first whole SSE event arrived, when the reply is a
    /// stream (`text/event-stream`) and the driver watches for it.
    pub to_first_event: Option<Duration>,
}

/// Why the driver got no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegFailure {
    /// The per-leg timeout expired.
    Timeout,
    /// Connection or I/O error.
    Transport(String),
}

impl From<&LegFailure> for LegResult {
    fn from(f: &LegFailure) -> LegResult {
        match f {
            LegFailure::Timeout => LegResult::Timeout,
            LegFailure::Transport(why) => LegResult::Transport(why.clone()),
        }
    }
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send this and feed the reply back.
    Send(Outgoing),
    /// The flow is over.
    Done(FlowResult),
}

/// The result of a flow: a [`RoundTrip`].
pub type FlowResult = RoundTrip;
