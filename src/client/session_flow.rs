//! What each server message of one 2025-11-25 tool call means, sans I/O,
//! for every driver: the load client ([`super::legacy`]) and discovery's
//! and check's observing driver (`discover::legacy`); and what each request
//! of the session carries ([`session_headers`], [`initialize_body`]).
//!
//! A [`SessionFlow`] reads the call's streams through a [`CallFlow`] (SSE
//! read once) and says, message by message, what the driver is to do:
//! answer an `elicitation/create` ([`Heard::Elicit`], by the driver's own
//! answer policy), POST the reply the flow owes another server request
//! ([`Heard::Reply`]), note a breach ([`Heard::Violation`]) or a
//! notification, and how the call ended ([`Ended`]). Routing a response to
//! its request, serving the server's other requests and reading a whole
//! JSON body live here once; the drivers move bytes and word what they
//! keep. Where the two readings differ, [`SessionConfig`] names the
//! difference: [`SessionConfig::STRICT`] is a conforming client's,
//! [`SessionConfig::RECORDING`] an observer's that keeps what a server did
//! for a check to judge.

use super::marker;
use super::push::{CallFlow, Chunk, End, Head, Src, Step as Read};
use crate::protocol::body::{ACCEPT_BOTH, decode_body};
use crate::protocol::codes;
use crate::protocol::elicitation::METHOD_CREATE;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::{
    ErrorObject, Message, RequestId, Response, message_from_value, parse_json,
};
use crate::protocol::sse::SseParser;
use crate::protocol::version::LEGACY;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::VecDeque;

/// The kinds of request a 2025-11-25 session sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionRequest {
    /// `initialize`: before the session, so no version or session id.
    Initialize,
    /// Any other POST: a call, a notification, an answer.
    Post,
    /// The standalone GET stream.
    GetStream,
    /// `DELETE`: the session's end.
    Delete,
}

impl SessionRequest {
    /// Its HTTP method.
    pub fn method(self) -> reqwest::Method {
        match self {
            SessionRequest::Initialize | SessionRequest::Post => reqwest::Method::POST,
            SessionRequest::GetStream => reqwest::Method::GET,
            SessionRequest::Delete => reqwest::Method::DELETE,
        }
    }
}

/// The headers (besides `Authorization`) a session request of `kind`
/// carries, in the order they are sent: `version` as negotiated, `sid` the
/// session's id when the server issued one. Every driver builds its
/// session requests from these (no allocation: the load client sends them
/// on every round trip).
pub fn session_headers<'a>(
    kind: SessionRequest,
    version: &'a str,
    sid: Option<&'a str>,
) -> impl Iterator<Item = (&'static str, &'a str)> {
    let version = Some((PROTOCOL_VERSION, version));
    let sid = sid.map(|s| (SESSION_ID, s));
    let both = Some(("Accept", ACCEPT_BOTH));
    let json = Some(("Content-Type", "application/json"));
    let h = match kind {
        SessionRequest::Initialize => [both, json, None, None],
        SessionRequest::Post => [both, json, version, sid],
        SessionRequest::GetStream => [Some(("Accept", "text/event-stream")), version, sid, None],
        SessionRequest::Delete => [sid, version, None, None],
    };
    h.into_iter().flatten()
}

/// The body of a 2025-11-25 `initialize` with `caps` and elicitkit's
/// `clientInfo`.
pub fn initialize_body(id: &RequestId, caps: &Value) -> String {
    json!({
        "jsonrpc": "2.0", "id": id.to_value(), "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": caps,
            "clientInfo": {"name": "elicitkit", "version": env!("CARGO_PKG_VERSION")}
        }
    })
    .to_string()
}

