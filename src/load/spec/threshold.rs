//! Pass/fail thresholds of a plan: `"p99(retry) < 50ms"`, `"p50(e2e) < 10ms"`,
//! `"avg(first) < 5ms"`, `"error_rate < 0.1%"`, `"rps > 100"`,
//! `"ok(form-accept) > 0"`, `"skipped_rate(tamper) < 50%"`, `"misrouted < 1"`,
//! `"frozen_time < 20%"`.
//!
//! Latency functions, as k6 names them: `pNN` (any percentile, `p95`,
//! `p99.9`), `med`, `avg`, `min`, `max`. Latency selectors: `first` (the
//! `tools/call #1` leg), `retry` (every `tools/call #n retry` leg), `e2e`
//! (whole round trips; in the closed model corrected for coordinated
//! omission, see [`crate::load::metrics::cadence`]), or an exact leg name
//! such as `flow page GET` ([`KNOWN_LEGS`]). Units: `us`, `ms`, `s`. Rates
//! take `%` or a plain fraction. `ok(S)` counts the round trips of scenario
//! `S` that went the expected way; `skipped_rate(S)` is the share of its
//! attempts that could not apply their policy. Comparisons: `<`, `<=`,
//! `>`, `>=`. [`Threshold::validate`] rejects names that match nothing.
//!
//! A threshold may end the run as soon as it fails, as k6's `abortOnFail`:
//! `"p99(e2e) < 50ms; abort_on_fail"`, or after a delay into the measured
//! window (k6's `delayAbortEval`): `"p99(e2e) < 50ms; abort_on_fail;
//! delay_abort_eval=10s"` (in a plan, also a table: `{ threshold = "…",
//! abort_on_fail = true, delay_abort_eval = "10s" }`).

use serde::Serialize;
use std::fmt;

/// What a threshold measures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Metric {
    /// A latency statistic of the selected legs, in milliseconds.
    Latency {
        /// Which statistic (a percentile, the mean, the extremes).
        stat: Stat,
        /// Which legs.
        selector: LegSelector,
    },
    /// Unexpected round trips over all round trips (a fraction, 0–1;
    /// skipped attempts are not round trips).
    ErrorRate,
    /// Completed round trips per second.
    Rps,
    /// Round trips of one scenario that went the expected way (success or
    /// expected rejection).
    Ok(String),
    /// Skipped attempts of one scenario over all its attempts (0–1).
    SkippedRate(String),
    /// Round trips that got a reply meant for another round trip (a count;
    /// see [`crate::client::marker`]).
    Misrouted,
    /// Service gaps: spells with round trips in flight and none answered,
    /// long against the run's own pace (a count; see
    /// [`crate::load::metrics::gaps`]).
    ServiceGaps,
    /// The share of the measured window the target was frozen: quiet
    /// spells of any length from 200 ms (and 5× the median round trip),
    /// less the time the generator itself was paused (a fraction, 0–1; see
    /// [`crate::load::metrics::gaps::frozen`]).
    FrozenTime,
}

/// Which statistic of a latency histogram a threshold reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// A percentile (0–100]: `p99`, `p99.9`; `med` is the 50th.
    Percentile(f64),
    /// The mean (`avg`).
    Mean,
    /// The smallest value (`min`).
    Min,
    /// The largest value (`max`).
    Max,
}

impl Stat {
    /// Reads the statistic off a microsecond histogram, in microseconds
    /// (`None` when it is empty).
    pub fn of(self, h: &hdrhistogram::Histogram<u64>) -> Option<f64> {
        if h.is_empty() {
            return None;
        }
        Some(match self {
            Stat::Percentile(p) => h.value_at_percentile(p) as f64,
            Stat::Mean => h.mean(),
            Stat::Min => h.min() as f64,
            Stat::Max => h.max() as f64,
        })
    }

    /// The percentile a chart puts the statistic nearest (the mean and
    /// the median at 50, the minimum at 0, the maximum at 100).
    pub fn percentile(self) -> f64 {
        match self {
            Stat::Percentile(p) => p,
            Stat::Mean => 50.0,
            Stat::Min => 0.0,
            Stat::Max => 100.0,
        }
    }
}

