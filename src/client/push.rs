//! One 2025-11-25 tool call as a sans-I/O flow, in quinn-proto's shape:
//! the driver feeds what its streams gave ([`Chunk`]s of the call's POST or
//! of the session's GET stream, or the deadline) and polls [`Step`]s: each
//! server message once read (a non-blank SSE event on either stream), and
//! the call's [`End`]. The SSE reading lives here once; what a message
//! means is [`super::session_flow`]'s, which reads through this. A driver
//! whose call ended stops feeding, or feeds this on to watch what follows
//! the response (`discover::legacy`), or to read a GET stream alone.

use crate::protocol::jsonrpc::MAX_MESSAGE_BYTES;
use crate::protocol::sse::{SseEvent, SseParser};
use bytes::Bytes;
use std::time::Duration;

/// Which response a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    /// The `tools/call` POST.
    Post,
    /// The session's standalone GET stream.
    Get,
}

/// A response's head, as far as the flow and its drivers care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Server-Timing`, if any.
    pub timing: Option<String>,
    /// Time from the call's start to the head.
    pub at: Duration,
}

impl Head {
    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"))
    }
}

/// One step of reading a response: its head, body bytes, then its end or
/// its failure (`E`: the driver's error, which it describes its own way).
#[derive(Debug)]
pub enum Chunk<E> {
    /// The head.
    Head(Head),
    /// Body bytes.
    Data(Bytes),
    /// The body broke.
    Failed(E),
    /// The body ended.
    End,
}

impl<E> Chunk<E> {
    /// The same chunk, a failure's error changed by `f`.
    pub fn map_err<F>(self, f: impl FnOnce(E) -> F) -> Chunk<F> {
        match self {
            Chunk::Head(h) => Chunk::Head(h),
            Chunk::Data(b) => Chunk::Data(b),
            Chunk::Failed(e) => Chunk::Failed(f(e)),
            Chunk::End => Chunk::End,
        }
    }
}

/// What the driver does with what the flow read.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<E> {
    /// One non-blank SSE event's data on `src`.
    Event {
        /// The stream it came on.
        src: Src,
        /// Its `data`.
        data: String,
    },
    /// The call's POST is over; nothing follows.
    Done(End<E>),
}

/// How the call's POST ended, as far as reading goes: the driver that
/// found the call's response in an [`Step::Event`] has ended it before.
#[derive(Debug, Clone, PartialEq)]
pub enum End<E> {
    /// The POST's SSE stream closed.
    Closed,
    /// The POST's whole (not SSE) body, read to its end.
    Body {
        /// Its head.
        head: Head,
        /// The body.
        body: Bytes,
    },
    /// The POST's body broke (the driver's error).
    Failed(E),
    /// The POST's body broke the format: an SSE event or a JSON body too large.
    Malformed(String),
    /// The deadline passed.
    Timeout,
}

/// The POST's body, as far as read.
enum Body {
    /// No head yet.
    Unread,
    /// An SSE stream.
    Sse(SseParser),
    /// A JSON (or any other) body, gathered whole.
    Whole(Head, Vec<u8>),
}

/// One tool call's streams being read. The events of a chunk not polled
/// before the next chunk is fed are dropped (a driver that found the
/// call's response reads no further in its chunk).
pub struct CallFlow<E> {
    post: Body,
    /// The GET stream's parser while it is open.
    get: Option<SseParser>,
    /// SSE events seen on the POST, priming ones included.
    post_events: usize,
    /// The last chunk's events, polled from `next` on, and their stream.
    events: Vec<SseEvent>,
    next: usize,
    src: Src,
    /// The call's end, polled after the events.
    end: Option<End<E>>,
    done: bool,
}

impl<E> CallFlow<E> {
    /// A call whose GET stream, if any, is still to open; or one reading on
    /// a GET stream an earlier call left open (its parser, holding any
    /// event half read).
    pub fn new(get: Option<SseParser>) -> Self {
        CallFlow {
            post: Body::Unread,
            get,
            post_events: 0,
            events: Vec::new(),
            next: 0,
            src: Src::Post,
            end: None,
            done: false,
        }
    }

    /// Feeds one chunk of `src`.
    pub fn on(&mut self, src: Src, chunk: Chunk<E>) {
        if self.done {
            return;
        }
        self.events.clear();
        self.next = 0;
        self.src = src;
        match (src, chunk) {
            (Src::Post, Chunk::Head(h)) => {
                self.post = if h.is_sse() {
                    Body::Sse(SseParser::new())
                } else {
                    Body::Whole(h, Vec::new())
                };
            }
            (Src::Get, Chunk::Head(h)) => {
                self.get = (h.status == 200 && h.is_sse()).then(SseParser::new);
            }
            (Src::Post, Chunk::Data(b)) => match &mut self.post {
                Body::Sse(parser) => {
                    let pushed = parser.push(&b, &mut self.events);
                    self.post_events += self.events.len();
                    if let Err(e) = pushed {
                        self.end(End::Malformed(e.to_string()));
                    }
                }
                Body::Whole(_, buf) if buf.len() + b.len() > MAX_MESSAGE_BYTES => {
                    let why = format!("the tools/call response exceeds {MAX_MESSAGE_BYTES} bytes");
                    self.end(End::Malformed(why));
                }
                Body::Whole(_, buf) => buf.extend_from_slice(&b),
                Body::Unread => {}
            },
            (Src::Get, Chunk::Data(b)) => {
                if let Some(parser) = &mut self.get
                    && parser.push(&b, &mut self.events).is_err()
                {
                    self.get = None; // a broken GET stream is dropped, not fatal
                }
            }
            (Src::Get, _) => self.get = None,
            (Src::Post, Chunk::Failed(e)) => self.end(End::Failed(e)),
            (Src::Post, Chunk::End) => match std::mem::replace(&mut self.post, Body::Unread) {
                Body::Whole(head, body) => self.end(End::Body {
                    head,
                    body: body.into(),
                }),
                _ => self.end(End::Closed),
            },
        }
    }

