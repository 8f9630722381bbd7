//! Distributed load on one engine (Goose 0.19 has no Gaggle): execution
//! segments (`--segment I/N`, after k6's `--execution-segment`) and a
//! synchronized start (`--start-at`).
//!
//! N processes, on one machine or many, each run the same plan with their
//! own `--segment I/N` and the same `--start-at`; each writes its own
//! `run.hlog`, and `elicitkit report merge` adds them up exactly.
//!
//! How the whole is shared ([`Segment`]):
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
//! The synchronized start ([`parse_start_at`], [`wait_until`]): an RFC 3339
//! UTC time (`2026-12-02T03:10:00Z`, fractions allowed) or `+DURATION` from
//! now (`+10s`, for a quick local try). The process checks the target, then
//! waits with a progress line and starts its schedule at that instant; a
//! segmented run's measured window is anchored at the schedule's start (not
//! at its own first round trip), so every segment's warm-up and window cover
//! the same wall-clock span. A time more than [`START_GRACE`] in the past,
//! or more than [`MAX_AHEAD`] ahead, is refused. Clocks must agree (NTP):
//! the start is only as synchronized as the machines' clocks.

use super::plan::{LoadShape, Plan};
use super::progress::ProgressLine;
use super::shape::{Model, Stage};
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
    pub fn new(index: u32, count: u32) -> Result<Segment, String> {
        if count == 0 {
            return Err("the number of segments N must be at least 1".into());
        }
        if index == 0 || index > count {
            return Err(format!(
                "segment {index}/{count}: I must be between 1 and N ({count}), e.g. --segment 1/{count}"
            ));
        }
        Ok(Segment { index, count })
    }

    /// Parses `I/N` (e.g. `2/3`).
    pub fn parse(text: &str) -> Result<Segment, String> {
        let t = text.trim();
        let Some((i, n)) = t.split_once('/') else {
            return Err(format!(
                "{t:?} is not a segment: expected I/N (this process's share I of N), e.g. 2/3"
            ));
        };
        let num = |s: &str, what: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("{t:?}: {what} {:?} is not a whole number ≥ 1", s.trim()))
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

    /// Makes `plan` this segment's share of itself (see the module docs).
    /// `Err` says why the plan cannot be split this way.
    pub fn apply(&self, plan: &mut Plan) -> Result<(), String> {
        plan.segment = *self;
        if self.is_whole() {
            return Ok(());
        }
        let n = self.count;
        let cap = self.share(plan.max_requests);
        if cap == 0 {
            return Err(format!(
                "--segment {self}: a request cap of {} cannot be split {n} ways; raise --max-requests to at least {n}",
                plan.max_requests
            ));
        }
        plan.max_requests = cap;
        match &mut plan.shape {
            LoadShape::Closed { users, hatch_rate } => {
                let mine = self.share(*users as u64) as usize;
                if mine == 0 {
                    return Err(format!(
                        "--segment {self}: {users} users split {n} ways leave this segment none; \
                         use at most {users} segments, or more users"
                    ));
                }
                // Same launch length as the whole: the windows line up.
                *hatch_rate = *hatch_rate * mine as f64 / *users as f64;
                *users = mine;
            }
            LoadShape::Staged {
                model: Model::Closed,
                stages,
            } => {
                let mine: Vec<Stage> = stages
                    .iter()
                    .map(|s| Stage {
                        duration: s.duration,
                        target: self.share(s.target.max(0.0).round() as u64) as f64,
                    })
                    .collect();
                if mine.iter().all(|s| s.target <= 0.0) {
                    return Err(format!(
                        "--segment {self}: the stages' users split {n} ways leave this segment none; \
                         use fewer segments, or more users"
                    ));
                }
                *stages = mine;
            }
            // The open model keeps the whole schedule and takes every N-th
            // arrival of it (open.rs).
            LoadShape::Open { .. } | LoadShape::Staged { .. } => {}
        }
        Ok(())
    }

    /// This segment's share in words, for the report's settings.
    pub fn describe(&self, plan: &Plan) -> String {
        match plan.shape.model() {
            Model::Open => format!(
                "segment {self}: every {}th arrival of the whole schedule from arrival {} \
                 (1/{} of its rate, {} round trips/s at its peak)",
                self.count,
                self.index,
                self.count,
                fmt_rate(plan.shape.peak() / f64::from(self.count.max(1)))
            ),
            Model::Closed => format!("segment {self}: {}", plan.shape.describe()),
        }
    }
}

