//! Distributed load on one engine (Goose 0.19 has no Gaggle): execution
//! segments (`--segment I/N`, after k6's `--execution-segment`) and a
//! synchronized start (`--start-at`).
//!
//! N processes, on one machine or many, each run the same plan with their
//! own `--segment I/N` and the same `--start-at`; each writes its own
//! `run.hlog`, and `elicitkit report merge` adds them up exactly.
//!
//! How the whole is shared ([`Segment`]; `Plan::split` applies it to a plan):
//!
//! - **Counts** (closed-model users, each closed stage's target, the request
//!   cap) use k6's fraction-based rounding: segment `I` of `N` gets
//!   `round(v·I/N) − round(v·(I−1)/N)` (half up), so the shares add up to
//!   `v` exactly for every `v` and `N`: 10 users over 3 segments are 3, 4, 3.
//!   A segment whose share of the users is 0 is refused (use fewer segments).
//!   The users' launch keeps the whole's length (the hatch rate is scaled
//!   with the users), so every segment's warm-up and window line up.
//! - **The open model's schedule** is striped: arrival `k` (0, 1, …) of the
//!   *whole* schedule (constant rate or stages) belongs to segment
//!   `k mod N + 1`. The segments' arrivals together are exactly the whole's,
//!   each at the instant the whole would start it, so each stage's target is
//!   scaled by `1/N` and the merged rate is the whole rate (not `N` bursts at
//!   once). Each segment picks scenarios from its own arrivals in the plan's
//!   weighted order, so every segment runs the whole mix.
//! - **Ids and seeds**: round trip `n` of a segment is number
//!   `n·N + (I−1)` of the whole run; flow seeds, JSON-RPC ids and legacy
//!   session seeds all derive from that number, so two segments never
//!   generate the same values. Closed-model users `round(U·(I−1)/N)` to
//!   `round(U·I/N) − 1` of the whole belong to segment `I` (recorded in the
//!   report's settings).
//!
//! The synchronized start ([`parse_start_at`]; the wait is `load::exec::engine::wait_until`): an RFC 3339
//! UTC time (`2026-12-02T03:10:00Z`, fractions allowed) or `+DURATION` from
//! now (`+10s`, for a quick local try). The process checks the target, then
//! waits with a progress line and starts its schedule at that instant; a
//! segmented run's measured window is anchored at the schedule's start (not
//! at its own first round trip), so every segment's warm-up and window cover
//! the same wall-clock span. A time more than [`START_GRACE`] in the past,
//! or more than [`MAX_AHEAD`] ahead, is refused. Clocks must agree (NTP):
//! the start is only as synchronized as the machines' clocks.

use std::fmt;
use std::time::{Duration, SystemTime};

/// How far in the past `--start-at` may be (process start-up, a slow pod).
pub const START_GRACE: Duration = Duration::from_secs(5);

/// How far ahead `--start-at` may be.
pub const MAX_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Segment `index` of `count` (1-based: `1/1` is the whole run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Which segment, 1 to `count`.
    pub index: u32,
    /// How many segments the whole is split into.
    pub count: u32,
}

impl Default for Segment {
    fn default() -> Self {
        Segment::WHOLE
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `round(v·i/n)`, half up, exactly (no floating point).
fn cumulative(v: u64, i: u32, n: u32) -> u64 {
    let (v, i, n) = (u128::from(v), u128::from(i), u128::from(n.max(1)));
    ((2 * v * i + n) / (2 * n)) as u64
}

impl Segment {
    /// The whole run, unsplit.
    pub const WHOLE: Segment = Segment { index: 1, count: 1 };

    /// Segment `index` of `count`; `Err` unless 1 ≤ index ≤ count.
    pub fn new(index: u32, count: u32) -> Result<Segment, SegmentError> {
        if count == 0 {
            return Err(SegmentError::NoSegments);
        }
        if index == 0 || index > count {
            return Err(SegmentError::OutOfRange { index, count });
        }
        Ok(Segment { index, count })
    }

    /// Parses `I/N` (e.g. `2/3`).
    pub fn parse(text: &str) -> Result<Segment, SegmentError> {
        let t = text.trim();
        let Some((i, n)) = t.split_once('/') else {
            return Err(SegmentError::NotASegment(t.to_owned()));
        };
        let num = |s: &str, part: &'static str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| SegmentError::NotANumber {
                    text: t.to_owned(),
                    part,
                    given: s.trim().to_owned(),
                })
        };
        Segment::new(num(i, "I")?, num(n, "N")?)
    }

    /// Whether this is the whole run (`1/1`).
    pub fn is_whole(&self) -> bool {
        self.count <= 1
    }

    /// This segment's share of a count `total` (k6's rounding; the shares of
    /// `1/N` … `N/N` add up to `total`).
    pub fn share(&self, total: u64) -> u64 {
        cumulative(total, self.index, self.count) - cumulative(total, self.index - 1, self.count)
    }

    /// Which of `total` numbered things (users) are this segment's.
    pub fn range(&self, total: u64) -> std::ops::Range<u64> {
        cumulative(total, self.index - 1, self.count)..cumulative(total, self.index, self.count)
    }

    /// Whether arrival `k` (0-based) of the whole open-model schedule is
    /// this segment's.
    pub fn owns(&self, k: u64) -> bool {
        k % u64::from(self.count.max(1)) == u64::from(self.index - 1)
    }

    /// The whole run's number of this segment's `local`-th round trip.
    pub fn global(&self, local: u64) -> u64 {
        local
            .wrapping_mul(u64::from(self.count.max(1)))
            .wrapping_add(u64::from(self.index - 1))
    }

    /// The hlog header comment that records the segment (read back by
    /// [`Segment::from_hlog`]).
    pub fn hlog_comment(&self, start_at: Option<SystemTime>) -> String {
        match start_at {
            Some(t) => format!(
                "segment {self} (elicitkit load --segment), start-at {}",
                humantime::format_rfc3339_millis(t)
            ),
            None => format!("segment {self} (elicitkit load --segment)"),
        }
    }

    /// The segment a log's header comments record, if any.
    pub fn from_hlog(bytes: &[u8]) -> Option<Segment> {
        let text = String::from_utf8_lossy(bytes);
        text.lines()
            .take_while(|l| l.starts_with('#'))
            .find_map(|l| {
                let rest = l.strip_prefix("#segment ")?;
                Segment::parse(rest.split_whitespace().next()?).ok()
            })
    }
}

