//! The "where the time goes" table of a load report: per leg, the p50 and
//! p99 of each phase (connect, TLS, headers, first SSE event, body) and
//! how many legs opened their connection; one set of rows the terminal,
//! `summary.md` and the HTML report each lay out.

use super::format::ms;
use super::summary::Summary;

/// Column heads, in phase order.
pub const HEADS: [&str; 5] = ["connect", "TLS", "headers", "first event", "body"];

/// The phases' names in a summary (as [`crate::load::metrics::phases::PHASES`]).
const KEYS: [&str; 5] = ["connect", "tls", "headers", "first_event", "body"];

/// One leg's row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The leg.
    pub leg: String,
    /// Per phase, `p50 / p99` in ms, or `-` when the leg has none.
    pub cells: [String; 5],
    /// Connections: `N new, M reused` (empty when the driver could not tell).
    pub connections: String,
}

/// The rows of `s`, one per leg that recorded phases.
pub fn rows(s: &Summary) -> Vec<Row> {
    s.phases
        .iter()
        .map(|(leg, phases)| {
            let cells = KEYS.map(|k| {
                phases.get(k).map_or("-".to_owned(), |st| {
                    format!("{} / {}", ms(st.p50_ms), ms(st.p99_ms))
                })
            });
            let opened = phases.get("connect").map_or(0, |st| st.count);
            let reused = phases.get("reused").map_or(0, |st| st.count);
            let connections = if opened + reused == 0 {
                String::new()
            } else {
                format!("{opened} new, {reused} reused")
            };
            Row {
                leg: leg.clone(),
                cells,
                connections,
            }
        })
        .collect()
}

/// What the table shows, once, under it.
pub const NOTE: &str = "p50 / p99 ms from the request's start: connect and TLS of the legs that \
                        opened a connection (a kept-alive one has neither), headers when the \
                        response head arrived, first event when a stream's first SSE event had, \
                        body the time after the headers. Thresholds take them as \
                        p99(LEG.PHASE), e.g. p99(tools/call #1.first_event) < 50ms.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::LatencyStats;

    #[test]
    fn a_row_per_leg_with_its_connections() {
        let st = |count, p50_ms, p99_ms| LatencyStats {
            count,
            p50_ms,
            p99_ms,
            ..Default::default()
        };
        let mut s = Summary::default();
        s.phases.insert(
            "tools/call #1".into(),
            [
                ("connect".to_owned(), st(4, 0.1, 0.3)),
                ("tls".to_owned(), st(4, 1.5, 2.5)),
                ("reused".to_owned(), st(96, 0.0, 0.0)),
                ("headers".to_owned(), st(100, 2.0, 9.0)),
                ("body".to_owned(), st(100, 0.01, 0.2)),
            ]
            .into_iter()
            .collect(),
        );
        let r = &rows(&s)[0];
        assert_eq!(r.leg, "tools/call #1");
        assert_eq!(r.cells[1], format!("{} / {}", ms(1.5), ms(2.5)));
        assert_eq!(r.cells[3], "-", "no stream, no first event");
        assert_eq!(r.connections, "4 new, 96 reused");
    }
}
