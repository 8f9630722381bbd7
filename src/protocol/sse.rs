//! Server-Sent Events: an incremental parser that yields the same events
//! however the byte stream is split, and an encoder.
//!
//! Lines end with CRLF, LF or CR (a CR at the end of one chunk followed by an
//! LF at the start of the next is one line ending). A blank line dispatches
//! the event gathered so far if it had any field; comment lines (starting
//! with `:`) are keep-alives and are skipped. A leading UTF-8 BOM is dropped.
//! Unlike a browser, events with an empty `data` are still yielded, so a
//! checker can see priming events (`id: e0` + `data:`); consumers skip them.

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `id:` field, if the event had one.
    pub id: Option<String>,
    /// `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// `retry:` in milliseconds, if any.
    pub retry: Option<u64>,
}

/// Why the stream cannot be parsed further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event grew past the cap without a blank line.
    #[error("SSE event exceeds {0} bytes without ending")]
    EventTooLarge(usize),
}

/// Default cap on one event's buffered bytes (8 MiB).
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Incremental SSE parser.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    pending_cr: bool,
    at_start: bool,
    current: SseEvent,
    has_field: bool,
    has_data: bool,
    event_bytes: usize,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the default event cap.
    pub fn new() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }

    /// A parser with a custom cap on one event's size.
    pub fn with_limit(max_event_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            pending_cr: false,
            at_start: true,
            current: SseEvent::default(),
            has_field: false,
            has_data: false,
            event_bytes: 0,
            max_event_bytes,
        }
    }

    /// Feeds bytes, appending every completed event to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.at_start && !chunk.is_empty() {
            // Drop a UTF-8 BOM, even when it arrives split across chunks.
            const BOM: &[u8] = &[0xEF, 0xBB, 0xBF];
            let have = self.line.len();
            let take = (BOM.len() - have).min(chunk.len());
            if BOM[have..have + take] == chunk[..take] {
                if have + take == BOM.len() {
                    self.line.clear();
                    self.at_start = false;
                } else {
                    self.line.extend_from_slice(&chunk[..take]);
                }
                chunk = &chunk[take..];
            } else {
                // Not a BOM after all: bytes held back while waiting for the
                // rest of it are ordinary line bytes and count towards the cap.
                self.at_start = false;
                self.event_bytes += self.line.len();
                if self.event_bytes > self.max_event_bytes {
                    return Err(SseError::EventTooLarge(self.max_event_bytes));
                }
            }
            if self.at_start {
                return Ok(());
            }
        }
        for &b in chunk {
            if self.pending_cr {
                self.pending_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.end_line(out);
                    self.pending_cr = true;
                }
                _ => {
                    self.line.push(b);
                    self.event_bytes += 1;
                    if self.event_bytes > self.max_event_bytes {
                        return Err(SseError::EventTooLarge(self.max_event_bytes));
                    }
                }
            }
        }
        Ok(())
    }

    /// Ends the stream: an event without its closing blank line is discarded
    /// (as the SSE spec says); returns whether such a partial event existed.
    pub fn finish(&mut self) -> bool {
        let partial = self.has_field || !self.line.is_empty();
        self.line.clear();
        self.reset_event();
        partial
    }

    fn reset_event(&mut self) {
        self.current = SseEvent::default();
        self.has_field = false;
        self.has_data = false;
        self.event_bytes = 0;
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        self.at_start = false;
        if self.line.is_empty() {
            if self.has_field {
                let ev = std::mem::take(&mut self.current);
                out.push(ev);
            }
            self.reset_event();
            return;
        }
        let line = std::mem::take(&mut self.line);
        let text = String::from_utf8_lossy(&line);
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
                self.has_field = true;
            }
            "id" if !value.contains('\0') => {
                self.current.id = Some(value.to_owned());
                self.has_field = true;
            }
            "event" => {
                self.current.event = Some(value.to_owned());
                self.has_field = true;
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.current.retry = value.parse().ok();
                self.has_field = true;
            }
            _ => {}
        }
        self.line = line;
        self.line.clear();
    }
}

/// Parses a complete SSE body in one go (the events, and whether a partial one was cut off).
pub fn parse_all(body: &[u8]) -> Result<(Vec<SseEvent>, bool), SseError> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    p.push(body, &mut out)?;
    let partial = p.finish();
    Ok((out, partial))
}