/// Why a segment or a start time cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// `N` is 0.
    #[error("the number of segments N must be at least 1")]
    NoSegments,
    /// `I` outside 1..=N.
    #[error(
        "segment {index}/{count}: I must be between 1 and N ({count}), e.g. --segment 1/{count}"
    )]
    OutOfRange {
        /// I.
        index: u32,
        /// N.
        count: u32,
    },
    /// No `/`.
    #[error("{0:?} is not a segment: expected I/N (this process's share I of N), e.g. 2/3")]
    NotASegment(String),
    /// I or N not a whole number.
    #[error("{text:?}: {part} {given:?} is not a whole number ≥ 1")]
    NotANumber {
        /// The segment as written.
        text: String,
        /// `I` or `N`.
        part: &'static str,
        /// What was there.
        given: String,
    },
    /// `+DURATION` that does not parse.
    #[error("--start-at {text:?}: {offset:?} is not a duration ({why}); use e.g. +10s or +2m")]
    BadOffset {
        /// The time as written.
        text: String,
        /// What follows its `+`.
        offset: String,
        /// humantime's reason.
        why: String,
    },
    /// Neither RFC 3339 UTC nor `+DURATION`.
    #[error(
        "--start-at {0:?}: expected an RFC 3339 UTC time such as 2026-12-02T03:10:00Z \
         (ending in Z), or +DURATION from now such as +10s"
    )]
    NotATime(String),
    /// A start in the past.
    #[error("--start-at {text}: that was {:.0} s ago (now is {}); give a time in the future", .ago.as_secs_f64(), humantime::format_rfc3339_seconds(*.now))]
    Past {
        /// The time as written.
        text: String,
        /// How long ago.
        ago: Duration,
        /// Now.
        now: SystemTime,
    },
    /// A request cap smaller than the number of segments.
    #[error("--segment {segment}: a request cap of {cap} cannot be split {} ways; raise --max-requests to at least {}", .segment.count, .segment.count)]
    CapTooSmall {
        /// The segment.
        segment: Segment,
        /// The whole run's cap.
        cap: u64,
    },
    /// Fewer users than segments.
    #[error("--segment {segment}: {users} users split {} ways leave this segment none; use at most {users} segments, or more users", .segment.count)]
    NoUsers {
        /// The segment.
        segment: Segment,
        /// The whole run's users.
        users: usize,
    },
    /// Stages whose users leave this segment none.
    #[error("--segment {segment}: the stages' users split {} ways leave this segment none; use fewer segments, or more users", .segment.count)]
    NoStageUsers {
        /// The segment.
        segment: Segment,
    },
    /// A start more than a day ahead.
    #[error("--start-at {text}: that is {} from now, more than 24 h ahead; check the date", humantime::format_duration(*.ahead))]
    TooFarAhead {
        /// The time as written.
        text: String,
        /// How far ahead (whole seconds).
        ahead: Duration,
    },
}

