//! What every client driver records: one [`Leg`] per HTTP exchange, and a
//! [`RoundTrip`] per tool call with its judged [`Outcome`].
//!
//! The load tool turns these into metrics (leg names and [`ErrorClass::as_str`]
//! are metric labels, so both are stable); the checker reads the outcome.

use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// How one HTTP exchange ended, as the client understood it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LegResult {
    /// A result with `resultType: "input_required"`.
    InputRequired,
    /// A complete result (`isError` as the server set it, `false` when absent).
    Complete {
        /// `result.isError`.
        is_error: bool,
    },
    /// A JSON-RPC error response.
    RpcError {
        /// `error.code`.
        code: i64,
        /// `error.data.reason` when the server gave one.
        reason: Option<String>,
    },
    /// A non-success HTTP status without a JSON-RPC error in the body.
    Http {
        /// The status.
        status: u16,
    },
    /// `202 Accepted` (answers and notifications in 2025-11-25).
    Accepted,
    /// A browser-style page exchange (flow page GET or POST) that succeeded.
    Page,
    /// The request could not be sent or the body could not be read.
    Transport(String),
    /// The leg exceeded its timeout.
    Timeout,
}

/// How long opening a leg's connection took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Opened {
    /// The TCP connect.
    pub connect: Duration,
    /// The TLS handshake (zero for plain `http`).
    pub tls: Duration,
}

/// The connection a leg went on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// The driver cannot tell (reqwest's pool does not say).
    #[default]
    Unknown,
    /// A kept-alive connection: no connect, no handshake.
    Reused,
    /// One it opened, and how long that took (within `to_headers`).
    Opened(Opened),
}

/// One HTTP exchange, timed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leg {
    /// Stable name: `tools/call #1`, `tools/call #2 retry`, `flow page GET`, ...
    pub name: Cow<'static, str>,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Time until the response headers arrived.
    pub to_headers: Duration,
    /// Time until the first byte of the body arrived (the headers' time
    /// when the body was empty or is not measured).
    pub to_first_byte: Duration,
    /// Time until the whole body was read.
    pub total: Duration,
    /// `Server-Timing: state;dur=…`, when reported.
    pub server_state: Option<Duration>,
    /// `Server-Timing: app;dur=…`, when reported.
    pub server_app: Option<Duration>,
    /// The connection it went on (opened: the connect and TLS times).
    pub connection: Connection,
    /// Time until the first whole SSE event, for a stream reply.
    pub to_first_event: Option<Duration>,
    /// How it ended.
    pub result: LegResult,
}

impl Leg {
    /// A leg that got no reply, ending as `result` after `elapsed` (every
    /// one of its times); the base of any leg timed by one instant (set
    /// its `status` over it).
    pub fn failed(name: impl Into<Cow<'static, str>>, result: LegResult, elapsed: Duration) -> Leg {
        Leg {
            name: name.into(),
            status: None,
            to_headers: elapsed,
            to_first_byte: elapsed,
            total: elapsed,
            server_state: None,
            server_app: None,
            connection: Default::default(),
            to_first_event: None,
            result,
        }
    }
}

/// Why a round trip did not go the way its policy expects. `as_str` names are
/// stable metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The server rejected a `requestState` the client echoed faithfully.
    StateRejected,
    /// The server accepted a tampered, replayed or foreign `requestState`
    /// (a complete result or a re-prompt where a JSON-RPC error was due).
    StateAccepted,
    /// The server accepted content that fails the requested schema.
    ContentAccepted,
    /// `-32021`: the server needs a capability the client did not declare.
    CapabilityError,
    /// The server broke a protocol rule (see the message).
    ProtocolViolation,
    /// Any other JSON-RPC error on a flow that should have succeeded.
    ServerError,
    /// A non-success HTTP status (5xx, or 4xx without a JSON-RPC error).
    HttpError,
    /// A leg exceeded its timeout.
    Timeout,
    /// Connection or I/O failure.
    Transport,
    /// A scenario that must elicit completed without asking for input.
    DidNotElicit,
    /// An accepted flow ended in an `isError` tool result.
    ToolError,
    /// A tampered, replayed or foreign state was refused, but not for that
    /// reason (framing, capability or method errors; HTTP errors without a
    /// JSON-RPC error).
    WrongRejection,
    /// A reply carried another round trip's marker: the server answered
    /// this request with a response meant for someone else.
    Misrouted,
}