/// The phases of a leg, in the order it goes through them (the names
/// thresholds and reports use: `p99(tools/call #1.first_event)`; measured
/// by [`crate::load::metrics::phases`]).
pub const PHASES: [&str; 5] = ["connect", "tls", "headers", "first_event", "body"];

/// Which legs a latency threshold reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LegSelector {
    /// `tools/call #1`.
    First,
    /// Every `tools/call #n retry` leg.
    Retry,
    /// Whole round trips (end to end).
    E2e,
    /// One leg, by its exact name.
    Leg(String),
    /// One phase of the legs `of` selects (`first.connect`,
    /// `tools/call #1.first_event`; see [`crate::load::metrics::phases`]).
    Phase {
        /// The legs.
        of: Box<LegSelector>,
        /// `connect`, `tls`, `headers`, `first_event` or `body`.
        phase: String,
    },
}

impl LegSelector {
    /// Whether a leg name belongs to this selector (`E2e` matches no leg).
    pub fn matches_leg(&self, leg: &str) -> bool {
        match self {
            LegSelector::First => leg == "tools/call #1",
            LegSelector::Retry => is_retry_leg(leg),
            LegSelector::E2e | LegSelector::Phase { .. } => false,
            LegSelector::Leg(name) => name == leg,
        }
    }

    /// The selector `text` names: `first`, `retry`, `e2e`, a leg's name,
    /// or either of the first two or a leg's name with `.PHASE` after it.
    fn parse(text: &str) -> Result<LegSelector, String> {
        if let Some((of, phase)) = text.rsplit_once('.')
            && PHASES.contains(&phase)
        {
            let of = LegSelector::parse(of)?;
            if matches!(of, LegSelector::E2e | LegSelector::Phase { .. }) {
                return Err(format!(
                    "{phase} is a phase of a leg (first, retry or a leg's name), not of {of:?}"
                ));
            }
            return Ok(LegSelector::Phase {
                of: Box::new(of),
                phase: phase.to_owned(),
            });
        }
        Ok(match text {
            "" => return Err("empty selector".into()),
            "first" => LegSelector::First,
            "retry" => LegSelector::Retry,
            "e2e" => LegSelector::E2e,
            other => LegSelector::Leg(other.to_owned()),
        })
    }

    /// How the selector is written.
    pub fn text(&self) -> String {
        match self {
            LegSelector::E2e => "e2e".to_owned(),
            LegSelector::First => "first".to_owned(),
            LegSelector::Retry => "retry".to_owned(),
            LegSelector::Leg(n) => n.clone(),
            LegSelector::Phase { of, phase } => format!("{}.{phase}", of.text()),
        }
    }
}

