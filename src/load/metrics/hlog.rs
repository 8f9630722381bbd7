//! HDR interval logs (`.hlog`): one tagged histogram per metric per interval,
//! in the standard HdrHistogram log format (V2 + deflate, base64), so runs
//! from several processes or machines merge exactly (`elicitkit report
//! merge`).
//!
//! Values are microseconds. Tags (spaces and commas percent-escaped):
//! `leg:<leg name>` (each HTTP exchange, full body time), `e2e:<scenario>`
//! (every round trip; its count is the round-trip count), `out:<scenario>:<label>`
//! (round trips by outcome label: `success`, `expected_rejection`, `skipped`
//! or an error class; value = end-to-end time), `state:<leg name>` (the
//! target's `Server-Timing` `state` duration), `gap:<leg name>`, and per
//! instance (see [`super::instances`]): `inst:<instance>` (every leg it
//! answered), `insterr:<instance>` (the failed ones among them) and
//! `retry:crossed|same|unjudged` (each state retry, by whether another
//! instance answered it than the one that issued the state). Every log
//! starts with a `#[StartTime: <unix seconds>]` header; interval timestamps
//! are relative to it.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;

/// Tag prefix of per-leg histograms.
pub const LEG: &str = "leg:";
/// Tag prefix of per-scenario end-to-end histograms.
pub const E2E: &str = "e2e:";
/// Closed model: end-to-end times backfilled for the round trips a
/// stalled user would have started (`co:<scenario>`; see
/// [`super::cadence`]).
pub const CO: &str = "co:";
/// Tag prefix of per-scenario, per-outcome histograms.
pub const OUT: &str = "out:";
/// Tag prefix of server-reported state verification time.
pub const STATE: &str = "state:";
/// Tag prefix of per-leg transfer gaps: the longer of headers → first body
/// byte and first byte → end of body (Nagle + delayed-ACK stalls show here).
pub const GAP: &str = "gap:";
/// Tag prefix of every leg one instance answered (value: full body time).
pub const INST: &str = "inst:";
/// Tag prefix of the legs that failed on one instance.
pub const INST_ERR: &str = "insterr:";
/// Tag prefix of state retries by verdict: [`RETRY_CROSSED`],
/// [`RETRY_SAME`] or [`RETRY_UNJUDGED`] (value: the retry leg's time).
pub const RETRY: &str = "retry:";
/// A retry answered by another instance than the one that issued its state.
pub const RETRY_CROSSED: &str = "crossed";
/// A retry answered by the instance that issued its state.
pub const RETRY_SAME: &str = "same";
/// A retry where either instance is unknown (or in the `(other)` bucket).
pub const RETRY_UNJUDGED: &str = "unjudged";

/// A fresh auto-resizing histogram (3 significant digits, microseconds).
pub fn new_histogram() -> Histogram<u64> {
    // 3 significant figures is always a valid precision.
    Histogram::new(3).unwrap_or_else(|_| unreachable!("sigfig 3 is valid"))
}

/// Why a log cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    /// The file is not an interval log.
    #[error("{path}: not an HDR interval log (parse error at byte {offset})")]
    Parse {
        /// The file.
        path: String,
        /// Where parsing failed.
        offset: usize,
    },
    /// A histogram inside does not decode.
    #[error("{path}: interval {index} does not decode: {why}")]
    Histogram {
        /// The file.
        path: String,
        /// Which interval (0-based).
        index: usize,
        /// Why.
        why: String,
    },
    /// The log has no `StartTime` header, so it cannot be aligned with others.
    #[error("{path}: no #[StartTime] header; cannot align it with other logs")]
    NoStartTime {
        /// The file.
        path: String,
    },
    /// Encoding a histogram failed.
    #[error("cannot encode interval histogram: {0}")]
    Encode(String),
}

/// Escapes a metric name into a valid tag (no space, comma, CR or LF).
pub fn escape_tag(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            ',' => out.push_str("%2C"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            c => out.push(c),
        }
    }
    out
}