impl ErrorClass {
    /// Every class, in declaration order.
    pub const ALL: [ErrorClass; 13] = [
        ErrorClass::StateRejected,
        ErrorClass::StateAccepted,
        ErrorClass::ContentAccepted,
        ErrorClass::CapabilityError,
        ErrorClass::ProtocolViolation,
        ErrorClass::ServerError,
        ErrorClass::HttpError,
        ErrorClass::Timeout,
        ErrorClass::Transport,
        ErrorClass::DidNotElicit,
        ErrorClass::ToolError,
        ErrorClass::WrongRejection,
        ErrorClass::Misrouted,
    ];

    /// Stable snake_case name (a metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::StateRejected => "state_rejected",
            ErrorClass::StateAccepted => "state_accepted",
            ErrorClass::ContentAccepted => "content_accepted",
            ErrorClass::CapabilityError => "capability_error",
            ErrorClass::ProtocolViolation => "protocol_violation",
            ErrorClass::ServerError => "server_error",
            ErrorClass::HttpError => "http_error",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Transport => "transport",
            ErrorClass::DidNotElicit => "did_not_elicit",
            ErrorClass::ToolError => "tool_error",
            ErrorClass::WrongRejection => "wrong_rejection",
            ErrorClass::Misrouted => "misrouted",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a round trip ended, judged against its policy's expectation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The flow ended the way the policy expects a correct server to end it.
    Success,
    /// The server refused, as the policy expects (tampered state, invalid
    /// content, ...). `code` is the JSON-RPC code when the refusal was an error.
    ExpectedRejection {
        /// JSON-RPC error code, when the refusal was an error.
        code: Option<i64>,
        /// `error.data.reason`, or a short description (`re-prompted`, `HTTP 403`).
        reason: Option<String>,
    },
    /// Something a correct server would not do, or a failure on the way.
    Unexpected {
        /// Which kind.
        class: ErrorClass,
        /// Why, in one sentence.
        message: String,
    },
    /// The policy could not be applied (e.g. the tool never elicited, or gave
    /// no `requestState` to tamper with); says why (a fixed reason is not
    /// copied: every round trip starts as "not run").
    Skipped(Cow<'static, str>),
}

impl Outcome {
    /// Shorthand for [`Outcome::Unexpected`].
    pub fn unexpected(class: ErrorClass, message: impl Into<String>) -> Self {
        Outcome::Unexpected {
            class,
            message: message.into(),
        }
    }

    /// True for `Success` and `ExpectedRejection` (the server behaved correctly).
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Success | Outcome::ExpectedRejection { .. })
    }

    /// The error class of an unexpected outcome.
    pub fn error_class(&self) -> Option<ErrorClass> {
        match self {
            Outcome::Unexpected { class, .. } => Some(*class),
            _ => None,
        }
    }

    /// A stable label: `success`, `expected_rejection`, `skipped`, or the error class.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::ExpectedRejection { .. } => "expected_rejection",
            Outcome::Skipped(_) => "skipped",
            Outcome::Unexpected { class, .. } => class.as_str(),
        }
    }
}

/// One tool call driven to its end: every leg, and the judged outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTrip {
    /// Scenario or policy name (e.g. `accept_valid`).
    pub name: String,
    /// Every HTTP exchange, in order.
    pub legs: Vec<Leg>,
    /// End-to-end time (wall clock when a driver measured it, else the sum of legs).
    pub total: Duration,
    /// Number of `input_required` results (or legacy `elicitation/create`
    /// requests) the client answered.
    pub rounds: u32,
    /// The judged outcome.
    pub outcome: Outcome,
    /// Every `requestState` the server issued, in order (opaque; for checks
    /// such as "a new state each round").
    pub request_states: Vec<String>,
    /// The final complete `result`, when there was one.
    pub final_result: Option<Value>,
    /// Which instance answered each leg, as ids the driver assigns (the
    /// load generator interns instance names into them), aligned
    /// with `legs`; empty when the driver does not track instances.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<u16>,
    /// A reply carried this round trip's own marker (see
    /// [`super::marker`]): its replies could be attributed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub attributed: bool,
}

