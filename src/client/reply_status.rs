//! How a finding or a flow's outcome names a reply's transport status. On
//! an HTTP target the status is the server's ("HTTP 400"). Over stdio every
//! reply comes through the loopback bridge (`crate::stdio::bridge`), whose
//! status is ours, never the server's: the text then names only what the
//! pipe saw (nothing more for a reply, "nothing back on stdout" for
//! silence, "no process answered" for a process gone). Every check words a
//! status through [`ReplyStatus`] (`check::Probe::reply_status`), and so
//! does the MRTR flow a check drives ([`super::modern::FlowConfig::stdio`]).

use std::fmt;

/// A reply's status code and the kind of target it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyStatus {
    code: u16,
    stdio: bool,
}

impl ReplyStatus {
    /// `code` from an HTTP target, or from the stdio bridge when `stdio`.
    pub fn new(code: u16, stdio: bool) -> ReplyStatus {
        ReplyStatus { code, stdio }
    }

    /// The status code.
    pub fn code(&self) -> u16 {
        self.code
    }

    /// Another status `code` from the same target.
    pub fn other(&self, code: u16) -> ReplyStatus {
        ReplyStatus { code, ..*self }
    }

    /// `HTTP {code}{sep}{rest}` on an HTTP target. Over stdio `rest` alone
    /// when the pipe carried the server's reply or its silence (`rest`, the
    /// reply read, says which), else what the pipe saw, `sep`, `rest`.
    pub fn then(&self, sep: &str, rest: impl fmt::Display) -> String {
        if self.quiet() {
            rest.to_string()
        } else {
            format!("{self}{sep}{rest}")
        }
    }

    /// How a rule's expected status (this one) reads before `rest`:
    /// `HTTP {code}{sep}{rest}` over HTTP; `rest` alone over stdio, where no
    /// status is part of any rule.
    pub fn expected(&self, sep: &str, rest: impl fmt::Display) -> String {
        match self.stdio {
            true => rest.to_string(),
            false => format!("HTTP {}{sep}{rest}", self.code),
        }
    }

    /// [`ReplyStatus::then`] in brackets after `rest`: ` (HTTP 200)` on an
    /// HTTP target; over stdio nothing when the pipe carried a reply.
    pub fn after(&self, rest: impl fmt::Display) -> String {
        if self.quiet() {
            rest.to_string()
        } else {
            format!("{rest} ({self})")
        }
    }

    /// Over stdio, a status that adds nothing to the reply read: the
    /// bridge's `200` (a reply) and `202` (none: the reply read says so).
    fn quiet(&self) -> bool {
        self.stdio && matches!(self.code, 200 | 202)
    }
}

impl fmt::Display for ReplyStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.stdio {
            return write!(f, "HTTP {}", self.code);
        }
        // What each status of the bridge stands for on the pipe.
        f.write_str(match self.code {
            200 => "a reply on stdout",
            202 => "nothing back on stdout",
            502 => "no process answered (it exited or could not start)",
            400 => "nothing sent (the bridge sends no blank line)",
            404 => "no such session process",
            405 => "no stream: stdio has none",
            _ => "no reply the server wrote (the bridge answered)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_targets_read_as_before() {
        let s = ReplyStatus::new(400, false);
        assert_eq!(s.to_string(), "HTTP 400");
        assert_eq!(s.then(" and ", "error -32602"), "HTTP 400 and error -32602");
        assert_eq!(s.after("a result"), "a result (HTTP 400)");
        assert_eq!(
            s.other(404).expected(" and ", "-32601"),
            "HTTP 404 and -32601"
        );
    }

    #[test]
    fn stdio_never_names_the_bridges_status() {
        for code in [200, 202, 400, 404, 405, 502, 503] {
            let s = ReplyStatus::new(code, true);
            for text in [s.to_string(), s.then(", ", "x"), s.after("x")] {
                assert!(!text.contains("HTTP"), "{code}: {text}");
                assert!(!text.contains(&code.to_string()), "{code}: {text}");
            }
        }
        let ok = ReplyStatus::new(200, true);
        assert_eq!(ok.other(404).expected(" and ", "-32601"), "-32601");
        assert_eq!(ok.then(" and ", "error -32602"), "error -32602");
        assert_eq!(
            ReplyStatus::new(502, true).then(": ", "x"),
            "no process answered (it exited or could not start): x"
        );
    }
}