fn fmt_rate(r: f64) -> String {
    let s = format!("{r:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Adds the segment and start-at lines to a run's settings. `whole_users`
/// is the whole run's user count (closed model), for the users' range.
pub fn settings(
    plan: &Plan,
    whole_users: Option<u64>,
    start_at: Option<SystemTime>,
    late: Option<Duration>,
    out: &mut std::collections::BTreeMap<String, String>,
) {
    if !plan.segment.is_whole() {
        out.insert("segment".into(), plan.segment.to_string());
        out.insert("segment share".into(), plan.segment.describe(plan));
        if let Some(u) = whole_users {
            let r = plan.segment.range(u);
            out.insert(
                "segment users".into(),
                format!("users {} to {} of the whole run's {u}", r.start, r.end - 1),
            );
        }
    }
    if let Some(t) = start_at {
        let late = late
            .filter(|l| *l > Duration::from_millis(100))
            .map(|l| format!(" (started {:.1} s late)", l.as_secs_f64()))
            .unwrap_or_default();
        out.insert(
            "start at".into(),
            format!("{}{late}", humantime::format_rfc3339_millis(t)),
        );
    }
}

/// Parses `--start-at`: an RFC 3339 UTC time (`2026-12-02T03:10:00Z`) or
/// `+DURATION` from `now` (`+10s`). Refuses one more than [`START_GRACE`]
/// before `now` or more than [`MAX_AHEAD`] after it.
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    let t = text.trim();
    let at = if let Some(rel) = t.strip_prefix('+') {
        let d = humantime::parse_duration(rel.trim()).map_err(|e| {
            format!("--start-at {t:?}: {rel:?} is not a duration ({e}); use e.g. +10s or +2m")
        })?;
        now + d
    } else {
        humantime::parse_rfc3339_weak(t.trim_end_matches('Z'))
            .ok()
            .filter(|_| t.ends_with('Z'))
            .ok_or_else(|| {
                format!(
                    "--start-at {t:?}: expected an RFC 3339 UTC time such as 2026-12-02T03:10:00Z \
                     (ending in Z), or +DURATION from now such as +10s"
                )
            })?
    };
    if let Ok(ago) = now.duration_since(at)
        && ago > START_GRACE
    {
        return Err(format!(
            "--start-at {t}: that was {:.0} s ago (now is {}); give a time in the future",
            ago.as_secs_f64(),
            humantime::format_rfc3339_seconds(now)
        ));
    }
    if let Ok(ahead) = at.duration_since(now)
        && ahead > MAX_AHEAD
    {
        return Err(format!(
            "--start-at {t}: that is {} from now, more than 24 h ahead; check the date",
            humantime::format_duration(Duration::from_secs(ahead.as_secs()))
        ));
    }
    Ok(at)
}

/// Waits until `at` (wall clock), with a progress line on stderr when
/// `progress`; returns how late the start is (zero when on time).
pub async fn wait_until(at: SystemTime, progress: bool, label: &str) -> Duration {
    let mut line = ProgressLine::new(true);
    loop {
        let now = SystemTime::now();
        let Ok(left) = at.duration_since(now) else {
            break;
        };
        if left.is_zero() {
            break;
        }
        if progress && line.due() {
            line.print(&format!(
                "{label} waiting for the synchronized start at {} ({:.1} s)",
                humantime::format_rfc3339_millis(at),
                left.as_secs_f64()
            ));
        }
        // Short sleeps near the end: the wall clock, not a monotonic
        // deadline, is what the other processes share.
        tokio::time::sleep(left.min(Duration::from_millis(200))).await;
    }
    line.finish();
    SystemTime::now().duration_since(at).unwrap_or_default()
}

/// How serious a note about merged segments is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    /// The logs may not add up to one whole run.
    Warning,
    /// Worth knowing (a segment missing).
    Note,
}

