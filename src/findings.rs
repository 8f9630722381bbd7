//! Findings: the one shape every validator in elicitkit reports in.
//!
//! Protocol validators, the schema engine and the conformance checker all
//! produce [`Finding`]s, so a rule broken anywhere reads the same way.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How strong the broken rule is, after the spec's keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    /// Informational: worth knowing, breaks nothing.
    Info,
    /// A SHOULD / SHOULD NOT rule.
    Should,
    /// A MUST / MUST NOT rule.
    Must,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "INFO",
            Severity::Should => "SHOULD",
            Severity::Must => "MUST",
        })
    }
}

/// One broken (or noteworthy) rule at one place in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Strength of the rule.
    pub severity: Severity,
    /// RFC 6901 JSON Pointer to the offending value ("" is the whole document).
    pub pointer: String,
    /// Stable kebab-case rule id, e.g. `schema-nested-object`.
    pub rule: String,
    /// One sentence a person can act on.
    pub message: String,
}

impl Finding {
    /// Builds a finding.
    pub fn new(
        severity: Severity,
        pointer: impl Into<String>,
        rule: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            severity,
            pointer: pointer.into(),
            rule: rule.into(),
            message: message.into(),
        }
    }
}

/// True when any finding is a MUST.
pub fn has_must(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Must)
}

/// Appends one reference token to a JSON Pointer, escaping `~` and `/`.
pub fn pointer_push(base: &str, token: &str) -> String {
    let mut out = String::with_capacity(base.len() + token.len() + 1);
    out.push_str(base);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_escapes_reserved_characters() {
        assert_eq!(pointer_push("", "a/b~c"), "/a~1b~0c");
        assert_eq!(pointer_push("/properties", "x"), "/properties/x");
    }

    #[test]
    fn must_detection() {
        let f = vec![Finding::new(Severity::Should, "", "r", "m")];
        assert!(!has_must(&f));
        let g = vec![Finding::new(Severity::Must, "", "r", "m")];
        assert!(has_must(&g));
    }
}