/// Where a call's response is taken from, and how strictly its streams are
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// As a conforming client reads: the response is the one with the
    /// call's id on the call's own POST (a response on the GET stream or
    /// with another id is a [`Heard::Violation`]), an event that is not
    /// JSON-RPC ends the call, and a whole JSON body is read message by
    /// message.
    Strict,
    /// As an observer reads: a response with the call's id, or with none,
    /// on either stream ends the call (another is [`Heard::Stray`]), an
    /// undecodable event on the GET stream is passed over, and a whole body
    /// is handed back as it came ([`Ended::Whole`]).
    Lenient,
}

/// What the flow does with a server request other than
/// `elicitation/create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherRequests {
    /// Answers `ping` with `{}` and anything else with `-32601`
    /// ([`Heard::Reply`]).
    AnswerPing,
    /// Leaves it unanswered ([`Heard::Unanswered`]).
    Ignore,
}

/// How one driver reads a call: the points where the load client and the
/// observing driver differ, named for what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    /// Where the response is taken from.
    pub placement: Placement,
    /// The server's other requests.
    pub other_requests: OtherRequests,
}

impl SessionConfig {
    /// The load client's reading.
    pub const STRICT: SessionConfig = SessionConfig {
        placement: Placement::Strict,
        other_requests: OtherRequests::AnswerPing,
    };
    /// Discovery's and check's reading.
    pub const RECORDING: SessionConfig = SessionConfig {
        placement: Placement::Lenient,
        other_requests: OtherRequests::Ignore,
    };
}

/// What one server message asks of the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// An `elicitation/create` to answer (params `null` when absent).
    Elicit {
        /// The stream it came on.
        src: Src,
        /// Its id, for the answer.
        id: RequestId,
        /// Its params.
        params: Value,
    },
    /// The reply the flow owes another server request: POST it.
    Reply(Response),
    /// Another server request, left unanswered ([`OtherRequests::Ignore`]).
    Unanswered {
        /// Its method.
        method: String,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A response that is not the call's ([`Placement::Lenient`]).
    Stray(Response),
    /// A breach of the protocol that does not end the call
    /// ([`Placement::Strict`]).
    Violation(String),
}

/// How the call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended<E> {
    /// The call's response.
    Response(Response),
    /// A whole (not SSE) body, as it came ([`Placement::Lenient`]).
    Whole {
        /// Its head.
        head: Head,
        /// The body.
        body: Bytes,
    },
    /// A whole body that does not decode ([`Placement::Strict`]).
    BodyUndecodable {
        /// Its HTTP status.
        status: u16,
        /// Why.
        why: String,
    },
    /// A whole body without the call's response ([`Placement::Strict`]).
    NoResponse {
        /// Its HTTP status.
        status: u16,
    },
    /// An SSE event that is not a JSON-RPC message.
    Undecodable {
        /// The stream it came on.
        src: Src,
        /// Why.
        why: String,
    },
    /// A message carries another round trip's marker: the evidence.
    Misrouted(String),
    /// The POST's SSE stream closed first.
    Closed,
    /// The POST's body broke (the driver's error).
    Failed(E),
    /// The POST's body broke the format (an SSE event or a body too large).
    Malformed(String),
    /// The deadline passed.
    Timeout,
}

/// What the driver gets next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<E> {
    /// A non-blank SSE event as read (for evidence), before what it means.
    Read {
        /// The stream it came on.
        src: Src,
        /// Its `data`.
        data: String,
    },
    /// What a message asks.
    Heard(Heard),
    /// The call is over; nothing follows.
    Done(Ended<E>),
}

/// One 2025-11-25 tool call being read.
pub struct SessionFlow<E> {
    call: CallFlow<E>,
    cfg: SessionConfig,
    id: RequestId,
    owner: Option<(u64, bool)>,
    attributed: bool,
    queue: VecDeque<Step<E>>,
    ended: bool,
}

