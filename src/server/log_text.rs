//! Client-supplied text made safe for a log line: [`LogText`] quotes it,
//! escapes what could end the line, colour or reorder the terminal, or
//! fake a neighbouring field, and cuts it short.
//!
//! Every string a client chose (its `clientInfo.name`, a principal name,
//! an input key, an `Origin` or `Host` value) goes into a log field
//! through this, never with `%` on the raw value.

use std::fmt;

/// Longest text kept, in characters; the rest is summarised.
pub const MAX_CHARS: usize = 120;

/// A log-safe rendering of client text: `"…"`, with `"` and `\` escaped,
/// control characters (C0, DEL, C1), bidirectional overrides and other
/// invisible format characters as `\u{…}`, at most [`MAX_CHARS`]
/// characters.
#[derive(Clone, Copy)]
pub struct LogText<'a>(pub &'a str);

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}' // zero-width, LRM/RLM
            | '\u{2028}' | '\u{2029}' // line and paragraph separators
            | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' // bidi isolates
            | '\u{FEFF}')
}

impl fmt::Display for LogText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for (shown, c) in self.0.chars().enumerate() {
            if shown == MAX_CHARS {
                let rest = self.0.chars().count() - MAX_CHARS;
                return write!(f, "\"…(+{rest} chars)");
            }
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if needs_escape(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        f.write_str("\"")
    }
}

impl fmt::Debug for LogText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        LogText(s).to_string()
    }

    #[test]
    fn lines_colours_and_fields_cannot_be_forged() {
        assert_eq!(show("mcp-inspector"), "\"mcp-inspector\"");
        let forged = show("x\nINFO admin logged in\r");
        assert_eq!(forged, "\"x\\nINFO admin logged in\\r\"");
        assert!(!forged.contains('\n') && !forged.contains('\r'));
        let red = show("\u{1b}[31mred\u{1b}[0m");
        assert!(!red.contains('\u{1b}'), "{red}");
        assert_eq!(red, "\"\\u{1b}[31mred\\u{1b}[0m\"");
        assert_eq!(show("a\" principal=\"root"), "\"a\\\" principal=\\\"root\"");
        assert_eq!(show("back\\slash"), "\"back\\\\slash\"");
        assert_eq!(show("\u{202e}txt.exe"), "\"\\u{202e}txt.exe\"");
        assert_eq!(show("\u{85}\u{7f}"), "\"\\u{85}\\u{7f}\"");
        assert_eq!(show("zoë ✓"), "\"zoë ✓\"");
    }

    #[test]
    fn long_text_is_cut_short() {
        let long = "a".repeat(500);
        let s = show(&long);
        assert!(
            s.starts_with(&format!("\"{}\"", "a".repeat(MAX_CHARS))),
            "{s}"
        );
        assert!(s.ends_with("…(+380 chars)"), "{s}");
    }
}
