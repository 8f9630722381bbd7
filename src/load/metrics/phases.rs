//! Where a leg's time goes, as k6 splits it and MCP streams need: the TCP
//! connect, the TLS handshake, time to the response headers, time to the
//! first SSE event (a stream reply) and the body after the headers. Each is
//! a histogram per leg under [`PHASE`] (`phase:<leg>.<phase>`). A leg sent
//! on a kept-alive connection has no connect or handshake: it is counted
//! under `<leg>.reused` instead (so the connect histogram's count is the
//! connections opened), and a driver that cannot tell records neither.

use crate::client::Leg;
use crate::client::outcome::Connection;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// Tag prefix of the phase histograms.
pub const PHASE: &str = "phase:";

pub use crate::load::spec::threshold::PHASES;

/// Legs on a kept-alive connection (a count; the value is zero).
pub const REUSED: &str = "reused";

/// The phases of `leg` worth recording, as (phase, time).
pub fn of(leg: &Leg) -> impl Iterator<Item = (&'static str, Duration)> {
    let (connect, tls, reused) = match leg.connection {
        Connection::Opened(o) => (
            Some(o.connect),
            // Plain http has no handshake to time.
            (!o.tls.is_zero()).then_some(o.tls),
            None,
        ),
        Connection::Reused => (None, None, Some(Duration::ZERO)),
        Connection::Unknown => (None, None, None),
    };
    let body = leg.total.saturating_sub(leg.to_headers);
    [
        ("connect", connect),
        ("tls", tls),
        (REUSED, reused),
        ("headers", Some(leg.to_headers)),
        ("first_event", leg.to_first_event),
        ("body", Some(body)),
    ]
    .into_iter()
    .filter_map(|(p, d)| d.map(|d| (p, d)))
}

/// `"<leg>.<phase>"` split at the last dot before a known phase (or
/// [`REUSED`]); `None` for any other name.
pub fn split(name: &str) -> Option<(&str, &str)> {
    let (leg, phase) = name.rsplit_once('.')?;
    (PHASES.contains(&phase) || phase == REUSED).then_some((leg, phase))
}

/// The phase histograms of a metric set's `phase:` entries, by leg and
/// phase.
pub fn by_leg<'a>(
    entries: impl Iterator<Item = (&'a str, &'a Histogram<u64>)>,
) -> BTreeMap<&'a str, BTreeMap<&'a str, &'a Histogram<u64>>> {
    let mut out: BTreeMap<&str, BTreeMap<&str, &Histogram<u64>>> = BTreeMap::new();
    for (name, h) in entries {
        if let Some((leg, phase)) = split(name) {
            out.entry(leg).or_default().insert(phase, h);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::LegResult;
    use crate::client::outcome::Opened;

    fn leg(connection: Connection, first_event: Option<u64>) -> Leg {
        let ms = Duration::from_millis;
        Leg {
            name: "tools/call #1".into(),
            status: Some(200),
            to_headers: ms(5),
            to_first_byte: ms(6),
            total: ms(9),
            server_state: None,
            server_app: None,
            connection,
            to_first_event: first_event.map(ms),
            result: LegResult::Page,
        }
    }

    #[test]
    fn a_new_connection_has_connect_and_tls_a_reused_one_is_counted_apart() {
        let ms = Duration::from_millis;
        let opened = Connection::Opened(Opened {
            connect: ms(1),
            tls: ms(2),
        });
        let got: Vec<_> = of(&leg(opened, Some(7))).collect();
        assert_eq!(
            got,
            [
                ("connect", ms(1)),
                ("tls", ms(2)),
                ("headers", ms(5)),
                ("first_event", ms(7)),
                ("body", ms(4)),
            ]
        );
        let got: Vec<_> = of(&leg(Connection::Reused, None)).collect();
        assert_eq!(got, [(REUSED, ms(0)), ("headers", ms(5)), ("body", ms(4))]);
        let plain = Connection::Opened(Opened {
            connect: ms(1),
            tls: Duration::ZERO,
        });
        assert!(of(&leg(plain, None)).all(|(p, _)| p != "tls"));
        assert!(of(&leg(Connection::Unknown, None)).all(|(p, _)| p != REUSED && p != "connect"));
    }

    #[test]
    fn names_split_at_the_phase() {
        assert_eq!(
            split("tools/call #1.first_event"),
            Some(("tools/call #1", "first_event"))
        );
        assert_eq!(split("a.b.connect"), Some(("a.b", "connect")));
        assert_eq!(
            split("tools/call #1.reused"),
            Some(("tools/call #1", REUSED))
        );
        assert_eq!(split("tools/call #1.other"), None);
        assert_eq!(split("nodot"), None);
    }
}
