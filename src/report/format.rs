//! Text formatting every renderer shares: milliseconds with digits by size,
//! and one escaper each for HTML, XML and a Markdown table cell. The server's
//! flow pages, `check`'s JUnit and Markdown, `fuzz`'s summary and the run
//! reports all use these, so one rule set holds everywhere.

use std::fmt::Write as _;

/// Milliseconds with digits by size: `123`, `12.3`, `1.234`.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Escapes text for HTML element content and (quoted) attribute values.
pub fn escape_html(s: &str) -> String {
    escape(s, "&#39;", false)
}

/// Escapes text for XML content and attributes (SVG, JUnit). Control
/// characters XML 1.0 cannot carry become `?`.
pub fn escape_xml(s: &str) -> String {
    escape(s, "&apos;", true)
}

fn escape(s: &str, apos: &str, mask_controls: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str(apos),
            c if mask_controls && (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => {
                out.push('?')
            }
            c => out.push(c),
        }
    }
    out
}

/// Prose written for Markdown, as HTML: escaped, and each `` `span` ``
/// a `<code>` element (an unpaired backtick stays as it is).
pub fn html_prose(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let mut out = String::with_capacity(s.len() + 16);
    for (i, p) in parts.iter().enumerate() {
        let after_backtick = i % 2 == 1;
        if after_backtick && i + 1 < parts.len() {
            let _ = write!(out, "<code>{}</code>", escape_html(p));
        } else {
            if after_backtick {
                out.push('`');
            }
            out.push_str(&escape_html(p));
        }
    }
    out
}

/// Text made safe for one Markdown table cell: `|` escaped, each line break
/// (a multi-line error page, say) a space.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_digits_by_size() {
        assert_eq!(ms(123.4), "123");
        assert_eq!(ms(12.34), "12.3");
        assert_eq!(ms(1.2345), "1.234");
    }

    #[test]
    fn escapers_share_one_rule_set() {
        let s = "<a href=\"x\">&'\u{1}";
        assert_eq!(
            escape_html(s),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\u{1}"
        );
        assert_eq!(escape_xml(s), "&lt;a href=&quot;x&quot;&gt;&amp;&apos;?");
        assert_eq!(escape_xml("a\tb\nc"), "a\tb\nc");
    }

    #[test]
    fn prose_renders_code_spans_and_escapes_the_rest() {
        assert_eq!(
            html_prose("run `report capacity` <now>"),
            "run <code>report capacity</code> &lt;now&gt;"
        );
        assert_eq!(html_prose("`a<b`"), "<code>a&lt;b</code>");
        assert_eq!(html_prose("one ` alone"), "one ` alone");
        assert_eq!(html_prose("`x` and ` y"), "<code>x</code> and ` y");
    }

    #[test]
    fn md_cell_keeps_a_table_row_on_one_line() {
        assert_eq!(md_cell("a|b"), "a\\|b");
        assert_eq!(
            md_cell("<html>\r\n<body>\n500</body>"),
            "<html>  <body> 500</body>"
        );
    }
}