impl RoundTrip {
    /// An empty round trip with the given name.
    pub fn new(name: impl Into<String>) -> Self {
        RoundTrip {
            name: name.into(),
            legs: Vec::new(),
            total: Duration::ZERO,
            rounds: 0,
            attributed: false,
            outcome: Outcome::Skipped(Cow::Borrowed("not run")),
            request_states: Vec::new(),
            final_result: None,
            instances: Vec::new(),
        }
    }

    /// Sum of the legs' total times.
    pub fn legs_total(&self) -> Duration {
        self.legs.iter().map(|l| l.total).sum()
    }
}

/// Reads `state;dur=X` and `app;dur=Y` (milliseconds) from a `Server-Timing`
/// value. Unknown metrics, bad numbers and odd spacing are tolerated.
pub fn parse_server_timing(value: &str) -> (Option<Duration>, Option<Duration>) {
    let mut state = None;
    let mut app = None;
    for metric in value.split(',') {
        let mut parts = metric.split(';');
        let name = parts.next().unwrap_or("").trim();
        let slot = if name.eq_ignore_ascii_case("state") {
            &mut state
        } else if name.eq_ignore_ascii_case("app") {
            &mut app
        } else {
            continue;
        };
        if slot.is_none() {
            *slot = parts.find_map(|p| {
                let (k, v) = p.split_once('=')?;
                k.trim()
                    .eq_ignore_ascii_case("dur")
                    .then(|| millis(v.trim().trim_matches('"')))?
            });
        }
    }
    (state, app)
}

/// A `dur` value (milliseconds): `digits[.digits]` read exactly to the
/// nanosecond without a float (the common case, on every reply the load
/// client reads), anything else through `f64`; negative or not finite gives
/// `None`.
fn millis(v: &str) -> Option<Duration> {
    let (whole, frac) = v.split_once('.').unwrap_or((v, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if whole.len() <= 12 && digits(whole) && digits(frac) {
        let ns = frac
            .bytes()
            .chain(std::iter::repeat(b'0'))
            .take(6)
            .fold(0, |n, c| n * 10 + u64::from(c - b'0'));
        return Some(Duration::from_millis(whole.parse().ok()?) + Duration::from_nanos(ns));
    }
    let ms: f64 = v.parse().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_timing_reads_both_metrics() {
        let (s, a) = parse_server_timing("state;dur=0.250, app;dur=1.5");
        assert_eq!(s, Some(Duration::from_micros(250)));
        assert_eq!(a, Some(Duration::from_micros(1500)));
    }

    #[test]
    fn server_timing_tolerates_noise() {
        let (s, a) = parse_server_timing(r#"db;dur=3, APP ; desc="x" ; dur = "2" ,state"#);
        assert_eq!(s, None);
        assert_eq!(a, Some(Duration::from_millis(2)));
        assert_eq!(parse_server_timing(""), (None, None));
        assert_eq!(
            parse_server_timing("state;dur=-1,app;dur=NaN,app;dur=abc"),
            (None, None)
        );
        // exactly to the nanosecond, past it truncated; odd forms via f64
        assert_eq!(
            parse_server_timing("state;dur=1.0000019,app;dur=\"7\""),
            (
                Some(Duration::from_nanos(1_000_001)),
                Some(Duration::from_millis(7))
            )
        );
        assert_eq!(
            parse_server_timing("state;dur=1.,app;dur=.5"),
            (
                Some(Duration::from_millis(1)),
                Some(Duration::from_micros(500))
            )
        );
        assert_eq!(
            parse_server_timing("state;dur=2e1,app;dur=1.x"),
            (Some(Duration::from_millis(20)), None)
        );
    }

    #[test]
    fn error_class_names_are_unique_and_stable() {
        let names: std::collections::HashSet<_> =
            ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), ErrorClass::ALL.len());
        assert_eq!(ErrorClass::StateAccepted.as_str(), "state_accepted");
        assert_eq!(
            Outcome::unexpected(ErrorClass::Timeout, "x").label(),
            "timeout"
        );
        assert!(
            Outcome::ExpectedRejection {
                code: Some(-32602),
                reason: None
            }
            .is_ok()
        );
    }
}