impl<E> SessionFlow<E> {
    /// The call with request id `id`, read as `cfg` says. `owner` is the
    /// round trip's number and whether its marker went out (see
    /// [`marker`]): a message carrying another round trip's marker ends
    /// the call ([`Ended::Misrouted`]); `None` attributes nothing. `get`
    /// as in [`CallFlow::new`].
    pub fn new(
        cfg: SessionConfig,
        id: RequestId,
        owner: Option<(u64, bool)>,
        get: Option<SseParser>,
    ) -> Self {
        SessionFlow {
            call: CallFlow::new(get),
            cfg,
            id,
            owner,
            attributed: false,
            queue: VecDeque::new(),
            ended: false,
        }
    }

    /// Feeds one chunk of `src`.
    pub fn on(&mut self, src: Src, chunk: Chunk<E>) {
        self.call.on(src, chunk);
    }

    /// The call's deadline passed.
    pub fn timeout(&mut self) {
        self.call.timeout();
    }

    /// The next step, once the chunks fed so far are read.
    pub fn poll(&mut self) -> Option<Step<E>> {
        loop {
            if let Some(s) = self.queue.pop_front() {
                return Some(s);
            }
            if self.ended {
                return None;
            }
            match self.call.poll()? {
                Read::Event { src, data } => self.on_event(src, data),
                Read::Done(end) => self.on_end(end),
            }
        }
    }

    /// Whether a message of the call carried its own marker.
    pub fn attributed(&self) -> bool {
        self.attributed
    }

    /// SSE events seen on the POST so far, priming ones included.
    pub fn post_events(&self) -> usize {
        self.call.post_events()
    }

    /// The streams' reader, to read on after the call ended (does the
    /// stream close, what follows?) or to keep the GET stream.
    pub fn into_call(self) -> CallFlow<E> {
        self.call
    }

    fn done(&mut self, end: Ended<E>) {
        self.ended = true;
        self.queue.push_back(Step::Done(end));
    }

    /// The evidence that `bytes` carry another round trip's marker (which
    /// ends the call); notes a marker of its own.
    fn misroute(&mut self, bytes: &[u8]) -> Option<String> {
        let (n, sent) = self.owner?;
        match marker::judge(bytes, n, sent, || "tools/call (stream)") {
            Ok(ours) => {
                self.attributed |= ours;
                None
            }
            Err(why) => Some(why.to_string()),
        }
    }

    fn on_event(&mut self, src: Src, data: String) {
        let misrouted = self.misroute(data.as_bytes());
        let msg = parse_json(data.as_bytes()).and_then(message_from_value);
        self.queue.push_back(Step::Read { src, data });
        if let Some(why) = misrouted {
            return self.done(Ended::Misrouted(why));
        }
        match msg {
            Ok(m) => self.on_message(m, src),
            Err(_) if self.cfg.placement == Placement::Lenient && src == Src::Get => {}
            Err(e) => self.done(Ended::Undecodable {
                src,
                why: e.to_string(),
            }),
        }
    }

    fn on_message(&mut self, msg: Message, src: Src) {
        let heard = match msg {
            Message::Response(r) => match self.cfg.placement {
                Placement::Strict if src == Src::Get => {
                    Heard::Violation("a JSON-RPC response arrived on the GET stream".into())
                }
                Placement::Strict if r.id.as_ref() == Some(&self.id) => {
                    return self.done(Ended::Response(r));
                }
                Placement::Strict => Heard::Violation(format!(
                    "a response with id {} arrived on the stream of request {}",
                    r.id.as_ref().map_or("null".into(), |i| i.to_string()),
                    self.id
                )),
                Placement::Lenient if r.id.is_none() || r.id.as_ref() == Some(&self.id) => {
                    return self.done(Ended::Response(r));
                }
                Placement::Lenient => Heard::Stray(r),
            },
            Message::Notification(n) => Heard::Notification {
                method: n.method,
                params: n.params.unwrap_or(Value::Null),
            },
            Message::Request(r) if r.method == METHOD_CREATE => Heard::Elicit {
                src,
                id: r.id,
                params: r.params.unwrap_or(Value::Null),
            },
            Message::Request(r) => match self.cfg.other_requests {
                OtherRequests::Ignore => Heard::Unanswered { method: r.method },
                OtherRequests::AnswerPing if r.method == "ping" => {
                    Heard::Reply(Response::result(r.id, json!({})))
                }
                OtherRequests::AnswerPing => Heard::Reply(Response::error(
                    Some(r.id),
                    ErrorObject::new(
                        codes::METHOD_NOT_FOUND,
                        format!("elicitkit does not handle {}", r.method),
                    ),
                )),
            },
        };
        self.queue.push_back(Step::Heard(heard));
    }