/// What `report merge` says about the segments of the logs it merges
/// (`(name, segment recorded in its header)`): logs of different N,
/// segment indices given twice, and segments of N not all present.
pub fn merge_notes(logs: &[(String, Option<Segment>)]) -> Vec<(NoteLevel, String)> {
    let mut out = Vec::new();
    let segs: Vec<(&str, Segment)> = logs
        .iter()
        .filter_map(|(n, s)| s.map(|s| (n.as_str(), s)))
        .filter(|(_, s)| !s.is_whole())
        .collect();
    if segs.is_empty() {
        return out;
    }
    let plain: Vec<&str> = logs
        .iter()
        .filter(|(_, s)| s.is_none_or(|s| s.is_whole()))
        .map(|(n, _)| n.as_str())
        .collect();
    if !plain.is_empty() {
        out.push((
            NoteLevel::Warning,
            format!(
                "{} not a segment of a split run but merged with segments: the result is not one whole run",
                plain.join(", ")
            ),
        ));
    }
    let mut counts: Vec<u32> = segs.iter().map(|(_, s)| s.count).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() > 1 {
        let list: Vec<String> = segs.iter().map(|(n, s)| format!("{n} ({s})")).collect();
        out.push((
            NoteLevel::Warning,
            format!(
                "the logs are segments of different splits (N = {}): {}; they are not parts of one run",
                counts
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                list.join(", ")
            ),
        ));
    }
    for &n in &counts {
        let of_n: Vec<&(&str, Segment)> = segs.iter().filter(|(_, s)| s.count == n).collect();
        for i in 1..=n {
            let with: Vec<&str> = of_n
                .iter()
                .filter(|(_, s)| s.index == i)
                .map(|(name, _)| *name)
                .collect();
            if with.len() > 1 {
                out.push((
                    NoteLevel::Warning,
                    format!(
                        "segment {i}/{n} appears {} times ({}): the same share was run twice, so \
                         the merged counts exceed the whole run's",
                        with.len(),
                        with.join(", ")
                    ),
                ));
            }
        }
        let missing: Vec<String> = (1..=n)
            .filter(|i| !of_n.iter().any(|(_, s)| s.index == *i))
            .map(|i| format!("{i}/{n}"))
            .collect();
        if !missing.is_empty() {
            out.push((
                NoteLevel::Note,
                format!(
                    "not all segments of {n} are present: missing {}; the merged results cover \
                     only part of the whole run",
                    missing.join(", ")
                ),
            ));
        }
    }
    out
}

