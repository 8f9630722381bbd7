//! The public spec page behind each rule: a check's `rule` names spec-digest
//! sections (`§4.7 S8`, `§3.2`, ...); the first section named picks the page
//! of the generation checked on modelcontextprotocol.io, so a server author
//! can read the rule where it is written.

use crate::protocol::Generation;

/// The site every link points into.
pub const SPEC_BASE: &str = "https://modelcontextprotocol.io/specification";

/// The first spec-digest section a rule names (`"4.7"` for `"§4.7 S8 / §6.B 15"`).
fn first_section(rule: &str) -> Option<&str> {
    let start = rule.find('§')? + '§'.len_utf8();
    let rest = &rule[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('.'))
}

/// The page (path under the version) a digest section is written on.
fn page(generation: Generation, section: &str) -> &'static str {
    match (generation, section) {
        (Generation::Legacy, "3.1") => "basic/lifecycle",
        (Generation::Legacy, "3.2" | "stdio") => "basic/transports",
        (Generation::Modern, "stdio") => "basic/transports/stdio",
        (Generation::Modern, "4.1" | "4.2" | "4.9") => "basic",
        (Generation::Modern, "3.2" | "4.3") => "basic/transports/streamable-http",
        (Generation::Modern, "4.4a") => "server/utilities/caching",
        (Generation::Modern, "4.4" | "4.5" | "4.6" | "4.7" | "4.8") => "basic/patterns/mrtr",
        // The tools page itself (its Security section); the digest has no
        // section for tool input validation.
        (_, "tools") => "server/tools",
        _ => "client/elicitation",
    }
}

/// The public spec page of `rule` for `generation`.
pub fn spec_link(generation: Generation, rule: &str) -> String {
    let section = first_section(rule).unwrap_or("");
    format!(
        "{SPEC_BASE}/{}/{}",
        generation.version(),
        page(generation, section)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_link_to_their_version_and_page() {
        assert_eq!(first_section("§4.7 S8 / §6.B 15"), Some("4.7"));
        assert_eq!(first_section("§4.4a (SEP-2549)"), Some("4.4a"));
        assert_eq!(first_section("§3.1 / §6.A 2"), Some("3.1"));
        assert_eq!(
            spec_link(Generation::Modern, "§4.7 S8 / §6.B 15"),
            "https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/mrtr"
        );
        assert_eq!(
            spec_link(Generation::Modern, "§4.3 / §6.B 2"),
            "https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http"
        );
        assert_eq!(
            spec_link(Generation::Legacy, "§3.2 / §6.A 19"),
            "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports"
        );
        assert_eq!(
            spec_link(Generation::Legacy, "§2.4, §3.6 rule 2 / §6.A 4"),
            "https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation"
        );
        assert_eq!(
            spec_link(Generation::Modern, "§tools (Security), SEP-1303"),
            "https://modelcontextprotocol.io/specification/2026-07-28/server/tools"
        );
        assert_eq!(
            spec_link(Generation::Modern, "§4.4a / SEP-2549"),
            "https://modelcontextprotocol.io/specification/2026-07-28/server/utilities/caching"
        );
    }
}