/// Whether the stream `parts` hold (in order, as if joined) has ended an
/// event block: a blank line (`\n\n`, `\r\r` or `\r\n\r\n`). The
/// drivers time a stream's first event with it.
pub fn has_event_end(parts: &[&[u8]]) -> bool {
    // Whether the previous byte ended a line, and was a `\r` (whose `\n`
    // belongs to the same line end).
    let (mut at_line_end, mut after_cr) = (false, false);
    for &b in parts.iter().flat_map(|p| p.iter()) {
        match b {
            b'\n' if after_cr => after_cr = false,
            b'\n' | b'\r' => {
                if at_line_end {
                    return true;
                }
                at_line_end = true;
                after_cr = b == b'\r';
            }
            _ => (at_line_end, after_cr) = (false, false),
        }
    }
    false
}

/// Encodes one event; multi-line data becomes several `data:` lines.
pub fn encode_event(id: Option<&str>, data: &str) -> String {
    let mut s = String::with_capacity(data.len() + 16);
    if let Some(id) = id {
        s.push_str("id: ");
        s.push_str(id);
        s.push('\n');
    }
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line.strip_suffix('\r').unwrap_or(line));
        s.push('\n');
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_split_every_way(body: &[u8]) -> Vec<SseEvent> {
        let (whole, _) = parse_all(body).unwrap();
        for cut in 0..=body.len() {
            let mut p = SseParser::new();
            let mut out = Vec::new();
            p.push(&body[..cut], &mut out).unwrap();
            p.push(&body[cut..], &mut out).unwrap();
            assert_eq!(out, whole, "split at {cut}");
        }
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for b in body {
            p.push(std::slice::from_ref(b), &mut out).unwrap();
        }
        assert_eq!(out, whole, "byte by byte");
        whole
    }

    #[test]
    fn parses_the_legacy_stream_example() {
        let body = b"id: e0\ndata:\n\nid: e1\ndata: {\"a\":1}\n\n: keepalive\r\nid: e2\r\ndata: x\r\ndata: y\r\n\r\n";
        let ev = events_split_every_way(body);
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].id.as_deref(), Some("e0"));
        assert_eq!(ev[0].data, "");
        assert_eq!(ev[1].data, "{\"a\":1}");
        assert_eq!(ev[2].data, "x\ny");
    }

    #[test]
    fn cr_only_line_endings_and_bom() {
        let ev = events_split_every_way(b"\xEF\xBB\xBFdata: a\rretry: 30\r\revent: m\rdata:b\r\r");
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].retry, Some(30));
        assert_eq!(ev[1].event.as_deref(), Some("m"));
        assert_eq!(ev[1].data, "b");
    }

    #[test]
    fn partial_event_is_reported_not_yielded() {
        let (ev, partial) = parse_all(b"data: a\n\ndata: b\n").unwrap();
        assert_eq!(ev.len(), 1);
        assert!(partial);
    }

    #[test]
    fn encode_then_parse() {
        let s = encode_event(Some("7"), "line1\nline2");
        let (ev, partial) = parse_all(s.as_bytes()).unwrap();
        assert!(!partial);
        assert_eq!(
            ev,
            vec![SseEvent {
                id: Some("7".into()),
                event: None,
                data: "line1\nline2".into(),
                retry: None
            }]
        );
    }

    #[test]
    fn a_split_non_bom_prefix_counts_towards_the_cap() {
        // Found by the sse_stream fuzz target: EF BB held back across a chunk
        // boundary, then not a BOM after all, must count like unsplit bytes.
        let body = b"\xEF\xBB a\ng";
        for cap in 0..body.len() {
            let whole = {
                let mut p = SseParser::with_limit(cap);
                p.push(body, &mut Vec::new())
            };
            for cut in 1..3 {
                let mut p = SseParser::with_limit(cap);
                let mut out = Vec::new();
                let split = p
                    .push(&body[..cut], &mut out)
                    .and_then(|()| p.push(&body[cut..], &mut out));
                assert_eq!(split, whole, "cap {cap}, cut {cut}");
            }
        }
    }

    #[test]
    fn oversized_event_is_an_error() {
        let mut p = SseParser::with_limit(8);
        let mut out = Vec::new();
        assert_eq!(
            p.push(b"data: 0123456789", &mut out),
            Err(SseError::EventTooLarge(8))
        );
    }

    #[test]
    fn an_event_ends_at_a_blank_line_even_across_chunks() {
        assert!(has_event_end(&[b"data: x\n\n"]));
        assert!(has_event_end(&[b"data: x\r\n", b"\r\n"]));
        assert!(has_event_end(&[b"data: x\r", b"\r"]));
        assert!(has_event_end(&[b"id: 1\ndata: x\n", b"\n"]));
        assert!(!has_event_end(&[b"data: x\r\n", b"data: y\r\n"]));
        assert!(!has_event_end(&[b"data: x\n", b""]));
    }
}