/// One line on which segments were merged, for the merged report's settings.
pub fn merged_segments(logs: &[(String, Option<Segment>)]) -> Option<String> {
    let mut segs: Vec<Segment> = logs
        .iter()
        .filter_map(|(_, s)| *s)
        .filter(|s| !s.is_whole())
        .collect();
    if segs.is_empty() {
        return None;
    }
    segs.sort_by_key(|s| (s.count, s.index));
    Some(
        segs.iter()
            .map(Segment::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::plan::parse_plan;

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
            let e = Segment::parse(bad).unwrap_err();
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
    fn a_closed_plan_splits_users_cap_and_stages() {
        let text =
            "max_requests = 1000\n[load]\nusers = 10\nhatch_rate = 5\n[scenarios.form-accept]\n";
        let whole = parse_plan(text, "p.toml", "p").unwrap();
        let mut users = 0;
        let mut cap = 0;
        for i in 1..=3 {
            let mut p = whole.clone();
            seg(i, 3).apply(&mut p).unwrap();
            assert_eq!(p.segment, seg(i, 3));
            let LoadShape::Closed {
                users: u,
                hatch_rate,
            } = p.shape
            else {
                panic!("closed")
            };
            // The launch lasts as long as the whole's (2 s): windows line up.
            assert!((u as f64 / hatch_rate - 2.0).abs() < 1e-9);
            assert_eq!(p.timeline().lead, whole.timeline().lead);
            users += u;
            cap += p.max_requests;
        }
        assert_eq!((users, cap), (10, 1000));
        // 10 over 11: round(10·6/11) = round(10·5/11) = 5, so 6/11 gets none.
        let e = seg(6, 11).apply(&mut whole.clone()).unwrap_err();
        assert!(e.contains("leave this segment none"), "{e}");

        let mut staged = whole.clone();
        staged.shape = LoadShape::Staged {
            model: Model::Closed,
            stages: crate::load::shape::parse_stages("2s:5,3s:7,1s:0").unwrap(),
        };
        let mut sums = [0.0; 3];
        for i in 1..=2 {
            let mut p = staged.clone();
            seg(i, 2).apply(&mut p).unwrap();
            let LoadShape::Staged { stages, .. } = &p.shape else {
                panic!("staged")
            };
            for (s, st) in sums.iter_mut().zip(stages) {
                *s += st.target;
            }
        }
        assert_eq!(sums, [5.0, 7.0, 0.0]);
    }

    #[test]
    fn an_open_plan_keeps_the_whole_schedule() {
        let text = "max_requests = 7\n[load]\nrate = 60\n[scenarios.form-accept]\n";
        let whole = parse_plan(text, "p.toml", "p").unwrap();
        let mut p = whole.clone();
        seg(2, 3).apply(&mut p).unwrap();
        assert_eq!(p.shape, whole.shape);
        assert_eq!(p.max_requests, 3, "7 over 3 is 2, 3, 2");
        assert!(p.segment.describe(&p).contains("20 round trips/s"));
        // 7 over 8: round(7·5/8) = round(7·4/8) = 4, so 5/8 gets none.
        let e = seg(5, 8).apply(&mut whole.clone()).unwrap_err();
        assert!(e.contains("raise --max-requests to at least 8"), "{e}");
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
            let e = parse_start_at(bad, now).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_segment_is_read_back_from_a_log_header() {
        let at = humantime::parse_rfc3339("2026-12-02T03:10:00Z").unwrap();
        let c = seg(2, 3).hlog_comment(Some(at));
        assert_eq!(
            c,
            "segment 2/3 (elicitkit load --segment), start-at 2026-12-02T03:10:00.000Z"
        );
        let buf =
            crate::load::hlog::HlogBuffer::new(SystemTime::now(), &["a run".into(), c]).unwrap();
        assert_eq!(Segment::from_hlog(buf.as_bytes()), Some(seg(2, 3)));
        let plain = crate::load::hlog::HlogBuffer::new(SystemTime::now(), &[]).unwrap();
        assert_eq!(Segment::from_hlog(plain.as_bytes()), None);
    }

    #[test]
    fn merge_notes_catch_mixed_splits_twins_and_gaps() {
        let l = |n: &str, s: Option<Segment>| (n.to_string(), s);
        let full = [
            l("a", Some(seg(1, 3))),
            l("b", Some(seg(2, 3))),
            l("c", Some(seg(3, 3))),
        ];
        assert!(merge_notes(&full).is_empty());
        assert_eq!(merged_segments(&full).as_deref(), Some("1/3, 2/3, 3/3"));
        assert!(merge_notes(&[l("a", None), l("b", None)]).is_empty());

        let gap = merge_notes(&[l("a", Some(seg(1, 3))), l("c", Some(seg(3, 3)))]);
        assert_eq!(gap.len(), 1, "{gap:?}");
        assert_eq!(gap[0].0, NoteLevel::Note);
        assert!(gap[0].1.contains("missing 2/3"), "{gap:?}");

        let twice = merge_notes(&[
            l("a", Some(seg(1, 2))),
            l("b", Some(seg(1, 2))),
            l("c", Some(seg(2, 2))),
        ]);
        assert_eq!(twice.len(), 1, "{twice:?}");
        assert_eq!(twice[0].0, NoteLevel::Warning);
        assert!(twice[0].1.contains("segment 1/2 appears 2 times (a, b)"));

        let mixed = merge_notes(&[
            l("a", Some(seg(1, 2))),
            l("b", Some(seg(2, 3))),
            l("p", None),
        ]);
        let text: Vec<&str> = mixed.iter().map(|(_, t)| t.as_str()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("different splits (N = 2, 3)"))
        );
        assert!(text.iter().any(|t| t.starts_with("p not a segment")));
        assert!(text.iter().any(|t| t.contains("missing 2/2")));
        assert!(text.iter().any(|t| t.contains("missing 1/3, 3/3")));
    }
}
