//! What a server offers besides tools, for the checks that read every kind
//! of result (`mrtr-result-type`, `mrtr-cache-hints`): the read or get to
//! follow a list with ([`crate::discover::offered`], which `fuzz` follows
//! too), and the notes on what was not probed.

pub use crate::discover::offered::{Follow, first_get, first_read};

/// Notes on what was not probed, as ` (a; b)` after a verdict's detail
/// (empty when there are none).
pub fn aside(notes: &[String]) -> String {
    if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    }
}