    /// The call's deadline passed.
    pub fn timeout(&mut self) {
        if !self.done {
            self.end(End::Timeout);
        }
    }

    /// The next step, once the chunks fed so far are read.
    pub fn poll(&mut self) -> Option<Step<E>> {
        while let Some(ev) = self.events.get_mut(self.next) {
            self.next += 1;
            if !ev.data.trim().is_empty() {
                let data = std::mem::take(&mut ev.data);
                return Some(Step::Event {
                    src: self.src,
                    data,
                });
            }
        }
        self.end.take().map(Step::Done)
    }

    /// SSE events seen on the POST so far, priming ones included.
    pub fn post_events(&self) -> usize {
        self.post_events
    }

    /// The GET stream's parser, when it is still open (for the session's
    /// next call).
    pub fn into_get(self) -> Option<SseParser> {
        self.get
    }

    fn end(&mut self, end: End<E>) {
        self.done = true;
        self.end = Some(end);
    }
}

#[cfg(test)]
impl<E> Chunk<E> {
    /// A response head of `status` and content type `ct`, as tests feed it.
    pub(crate) fn head(status: u16, ct: &str) -> Self {
        Chunk::Head(Head {
            status,
            content_type: Some(ct.into()),
            timing: None,
            at: Duration::ZERO,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(ct: &str) -> Chunk<String> {
        Chunk::head(200, ct)
    }

    fn data(s: &str) -> Chunk<String> {
        Chunk::Data(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn drain(f: &mut CallFlow<String>) -> Vec<Step<String>> {
        std::iter::from_fn(|| f.poll()).collect()
    }

    fn event(src: Src, data: &str) -> Step<String> {
        Step::Event {
            src,
            data: data.into(),
        }
    }

    #[test]
    fn events_of_both_streams_are_read_however_split_and_priming_is_skipped() {
        let mut f = CallFlow::new(None);
        f.on(Src::Get, head("text/event-stream"));
        f.on(Src::Post, head("Text/Event-Stream; charset=utf-8"));
        f.on(Src::Post, data("id: e0\ndata:\n\ndata: {\"a\""));
        f.on(Src::Get, data("data: 1\n"));
        assert_eq!(f.post_events(), 1, "the priming event counts");
        assert!(drain(&mut f).is_empty());
        f.on(Src::Post, data(":1}\n\ndata: 2\n\n"));
        assert_eq!(f.poll(), Some(event(Src::Post, "{\"a\":1}")));
        f.on(Src::Get, data("\n"));
        assert_eq!(drain(&mut f), [event(Src::Get, "1")], "the rest is dropped");
        f.on(Src::Post, Chunk::End);
        f.on(Src::Post, data("data: late\n\n"));
        f.timeout();
        assert_eq!(
            drain(&mut f),
            [Step::Done(End::Closed)],
            "nothing after the end"
        );
    }

    #[test]
    fn a_json_body_ends_whole_and_a_refused_get_stream_is_not_read() {
        let mut f = CallFlow::new(Some(SseParser::new()));
        f.on(
            Src::Get,
            Chunk::Head(Head {
                status: 405,
                content_type: None,
                timing: None,
                at: Duration::ZERO,
            }),
        );
        f.on(Src::Get, data("data: 1\n\n"));
        f.on(Src::Post, head("application/json"));
        f.on(Src::Post, data("{\"res"));
        f.on(Src::Post, data("ult\":{}}"));
        f.on(Src::Post, Chunk::End);
        let [Step::Done(End::Body { head, body })] = &drain(&mut f)[..] else {
            panic!("one whole body");
        };
        assert_eq!(head.content_type.as_deref(), Some("application/json"));
        assert_eq!(&body[..], b"{\"result\":{}}");
        assert!(f.into_get().is_none());
    }

    #[test]
    fn a_broken_post_ends_the_call_and_a_broken_get_is_dropped() {
        let mut f = CallFlow::new(Some(SseParser::new()));
        f.on(Src::Get, Chunk::Failed("reset".into()));
        f.on(Src::Get, data("data: 1\n\n"));
        f.on(Src::Post, head("text/event-stream"));
        f.on(Src::Post, Chunk::Failed("eof".into()));
        assert_eq!(drain(&mut f), [Step::Done(End::Failed("eof".into()))]);
        let mut f = CallFlow::<String>::new(None);
        f.timeout();
        assert_eq!(drain(&mut f), [Step::Done(End::Timeout)]);
    }
}
