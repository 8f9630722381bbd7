//! HTTP response bodies: a single JSON message, or an SSE stream of messages.
//! Which one is decided by `Content-Type`, falling back to sniffing.

use super::jsonrpc::{Message, ParseError, RequestId, message_from_value, parse_json};
use super::sse::{SseError, parse_all};

/// How a body was framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `application/json`.
    Json,
    /// `text/event-stream`.
    Sse,
}

/// The `Accept` value both generations require on POSTs.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

impl Framing {
    /// The media type a `Content-Type` names this framing with.
    pub const fn media_type(self) -> &'static str {
        match self {
            Framing::Json => "application/json",
            Framing::Sse => "text/event-stream",
        }
    }
}

/// A response body, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedBody {
    /// How it was framed.
    pub framing: Framing,
    /// Messages in order (SSE events with empty data are skipped).
    pub messages: Vec<Message>,
    /// Number of SSE events with empty data (priming events).
    pub empty_events: usize,
    /// Whether the SSE stream ended in the middle of an event.
    pub truncated: bool,
}

impl DecodedBody {
    /// The `id` of the first JSON-RPC response among the messages.
    pub fn response_id(&self) -> Option<RequestId> {
        self.messages.iter().find_map(|m| match m {
            Message::Response(r) => r.id.clone(),
            _ => None,
        })
    }
}

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BodyError {
    /// A JSON body or an SSE event's data is not a JSON-RPC message.
    #[error("{0}")]
    Message(#[from] ParseError),
    /// The SSE framing is broken.
    #[error("{0}")]
    Sse(#[from] SseError),
}

/// Framing from a `Content-Type` value, or by sniffing the body when absent or unknown.
pub fn framing_of(content_type: Option<&str>, body: &[u8]) -> Framing {
    let ct = content_type.unwrap_or("").as_bytes();
    let starts = |p: &str| {
        ct.get(..p.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(p.as_bytes()))
    };
    for f in [Framing::Sse, Framing::Json] {
        if starts(f.media_type()) {
            return f;
        }
    }
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{') | Some(b'[')) {
        Framing::Json
    } else {
        Framing::Sse
    }
}

/// Decodes a whole response body into its messages.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<DecodedBody, BodyError> {
    match framing_of(content_type, body) {
        Framing::Json => {
            let v = parse_json(body)?;
            Ok(DecodedBody {
                framing: Framing::Json,
                messages: vec![message_from_value(v)?],
                empty_events: 0,
                truncated: false,
            })
        }
        Framing::Sse => {
            let (events, truncated) = parse_all(body)?;
            let mut messages = Vec::with_capacity(events.len());
            let mut empty_events = 0;
            for ev in events {
                if ev.data.trim().is_empty() {
                    empty_events += 1;
                    continue;
                }
                let v = parse_json(ev.data.as_bytes())?;
                messages.push(message_from_value(v)?);
            }
            Ok(DecodedBody {
                framing: Framing::Sse,
                messages,
                empty_events,
                truncated,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_sse_bodies_decode_alike() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#;
        let a = decode_body(Some("application/json"), json).unwrap();
        let sse = format!(
            "id: e0\ndata:\n\ndata: {}\n\n",
            std::str::from_utf8(json).unwrap()
        );
        let b = decode_body(Some("text/event-stream"), sse.as_bytes()).unwrap();
        assert_eq!(a.messages, b.messages);
        assert_eq!(b.empty_events, 1);
        assert_eq!(framing_of(None, b"  {"), Framing::Json);
        assert_eq!(framing_of(None, b"data: x"), Framing::Sse);
        // The media type is read case-insensitively, parameters and all;
        // a body that starts like JSON under an event-stream type is SSE.
        assert_eq!(
            framing_of(Some("Text/Event-Stream; charset=utf-8"), b"{"),
            Framing::Sse
        );
        assert_eq!(
            framing_of(Some("APPLICATION/JSON;charset=utf-8"), b"data: x"),
            Framing::Json
        );
        assert_eq!(framing_of(Some("text/e"), b"data: x"), Framing::Sse);
        assert_eq!(framing_of(Some("text/plain"), b" [1]"), Framing::Json);
    }

    #[test]
    fn garbage_in_an_event_is_an_error() {
        assert!(decode_body(Some("text/event-stream"), b"data: {nope\n\n").is_err());
    }
}