/// Reverses [`escape_tag`] (unknown escapes are kept as written).
pub fn unescape_tag(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    let mut rest = tag;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3);
        let decoded = match code {
            Some("25") => Some('%'),
            Some("20") => Some(' '),
            Some("2C") => Some(','),
            Some("0A") => Some('\n'),
            Some("0D") => Some('\r'),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// An interval log being written: header first, then intervals appended.
pub struct HlogBuffer {
    text: Vec<u8>,
    serializer: V2DeflateSerializer,
}

impl std::fmt::Debug for HlogBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HlogBuffer")
            .field("bytes", &self.text.len())
            .finish()
    }
}

impl HlogBuffer {
    /// Starts a log whose intervals are relative to `start`.
    pub fn new(start: SystemTime, comments: &[String]) -> Result<Self, HlogError> {
        let mut text = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let mut builder = IntervalLogWriterBuilder::new();
        for c in comments {
            builder.add_comment(c);
        }
        builder.add_comment(
            "values in microseconds; tags: leg:, e2e:, out:, state:, gap:, inst:, insterr:, retry: (see elicitkit load docs)",
        );
        builder.with_start_time(start);
        builder
            .begin_log_with(&mut text, &mut serializer)
            .map_err(|e| HlogError::Encode(e.to_string()))?;
        Ok(HlogBuffer { text, serializer })
    }

    /// Appends one tagged histogram for the interval `[offset, offset+len)`.
    pub fn push(
        &mut self,
        name: &str,
        hist: &Histogram<u64>,
        offset: Duration,
        len: Duration,
    ) -> Result<(), HlogError> {
        let tag = escape_tag(name);
        let mut writer = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.text, &mut self.serializer)
            .map_err(|e| HlogError::Encode(e.to_string()))?;
        writer
            .write_histogram(hist, offset, len, Tag::new(&tag))
            .map_err(|e| HlogError::Encode(e.to_string()))
    }

    /// The log so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.text
    }
}

/// One interval read from a log, aligned to absolute time.
#[derive(Debug, Clone)]
pub struct LoggedInterval {
    /// Unescaped tag (metric name), empty when untagged.
    pub name: String,
    /// Start, seconds since the Unix epoch.
    pub start_unix: f64,
    /// Interval length.
    pub len: Duration,
    /// The histogram.
    pub hist: Histogram<u64>,
}

/// Reads every interval of a log held in memory (`label` names it in errors).
pub fn read_bytes(bytes: &[u8], label: &str) -> Result<Vec<LoggedInterval>, HlogError> {
    let mut start: Option<f64> = None;
    let mut base: Option<f64> = None;
    let mut out = Vec::new();
    let mut deserializer = Deserializer::new();
    for (index, entry) in IntervalLogIterator::new(bytes).enumerate() {
        match entry {
            Err(hdrhistogram::serialization::interval_log::LogIteratorError::ParseError {
                offset,
            }) => {
                return Err(HlogError::Parse {
                    path: label.to_owned(),
                    offset,
                });
            }
            Ok(LogEntry::StartTime(t)) => start = Some(t.as_secs_f64()),
            Ok(LogEntry::BaseTime(t)) => base = Some(t.as_secs_f64()),
            Ok(LogEntry::Interval(iv)) => {
                let decode_err = |why: String| HlogError::Histogram {
                    path: label.to_owned(),
                    index,
                    why,
                };
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(iv.encoded_histogram())
                    .map_err(|e| decode_err(format!("base64: {e}")))?;
                let hist: Histogram<u64> = deserializer
                    .deserialize(&mut raw.as_slice())
                    .map_err(|e| decode_err(format!("{e:?}")))?;
                let rel = iv.start_timestamp().as_secs_f64();
                let start_unix = match (base, start) {
                    (Some(b), _) => b + rel,
                    (None, Some(s)) if rel < s => s + rel,
                    (None, Some(_)) => rel,
                    (None, None) => {
                        return Err(HlogError::NoStartTime {
                            path: label.to_owned(),
                        });
                    }
                };
                out.push(LoggedInterval {
                    name: iv
                        .tag()
                        .map(|t| unescape_tag(t.as_str()))
                        .unwrap_or_default(),
                    start_unix,
                    len: iv.duration(),
                    hist,
                });
            }
        }
    }
    Ok(out)
}