    fn on_end(&mut self, end: End<E>) {
        let (head, body) = match end {
            End::Body { head, body } => (head, body),
            End::Closed => return self.done(Ended::Closed),
            End::Failed(e) => return self.done(Ended::Failed(e)),
            End::Malformed(why) => return self.done(Ended::Malformed(why)),
            End::Timeout => return self.done(Ended::Timeout),
        };
        if self.cfg.placement == Placement::Lenient {
            return self.done(Ended::Whole { head, body });
        }
        if let Some(why) = self.misroute(&body) {
            return self.done(Ended::Misrouted(why));
        }
        let status = head.status;
        let decoded = match decode_body(head.content_type.as_deref(), &body) {
            Ok(d) => d,
            Err(e) => {
                let why = e.to_string();
                return self.done(Ended::BodyUndecodable { status, why });
            }
        };
        for m in decoded.messages {
            self.on_message(m, Src::Post);
            if self.ended {
                return;
            }
        }
        self.done(Ended::NoResponse { status });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(ct: &str) -> Chunk<String> {
        Chunk::head(200, ct)
    }

    fn sse(s: &str) -> Chunk<String> {
        Chunk::Data(Bytes::from(format!("data: {s}\n\n")))
    }

    /// What the flow said, events as read left out.
    fn heard(f: &mut SessionFlow<String>) -> Vec<Step<String>> {
        std::iter::from_fn(|| f.poll())
            .filter(|s| !matches!(s, Step::Read { .. }))
            .collect()
    }

    fn flow(cfg: SessionConfig) -> SessionFlow<String> {
        let mut f = SessionFlow::new(cfg, RequestId::Number(7), None, Some(SseParser::new()));
        f.on(Src::Post, head("text/event-stream"));
        f.on(Src::Get, head("text/event-stream"));
        f
    }

    const ELICIT: &str =
        r#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"?"}}"#;

    #[test]
    fn strict_answers_ping_refuses_other_requests_and_takes_only_its_own_response_on_its_post() {
        let mut f = flow(SessionConfig::STRICT);
        f.on(Src::Get, sse(ELICIT));
        let [Step::Heard(Heard::Elicit { src, id, params })] = &heard(&mut f)[..] else {
            panic!("one elicitation");
        };
        assert_eq!((*src, id), (Src::Get, &RequestId::String("e1".into())));
        assert_eq!(params["message"], "?");
        f.on(
            Src::Post,
            sse(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#),
        );
        let steps = heard(&mut f);
        let [Step::Heard(Heard::Reply(pong))] = &steps[..] else {
            panic!("{steps:?}")
        };
        let pong: Value = serde_json::from_str(&Message::Response(pong.clone()).to_json()).unwrap();
        assert_eq!(pong, json!({"jsonrpc":"2.0","id":3,"result":{}}));
        f.on(
            Src::Post,
            sse(r#"{"jsonrpc":"2.0","id":4,"method":"roots/list"}"#),
        );
        let steps = format!("{:?}", heard(&mut f));
        assert!(
            steps.contains("-32601") && steps.contains("roots/list"),
            "{steps}"
        );
        f.on(Src::Get, sse(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#));
        let steps = heard(&mut f);
        assert!(
            matches!(&steps[..], [Step::Heard(Heard::Violation(v))] if v.contains("GET stream")),
            "{steps:?}"
        );
        f.on(Src::Post, sse(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#));
        let steps = heard(&mut f);
        let other = "a response with id 8 arrived on the stream of request 7";
        assert!(
            matches!(&steps[..], [Step::Heard(Heard::Violation(v))] if v == other),
            "{steps:?}"
        );
        f.on(
            Src::Post,
            sse(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#),
        );
        let steps = heard(&mut f);
        assert!(matches!(
            &steps[..],
            [Step::Heard(Heard::Notification { .. })]
        ));
        let two = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        f.on(
            Src::Post,
            Chunk::Data(format!("data: {two}\n\ndata: {two}\n\n").into()),
        );
        let steps = heard(&mut f);
        assert!(
            matches!(&steps[..], [Step::Done(Ended::Response(r))] if r.id == Some(RequestId::Number(7))),
            "one end, nothing after it: {steps:?}"
        );
        f.on(Src::Post, sse(ELICIT));
        assert!(heard(&mut f).is_empty(), "nothing after the end");
    }

    #[test]
    fn lenient_takes_its_response_from_either_stream_and_passes_over_what_strict_refuses() {
        let mut f = flow(SessionConfig::RECORDING);
        f.on(Src::Get, sse("not json"));
        f.on(
            Src::Post,
            sse(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#),
        );
        let steps = heard(&mut f);
        assert_eq!(
            steps,
            [Step::Heard(Heard::Unanswered {
                method: "ping".into()
            })]
        );
        f.on(Src::Post, sse(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#));
        assert!(matches!(&heard(&mut f)[..], [Step::Heard(Heard::Stray(_))]));
        f.on(
            Src::Get,
            sse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}"#),
        );
        assert!(matches!(&heard(&mut f)[..], [Step::Done(Ended::Response(r))] if r.id.is_none()));
        // An undecodable event on the POST ends even a lenient reading.
        let mut f = flow(SessionConfig::RECORDING);
        f.on(Src::Post, sse("not json"));
        let steps: Vec<_> = std::iter::from_fn(|| f.poll()).collect();
        assert!(matches!(&steps[0], Step::Read { src: Src::Post, data } if data == "not json"));
        assert!(matches!(
            &steps[1],
            Step::Done(Ended::Undecodable { src: Src::Post, .. })
        ));
        // Strict ends on one on the GET stream.
        let mut f = flow(SessionConfig::STRICT);
        f.on(Src::Get, sse("not json"));
        assert!(matches!(
            &heard(&mut f)[..],
            [Step::Done(Ended::Undecodable { src: Src::Get, .. })]
        ));
    }

    fn whole(cfg: SessionConfig, status: u16, ct: &str, body: &str) -> Vec<Step<String>> {
        let mut f = SessionFlow::new(cfg, RequestId::Number(7), None, None);
        f.on(Src::Post, Chunk::head(status, ct));
        f.on(
            Src::Post,
            Chunk::Data(Bytes::copy_from_slice(body.as_bytes())),
        );
        f.on(Src::Post, Chunk::End);
        heard(&mut f)
    }

    #[test]
    fn a_whole_body_is_read_message_by_message_strictly_and_handed_back_leniently() {
        let steps = whole(SessionConfig::STRICT, 200, "application/json", ELICIT);
        assert!(
            matches!(
                &steps[..],
                [
                    Step::Heard(Heard::Elicit { src: Src::Post, .. }),
                    Step::Done(Ended::NoResponse { status: 200 })
                ]
            ),
            "{steps:?}"
        );
        let ours = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        let steps = whole(SessionConfig::STRICT, 200, "application/json", ours);
        assert!(
            matches!(&steps[..], [Step::Done(Ended::Response(_))]),
            "{steps:?}"
        );
        let theirs = r#"{"jsonrpc":"2.0","id":9,"result":{}}"#;
        let steps = whole(SessionConfig::STRICT, 400, "application/json", theirs);
        assert!(
            matches!(
                &steps[..],
                [
                    Step::Heard(Heard::Violation(_)),
                    Step::Done(Ended::NoResponse { status: 400 })
                ]
            ),
            "{steps:?}"
        );
        let steps = whole(SessionConfig::STRICT, 200, "application/json", "oops");
        assert!(
            matches!(
                &steps[..],
                [Step::Done(Ended::BodyUndecodable { status: 200, .. })]
            ),
            "{steps:?}"
        );
        let steps = whole(SessionConfig::STRICT, 500, "text/plain", "oops");
        let no_response = matches!(&steps[..], [Step::Done(Ended::NoResponse { status: 500 })]);
        assert!(no_response, "{steps:?}");
        let steps = whole(SessionConfig::RECORDING, 500, "text/plain", "oops");
        assert!(
            matches!(&steps[..], [Step::Done(Ended::Whole { head, body })] if head.status == 500 && &body[..] == b"oops"),
            "{steps:?}"
        );
    }

    #[test]
    fn a_message_with_another_round_trips_marker_is_misrouted() {
        let mk = |owner| {
            let mut f = SessionFlow::<String>::new(
                SessionConfig::STRICT,
                RequestId::Number(7),
                owner,
                None,
            );
            f.on(Src::Post, head("text/event-stream"));
            f
        };
        let ours = r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Deploy web ek-rt-7?"}}"#;
        let theirs = ours.replace("ek-rt-7", "ek-rt-8");
        let mut f = mk(Some((7, true)));
        f.on(
            Src::Post,
            sse(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#),
        );
        heard(&mut f);
        assert!(!f.attributed(), "unattributed");
        f.on(Src::Post, sse(ours));
        assert!(matches!(
            &heard(&mut f)[..],
            [Step::Heard(Heard::Elicit { .. })]
        ));
        assert!(f.attributed());
        f.on(Src::Post, sse(&theirs));
        let steps = heard(&mut f);
        assert!(
            matches!(&steps[..], [Step::Done(Ended::Misrouted(why))] if why.contains("ek-rt-8")),
            "{steps:?}"
        );
        // Without an owner nothing is attributed.
        let mut f = mk(None);
        f.on(Src::Post, sse(&theirs));
        assert!(matches!(
            &heard(&mut f)[..],
            [Step::Heard(Heard::Elicit { .. })]
        ));
        assert!(!f.attributed());
    }

    #[test]
    fn each_session_request_carries_its_headers_in_one_order() {
        use SessionRequest::*;
        let names = |kind, sid| -> Vec<String> {
            session_headers(kind, "2025-11-25", sid)
                .map(|(k, v)| format!("{k}: {v}"))
                .collect()
        };
        let both = "Accept: application/json, text/event-stream";
        let json = "Content-Type: application/json";
        let version = "MCP-Protocol-Version: 2025-11-25";
        let session = "MCP-Session-Id: s1";
        assert_eq!(
            names(Initialize, Some("s1")),
            [both, json],
            "before the session"
        );
        assert_eq!(names(Post, Some("s1")), [both, json, version, session]);
        assert_eq!(names(Post, None), [both, json, version]);
        let sse = "Accept: text/event-stream";
        assert_eq!(names(GetStream, Some("s1")), [sse, version, session]);
        assert_eq!(names(Delete, Some("s1")), [session, version]);
    }

    #[test]
    fn the_initialize_body_is_what_a_server_reads() {
        let caps = json!({"elicitation": {"form": {}}});
        let body = initialize_body(&RequestId::Number(3), &caps);
        let Ok(Message::Request(r)) = parse_json(body.as_bytes()).and_then(message_from_value)
        else {
            panic!("{body}");
        };
        assert_eq!(
            (r.id, r.method.as_str()),
            (RequestId::Number(3), "initialize")
        );
        let params: crate::protocol::legacy::InitializeParams =
            serde_json::from_value(r.params.unwrap()).unwrap();
        assert_eq!(params.protocol_version, LEGACY);
        assert_eq!(params.client_info.name, "elicitkit");
        assert_eq!(params.capabilities.to_value(), caps);
    }
}