/// True for `tools/call #<n> retry`.
pub fn is_retry_leg(leg: &str) -> bool {
    leg.strip_prefix("tools/call #")
        .and_then(|rest| rest.strip_suffix(" retry"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cmp {
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
}

impl Cmp {
    /// Applies the comparison `actual OP limit`.
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Cmp::Lt => actual < limit,
            Cmp::Le => actual <= limit,
            Cmp::Gt => actual > limit,
            Cmp::Ge => actual >= limit,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// One parsed threshold. `limit` is in milliseconds for latencies, a
/// fraction for `error_rate`, round trips per second for `rps`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Threshold {
    /// The expression (without its modifiers).
    pub expr: String,
    /// What is measured.
    pub metric: Metric,
    /// How it is compared.
    pub cmp: Cmp,
    /// The limit, normalised (ms, fraction, per second).
    pub limit: f64,
    /// `abort_on_fail`: the run ends as soon as the threshold fails, once
    /// this long into the measured window (`delay_abort_eval`; zero: from
    /// its start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort: Option<std::time::Duration>,
}

/// Why a threshold does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threshold {expr:?}: {why}")]
pub struct ThresholdError {
    /// The text.
    pub expr: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

impl Threshold {
    /// Parses one threshold with its modifiers: `EXPR[; abort_on_fail[;
    /// delay_abort_eval=DURATION]]`.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let mut parts = text.split(';');
        let mut t = Threshold::parse_expr(parts.next().unwrap_or(""))?;
        let err = |why: String| ThresholdError {
            expr: text.trim().to_owned(),
            why,
        };
        let (mut abort, mut delay) = (false, None);
        for m in parts.map(str::trim) {
            match m.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                None if m == "abort_on_fail" => abort = true,
                Some(("delay_abort_eval", v)) => {
                    delay = Some(humantime::parse_duration(v).map_err(|e| {
                        err(format!(
                            "delay_abort_eval={v:?} is not a duration ({e}); use e.g. 10s"
                        ))
                    })?)
                }
                _ => {
                    return Err(err(format!(
                        "unknown modifier {m:?}: use abort_on_fail and \
                         delay_abort_eval=DURATION, e.g. \"p99(e2e) < 50ms; abort_on_fail; \
                         delay_abort_eval=10s\""
                    )));
                }
            }
        }
        if delay.is_some() && !abort {
            return Err(err(
                "delay_abort_eval needs abort_on_fail (it delays the abort)".into(),
            ));
        }
        t.abort = abort.then(|| delay.unwrap_or_default());
        Ok(t)
    }

    /// Parses one threshold expression (no modifiers).
    pub fn parse_expr(expr: &str) -> Result<Threshold, ThresholdError> {
        let err = |why: &str| ThresholdError {
            expr: expr.trim().to_owned(),
            why: why.to_owned(),
        };
        let text = expr.trim();
        let (pos, cmp, op_len) = find_op(text).ok_or_else(|| {
            err("no comparison: expected one of <, <=, >, >= (e.g. \"p99(retry) < 50ms\")")
        })?;
        let lhs = text[..pos].trim();
        let rhs = text[pos + op_len..].trim();
        if rhs.is_empty() {
            return Err(err("no value after the comparison"));
        }
        let scenario_arg = |name: &str| {
            lhs.strip_prefix(name)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
                .map(|r| r.trim().to_owned())
                .filter(|r| !r.is_empty())
        };
        let (metric, limit) =
            match lhs {
                "error_rate" => (Metric::ErrorRate, parse_rate(rhs).map_err(|w| err(&w))?),
                "frozen_time" => (
                    Metric::FrozenTime,
                    parse_rate(rhs).map_err(|_| {
                        err("frozen_time needs a share of the window, e.g. \"frozen_time < 20%\"")
                    })?,
                ),
                "service_gaps" => {
                    let v: f64 = rhs.parse().map_err(|_| {
                        err("service_gaps needs a count, e.g. \"service_gaps < 1\"")
                    })?;
                    (Metric::ServiceGaps, finite_nonneg(v).map_err(|w| err(&w))?)
                }
                "misrouted" => {
                    let v: f64 = rhs
                        .parse()
                        .map_err(|_| err("misrouted needs a count, e.g. \"misrouted < 1\""))?;
                    (Metric::Misrouted, finite_nonneg(v).map_err(|w| err(&w))?)
                }
                _ if scenario_arg("ok").is_some() => {
                    let v: f64 = rhs
                        .parse()
                        .map_err(|_| err("ok(...) needs a count, e.g. \"ok(form-accept) > 0\""))?;
                    (
                        Metric::Ok(scenario_arg("ok").unwrap_or_default()),
                        finite_nonneg(v).map_err(|w| err(&w))?,
                    )
                }
                _ if scenario_arg("skipped_rate").is_some() => (
                    Metric::SkippedRate(scenario_arg("skipped_rate").unwrap_or_default()),
                    parse_rate(rhs).map_err(|w| err(&w))?,
                ),
                "rps" => {
                    let v: f64 = rhs
                        .trim_end_matches("/s")
                        .trim()
                        .parse()
                        .map_err(|_| err("rps needs a number, e.g. \"rps > 100\""))?;
                    (Metric::Rps, finite_nonneg(v).map_err(|w| err(&w))?)
                }
                _ if lhs.starts_with("ok(") || lhs.starts_with("skipped_rate(") => {
                    return Err(err("ok(...) and skipped_rate(...) need a scenario name"));
                }
                _ => {
                    let open = lhs.find('(').ok_or_else(|| {
                    err("unknown metric: use pNN(selector), med, avg, min, max, error_rate, rps, \
                         frozen_time or service_gaps")
                })?;
                    let close = lhs
                        .rfind(')')
                        .filter(|&c| c > open && c == lhs.len() - 1)
                        .ok_or_else(|| err("unclosed selector: expected e.g. p99(selector)"))?;
                    let stat = match lhs[..open].trim() {
                        "med" => Stat::Percentile(50.0),
                        "avg" => Stat::Mean,
                        "min" => Stat::Min,
                        "max" => Stat::Max,
                        f => {
                            let digits = f.strip_prefix('p').ok_or_else(|| {
                            err("unknown function: use pNN (e.g. p95, p99.9), med, avg, min or max")
                        })?;
                            let p: f64 = digits.parse().map_err(|_| {
                                err("bad percentile: expected e.g. p50, p95, p99.9")
                            })?;
                            if !(p > 0.0 && p <= 100.0) {
                                return Err(err("percentile must be in (0, 100]"));
                            }
                            Stat::Percentile(p)
                        }
                    };
                    let selector =
                        LegSelector::parse(lhs[open + 1..close].trim()).map_err(|w| err(&w))?;
                    let limit = parse_duration_ms(rhs).map_err(|w| err(&w))?;
                    (Metric::Latency { stat, selector }, limit)
                }
            };
        Ok(Threshold {
            expr: text.to_owned(),
            metric,
            cmp,
            limit,
            abort: None,
        })
    }

    /// What a reader may take otherwise: a rate written as a plain number
    /// of 0.01 or more is a fraction (`error_rate < 0.1` is 10 %), where
    /// `error_rate < 0.1%` is a tenth of a percent.
    pub fn ambiguity(&self) -> Option<String> {
        let rate = matches!(
            self.metric,
            Metric::ErrorRate | Metric::SkippedRate(_) | Metric::FrozenTime
        );
        (rate && !self.expr.contains('%') && self.limit >= 0.01).then(|| {
            format!(
                "threshold \"{}\": a plain number is a fraction, {}; write {}% for {} percent",
                self.expr,
                self.limit_text().trim_start_matches(['<', '>', '=', ' ']),
                self.limit,
                self.limit
            )
        })
    }

    /// Whether `actual` (in this threshold's unit) passes.
    pub fn passes(&self, actual: f64) -> bool {
        self.cmp.holds(actual, self.limit)
    }

    /// The limit with its unit, for reports (`50ms`, `0.1%`, `100/s`).
    pub fn limit_text(&self) -> String {
        match self.metric {
            Metric::Latency { .. } => format!("{} {}ms", self.cmp.as_str(), self.limit),
            Metric::ErrorRate | Metric::SkippedRate(_) | Metric::FrozenTime => {
                format!("{} {}%", self.cmp.as_str(), self.limit * 100.0)
            }
            Metric::Rps => format!("{} {}/s", self.cmp.as_str(), self.limit),
            Metric::Ok(_) | Metric::Misrouted | Metric::ServiceGaps => {
                format!("{} {}", self.cmp.as_str(), self.limit)
            }
        }
    }

    /// A measured value in this threshold's unit, for reports (`12.3ms`,
    /// `0.41%`, `950.0/s`, `120`).
    pub fn value_text(&self, v: f64) -> String {
        match self.metric {
            Metric::Latency { .. } => format!("{v:.3}ms"),
            Metric::ErrorRate | Metric::SkippedRate(_) | Metric::FrozenTime => {
                format!("{:.2}%", v * 100.0)
            }
            Metric::Rps => format!("{v:.1}/s"),
            // A count: never "-0" (a negated zero prints its sign).
            Metric::Ok(_) | Metric::Misrouted | Metric::ServiceGaps => {
                format!("{:.0}", if v == 0.0 { 0.0 } else { v })
            }
        }
    }

    /// Checks that every name it uses exists: a leg the client can record,
    /// a scenario of the plan. A misspelled name would otherwise fail the run
    /// silently (nothing measured) or, worse, never be checked.
    pub fn validate(&self, scenarios: &[&str]) -> Result<(), ThresholdError> {
        let err = |why: String| ThresholdError {
            expr: self.expr.clone(),
            why,
        };
        let scenario = |s: &str| {
            if scenarios.contains(&s) {
                Ok(())
            } else {
                Err(err(format!(
                    "the plan has no scenario {s:?} (scenarios: {})",
                    scenarios.join(", ")
                )))
            }
        };
        let leg = match &self.metric {
            Metric::Latency { selector, .. } => match selector {
                LegSelector::Phase { of, .. } => match of.as_ref() {
                    LegSelector::Leg(l) => Some(l),
                    _ => None,
                },
                LegSelector::Leg(l) => Some(l),
                _ => None,
            },
            _ => None,
        };
        match &self.metric {
            Metric::Latency { .. } if leg.is_some_and(|l| !is_known_leg(l)) => Err(err(format!(
                "no leg is named {:?}; use first, retry, e2e or one of: {} \
                 (a phase after a dot: {})",
                leg.map_or("", |l| l.as_str()),
                KNOWN_LEGS.join(", "),
                PHASES.join(", ")
            ))),
            Metric::Ok(s) | Metric::SkippedRate(s) => scenario(s),
            _ => Ok(()),
        }
    }
}

/// The legs a round trip can record (`tools/call #N retry` for any N).
pub const KNOWN_LEGS: [&str; 11] = [
    "tools/call #1",
    "tools/call #N retry",
    "tools/call replay",
    "flow page GET",
    "flow page POST",
    "tools/call (stream)",
    "elicitation answer POST",
    "GET stream",
    "initialize",
    "notifications/initialized",
    "session DELETE",
];

/// Whether `leg` is a name a round trip can record.
pub fn is_known_leg(leg: &str) -> bool {
    is_retry_leg(leg) || KNOWN_LEGS.iter().any(|k| *k == leg && !k.contains("#N"))
}

fn find_op(text: &str) -> Option<(usize, Cmp, usize)> {
    let pos = text.find(['<', '>'])?;
    let bytes = text.as_bytes();
    let eq = bytes.get(pos + 1) == Some(&b'=');
    let cmp = match (bytes[pos], eq) {
        (b'<', false) => Cmp::Lt,
        (b'<', true) => Cmp::Le,
        (b'>', false) => Cmp::Gt,
        _ => Cmp::Ge,
    };
    Some((pos, cmp, if eq { 2 } else { 1 }))
}

fn finite_nonneg(v: f64) -> Result<f64, String> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err("the value must be a finite number ≥ 0".into())
    }
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let (num, scale) = match text.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (text, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| "error_rate needs a number, e.g. 0.1% or 0.001".to_string())?;
    let v = finite_nonneg(v)? * scale;
    if v > 1.0 {
        return Err("error_rate cannot exceed 100%".into());
    }
    Ok(v)
}