/// Parses `--start-at`: an RFC 3339 UTC time (`2026-12-02T03:10:00Z`) or
/// `+DURATION` from `now` (`+10s`). Refuses one more than [`START_GRACE`]
/// before `now` or more than [`MAX_AHEAD`] after it.
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, SegmentError> {
    let t = text.trim();
    let at = if let Some(rel) = t.strip_prefix('+') {
        let d = humantime::parse_duration(rel.trim()).map_err(|e| SegmentError::BadOffset {
            text: t.to_owned(),
            offset: rel.to_owned(),
            why: e.to_string(),
        })?;
        now + d
    } else {
        humantime::parse_rfc3339_weak(t.trim_end_matches('Z'))
            .ok()
            .filter(|_| t.ends_with('Z'))
            .ok_or_else(|| SegmentError::NotATime(t.to_owned()))?
    };
    if let Ok(ago) = now.duration_since(at)
        && ago > START_GRACE
    {
        return Err(SegmentError::Past {
            text: t.to_owned(),
            ago,
            now,
        });
    }
    if let Ok(ahead) = at.duration_since(now)
        && ahead > MAX_AHEAD
    {
        return Err(SegmentError::TooFarAhead {
            text: t.to_owned(),
            ahead: Duration::from_secs(ahead.as_secs()),
        });
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(i: u32, n: u32) -> Segment {
        Segment::new(i, n).unwrap()
    }

    #[test]
    fn segments_parse_and_refuse_what_is_not_one() {
        assert_eq!(Segment::parse("2/3"), Ok(seg(2, 3)));
        assert_eq!(Segment::parse(" 1/1 "), Ok(Segment::WHOLE));
        for (bad, says) in [
            ("0/3", "between 1 and N"),
            ("4/3", "between 1 and N"),
            ("1/0", "at least 1"),
            ("2", "expected I/N"),
            ("a/3", "\"a\" is not a whole number"),
            ("1/-2", "\"-2\" is not a whole number"),
            ("1.5/3", "is not a whole number"),
        ] {
            let e = Segment::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn shares_add_up_to_the_whole_for_every_split() {
        for n in 1..=40u32 {
            for total in (0..=257u64).chain([1_000_003, 999_999_999_999, u64::MAX / 4]) {
                let shares: Vec<u64> = (1..=n).map(|i| seg(i, n).share(total)).collect();
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {n}");
                let (lo, hi) = (*shares.iter().min().unwrap(), *shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{total} over {n}: {shares:?}");
                // Ranges tile 0..total in order.
                let mut next = 0;
                for i in 1..=n {
                    let r = seg(i, n).range(total);
                    assert_eq!(r.start, next, "{total} over {n}");
                    assert_eq!(r.end - r.start, shares[i as usize - 1]);
                    next = r.end;
                }
                assert_eq!(next, total);
            }
        }
        // k6's rounding: 10 users over 3 segments are 3, 4, 3.
        let ten: Vec<u64> = (1..=3).map(|i| seg(i, 3).share(10)).collect();
        assert_eq!(ten, [3, 4, 3]);
    }

    #[test]
    fn arrivals_and_numbers_are_disjoint_and_cover_the_whole() {
        for n in 1..=7u32 {
            for k in 0..500u64 {
                let owners = (1..=n).filter(|i| seg(*i, n).owns(k)).count();
                assert_eq!(owners, 1, "arrival {k} over {n}");
            }
            let mut seen = std::collections::HashSet::new();
            for i in 1..=n {
                for local in 0..300 {
                    assert!(seen.insert(seg(i, n).global(local)), "{i}/{n} #{local}");
                }
            }
            assert_eq!(seen.len(), 300 * n as usize);
            assert!((0..300 * u64::from(n)).all(|g| seen.contains(&g)));
        }
    }

    #[test]
    fn start_times_parse_and_refuse_the_past_and_the_far_future() {
        let now = humantime::parse_rfc3339("2026-12-02T03:00:00Z").unwrap();
        let at = parse_start_at("2026-12-02T03:10:00Z", now).unwrap();
        assert_eq!(at.duration_since(now).unwrap(), Duration::from_secs(600));
        let frac = parse_start_at("2026-12-02T03:00:01.250Z", now).unwrap();
        assert_eq!(
            frac.duration_since(now).unwrap(),
            Duration::from_millis(1250)
        );
        assert_eq!(
            parse_start_at("+10s", now).unwrap(),
            now + Duration::from_secs(10)
        );
        assert_eq!(parse_start_at("+0s", now).unwrap(), now);
        // Within the grace: a pod that started a little late still runs.
        assert!(parse_start_at("2026-12-02T02:59:57Z", now).is_ok());
        for (bad, says) in [
            ("2026-12-02T02:50:00Z", "600 s ago"),
            ("2026-12-04T03:00:00Z", "more than 24 h ahead"),
            ("+25h", "more than 24 h ahead"),
            ("2026-12-02T03:10:00", "ending in Z"),
            ("2026-12-02T03:10:00+01:00", "RFC 3339 UTC"),
            ("tomorrow", "RFC 3339 UTC"),
            ("+soon", "\"soon\" is not a duration"),
        ] {
            let e = parse_start_at(bad, now).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