/// Start of the earliest interval (Unix seconds), if any.
pub fn earliest(intervals: &[LoggedInterval]) -> Option<f64> {
    intervals
        .iter()
        .map(|i| i.start_unix)
        .min_by(|a, b| a.total_cmp(b))
}

/// Sums intervals per name (an exact merge: HDR histograms add losslessly).
pub fn totals(intervals: &[LoggedInterval]) -> BTreeMap<String, Histogram<u64>> {
    let mut out: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for iv in intervals {
        let entry = out.entry(iv.name.clone()).or_insert_with(new_histogram);
        // Auto-resizing histograms accept any value range.
        let _ = entry.add(&iv.hist);
    }
    out
}

/// Seconds since the Unix epoch of a time (0 before 1970).
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::segment::Segment;

    #[test]
    fn tags_round_trip() {
        for name in [
            "leg:tools/call #2 retry",
            "out:a,b:success",
            "x%20y",
            "%",
            "%zz",
        ] {
            let t = escape_tag(name);
            assert!(Tag::new(&t).is_some(), "{t}");
            assert_eq!(unescape_tag(&t), name);
        }
    }

    #[test]
    fn a_written_log_reads_back_exactly() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut log = HlogBuffer::new(start, &["run test".into()]).unwrap();
        let mut a = new_histogram();
        let mut b = new_histogram();
        for v in [100u64, 200, 300, 40_000] {
            a.record(v).unwrap();
        }
        b.record(7).unwrap();
        log.push(
            "leg:tools/call #1",
            &a,
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
        log.push(
            "leg:tools/call #1",
            &b,
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap();
        log.push(
            "e2e:form-accept",
            &b,
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap();
        let ivs = read_bytes(log.as_bytes(), "mem").unwrap();
        assert_eq!(ivs.len(), 3);
        assert_eq!(ivs[0].name, "leg:tools/call #1");
        assert!((ivs[1].start_unix - 1_700_000_001.0).abs() < 1e-3);
        let t = totals(&ivs);
        let leg = &t["leg:tools/call #1"];
        assert_eq!(leg.len(), 5);
        assert_eq!(leg.max(), a.max());
        assert_eq!(t["e2e:form-accept"].len(), 1);
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let e = read_bytes(b"hello, world\n", "bad.hlog").unwrap_err();
        assert!(
            matches!(e, HlogError::Parse { .. } | HlogError::Histogram { .. }),
            "{e}"
        );
        let e = read_bytes(b"0.000,1.000,1.0,AAAA\n", "nostart.hlog").unwrap_err();
        assert!(e.to_string().contains("nostart.hlog"), "{e}");
    }

    fn seg(i: u32, n: u32) -> Segment {
        Segment::new(i, n).unwrap()
    }

    #[test]
    fn the_segment_is_read_back_from_a_log_header() {
        let at = humantime::parse_rfc3339("2026-12-02T03:10:00Z").unwrap();
        let c = seg(2, 3).hlog_comment(Some(at));
        assert_eq!(
            c,
            "segment 2/3 (elicitkit load --segment), start-at 2026-12-02T03:10:00.000Z"
        );
        let buf = HlogBuffer::new(SystemTime::now(), &["a run".into(), c]).unwrap();
        assert_eq!(Segment::from_hlog(buf.as_bytes()), Some(seg(2, 3)));
        let plain = HlogBuffer::new(SystemTime::now(), &[]).unwrap();
        assert_eq!(Segment::from_hlog(plain.as_bytes()), None);
    }
}