/// Parses `50ms`, `250us`, `1.5s` into milliseconds.
fn parse_duration_ms(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (num, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("us").or_else(|| text.strip_suffix("µs")) {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return Err("a latency needs a unit: us, ms or s (e.g. 50ms)".into());
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad number {:?}", num.trim()))?;
    Ok(finite_nonneg(v)? * scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counts_print_without_a_sign_on_zero() {
        let t = Threshold::parse("ok(form-accept) > 0").unwrap();
        assert_eq!(t.value_text(-0.0), "0");
        assert_eq!(t.value_text(12.0), "12");
    }

    #[test]
    fn parses_the_documented_forms() {
        let t = Threshold::parse("p99(retry) < 50ms").unwrap();
        assert_eq!(
            t.metric,
            Metric::Latency {
                stat: Stat::Percentile(99.0),
                selector: LegSelector::Retry
            }
        );
        assert_eq!((t.cmp, t.limit), (Cmp::Lt, 50.0));
        let t = Threshold::parse("p99.9(e2e)<=1.5s").unwrap();
        assert_eq!(t.limit, 1500.0);
        assert_eq!(t.cmp, Cmp::Le);
        let t = Threshold::parse("p50(flow page GET) < 250us").unwrap();
        assert!(
            matches!(t.metric, Metric::Latency { selector: LegSelector::Leg(ref l), .. } if l == "flow page GET")
        );
        assert!((t.limit - 0.25).abs() < 1e-12);
        let t = Threshold::parse("error_rate < 0.1%").unwrap();
        assert_eq!(t.metric, Metric::ErrorRate);
        assert!((t.limit - 0.001).abs() < 1e-12);
        let t = Threshold::parse("rps >= 100").unwrap();
        assert_eq!(
            (t.metric.clone(), t.cmp, t.limit),
            (Metric::Rps, Cmp::Ge, 100.0)
        );
        assert!(t.passes(100.0) && !t.passes(99.9));
    }

    #[test]
    fn k6_functions_read_their_statistic() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for v in [1000, 2000, 3000, 4000, 10_000] {
            h.record(v).unwrap();
        }
        let read = |expr: &str| {
            let t = Threshold::parse(expr).unwrap();
            match t.metric {
                // To a tenth of a millisecond: HDR keeps 3 significant digits.
                Metric::Latency { stat, .. } => (stat.of(&h).unwrap() / 100.0).round() / 10.0,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(read("min(e2e) < 1s"), 1.0);
        assert_eq!(read("max(e2e) < 1s"), 10.0);
        assert_eq!(read("avg(e2e) < 1s"), 4.0);
        assert_eq!(read("med(e2e) < 1s"), 3.0);
        assert_eq!(read("p95(first) < 1s"), 10.0);
        assert_eq!(read("p80(retry) < 1s"), 4.0);
        assert!(
            Stat::Mean
                .of(&hdrhistogram::Histogram::<u64>::new(3).unwrap())
                .is_none()
        );
        let e = Threshold::parse("mean(e2e) < 1s").unwrap_err();
        assert!(e.why.contains("med, avg, min or max"), "{e}");
    }

    #[test]
    fn a_rate_written_as_a_plain_fraction_is_said_in_percent() {
        let t = Threshold::parse("error_rate < 0.1").unwrap();
        assert_eq!(
            t.ambiguity().as_deref(),
            Some(
                "threshold \"error_rate < 0.1\": a plain number is a fraction, 10%; write 0.1% for 0.1 percent"
            )
        );
        for plain in ["error_rate < 0.1%", "error_rate < 0.001", "p99(e2e) < 1ms"] {
            assert_eq!(
                Threshold::parse(plain).unwrap().ambiguity(),
                None,
                "{plain}"
            );
        }
    }

    #[test]
    fn abort_on_fail_and_its_delay_are_modifiers() {
        let t = Threshold::parse("p99(e2e) < 50ms").unwrap();
        assert_eq!(t.abort, None);
        let t = Threshold::parse("p99(e2e) < 50ms; abort_on_fail").unwrap();
        assert_eq!(
            (t.expr.as_str(), t.abort),
            ("p99(e2e) < 50ms", Some(Duration::ZERO))
        );
        let t = Threshold::parse("error_rate < 1% ;abort_on_fail; delay_abort_eval = 10s").unwrap();
        assert_eq!(t.abort, Some(Duration::from_secs(10)));
        for (bad, says) in [
            (
                "p99(e2e) < 50ms; delay_abort_eval=10s",
                "needs abort_on_fail",
            ),
            ("p99(e2e) < 50ms; abort", "unknown modifier \"abort\""),
            (
                "p99(e2e) < 50ms; abort_on_fail; delay_abort_eval=soon",
                "not a duration",
            ),
        ] {
            let e = Threshold::parse(bad).unwrap_err();
            assert!(e.why.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn rejects_bad_expressions_with_a_reason() {
        for bad in [
            "",
            "p99(retry)",
            "p99(retry) < 50",
            "p99 < 5ms",
            "p101(e2e) < 5ms",
            "p99() < 5ms",
            "latency < 5ms",
            "error_rate < 200%",
            "error_rate < x",
            "rps > -1",
            "p99(e2e) < ms",
            "p99(e2e < 5ms",
        ] {
            let e = Threshold::parse(bad).unwrap_err();
            assert!(!e.why.is_empty(), "{bad}");
        }
    }

    #[test]
    fn scenario_metrics_and_validation() {
        let t = Threshold::parse("ok(form-accept) > 0").unwrap();
        assert_eq!(t.metric, Metric::Ok("form-accept".into()));
        assert!(t.passes(1.0) && !t.passes(0.0));
        let t = Threshold::parse("skipped_rate(tamper) < 50%").unwrap();
        assert_eq!(t.metric, Metric::SkippedRate("tamper".into()));
        assert!((t.limit - 0.5).abs() < 1e-12);
        assert!(t.validate(&["tamper"]).is_ok());
        let e = t.validate(&["replay"]).unwrap_err().to_string();
        assert!(e.contains("no scenario \"tamper\""), "{e}");
        let t = Threshold::parse("p99(tools/call #2 retry) < 5ms").unwrap();
        assert!(t.validate(&[]).is_ok());
        let t = Threshold::parse("p99(flow page GTE) < 5ms").unwrap();
        assert!(
            t.validate(&[])
                .unwrap_err()
                .to_string()
                .contains("flow page GET")
        );
        assert!(Threshold::parse("ok() > 0").is_err());
        assert!(Threshold::parse("ok(x) > many").is_err());
    }

    #[test]
    fn a_phase_of_a_leg_is_a_latency_selector() {
        let t = Threshold::parse("p99(tools/call #1.first_event) < 50ms").unwrap();
        let Metric::Latency { selector, .. } = &t.metric else {
            panic!("{t:?}")
        };
        assert_eq!(
            *selector,
            LegSelector::Phase {
                of: Box::new(LegSelector::Leg("tools/call #1".into())),
                phase: "first_event".into()
            }
        );
        assert_eq!(selector.text(), "tools/call #1.first_event");
        assert!(t.validate(&[]).is_ok());
        let t = Threshold::parse("p95(retry.tls) < 5ms").unwrap();
        assert!(
            matches!(&t.metric, Metric::Latency { selector: LegSelector::Phase { of, .. }, .. } if **of == LegSelector::Retry)
        );
        let t = Threshold::parse("p99(tools/call #9.connect) < 5ms").unwrap();
        let e = t.validate(&[]).unwrap_err().to_string();
        assert!(
            e.contains("no leg is named \"tools/call #9\"") && e.contains("first_event"),
            "{e}"
        );
        assert!(
            Threshold::parse("p99(e2e.connect) < 5ms").is_err(),
            "e2e has no phases"
        );
        // A dot that names no phase is part of a leg's name.
        let t = Threshold::parse("p99(a.b) < 5ms").unwrap();
        assert!(
            matches!(&t.metric, Metric::Latency { selector: LegSelector::Leg(l), .. } if l == "a.b")
        );
    }

    #[test]
    fn selectors_match_the_right_legs() {
        assert!(LegSelector::First.matches_leg("tools/call #1"));
        assert!(!LegSelector::First.matches_leg("tools/call #2 retry"));
        assert!(LegSelector::Retry.matches_leg("tools/call #2 retry"));
        assert!(LegSelector::Retry.matches_leg("tools/call #13 retry"));
        assert!(!LegSelector::Retry.matches_leg("tools/call # retry"));
        assert!(!LegSelector::Retry.matches_leg("tools/call replay"));
        assert!(!LegSelector::E2e.matches_leg("tools/call #1"));
    }
}
