//! Pass/fail thresholds of a plan: `"p99(retry) < 50ms"`, `"p50(e2e) < 10ms"`,
//! `"error_rate < 0.1%"`, `"rps > 100"`, `"ok(form-accept) > 0"`,
//! `"skipped_rate(tamper) < 50%"`, `"misrouted < 1"`.
//!
//! Latency selectors: `first` (the `tools/call #1` leg), `retry` (every
//! `tools/call #n retry` leg), `e2e` (whole round trips), or an exact leg
//! name such as `flow page GET` ([`KNOWN_LEGS`]). Units: `us`, `ms`, `s`.
//! Rates take `%` or a plain fraction. `ok(S)` counts the round trips of
//! scenario `S` that went the expected way; `skipped_rate(S)` is the share of
//! its attempts that could not apply their policy. Comparisons: `<`, `<=`,
//! `>`, `>=`. [`Threshold::validate`] rejects names that match nothing.

use serde::Serialize;
use std::fmt;

/// What a threshold measures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Metric {
    /// A latency percentile (0–100) of the selected legs, in milliseconds.
    Latency {
        /// The percentile, e.g. 99.0.
        percentile: f64,
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
}

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
}

impl LegSelector {
    /// Whether a leg name belongs to this selector (`E2e` matches no leg).
    pub fn matches_leg(&self, leg: &str) -> bool {
        match self {
            LegSelector::First => leg == "tools/call #1",
            LegSelector::Retry => is_retry_leg(leg),
            LegSelector::E2e => false,
            LegSelector::Leg(name) => name == leg,
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
    /// The text as written in the plan.
    pub expr: String,
    /// What is measured.
    pub metric: Metric,
    /// How it is compared.
    pub cmp: Cmp,
    /// The limit, normalised (ms, fraction, per second).
    pub limit: f64,
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
    /// Parses one threshold expression.
    pub fn parse(expr: &str) -> Result<Threshold, ThresholdError> {
        let err = |why: &str| ThresholdError {
            expr: expr.to_owned(),
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
        let (metric, limit) = match lhs {
            "error_rate" => (Metric::ErrorRate, parse_rate(rhs).map_err(|w| err(&w))?),
            "service_gaps" => {
                let v: f64 = rhs
                    .parse()
                    .map_err(|_| err("service_gaps needs a count, e.g. \"service_gaps < 1\""))?;
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
                let rest = lhs
                    .strip_prefix('p')
                    .ok_or_else(|| err("unknown metric: use pNN(selector), error_rate or rps"))?;
                let open = rest
                    .find('(')
                    .ok_or_else(|| err("percentile needs a selector, e.g. p99(retry)"))?;
                let close = rest
                    .rfind(')')
                    .filter(|&c| c > open && c == rest.len() - 1)
                    .ok_or_else(|| err("unclosed selector: expected pNN(selector)"))?;
                let percentile: f64 = rest[..open]
                    .parse()
                    .map_err(|_| err("bad percentile: expected e.g. p50, p99, p99.9"))?;
                if !(percentile > 0.0 && percentile <= 100.0) {
                    return Err(err("percentile must be in (0, 100]"));
                }
                let selector = match rest[open + 1..close].trim() {
                    "" => return Err(err("empty selector")),
                    "first" => LegSelector::First,
                    "retry" => LegSelector::Retry,
                    "e2e" => LegSelector::E2e,
                    other => LegSelector::Leg(other.to_owned()),
                };
                let limit = parse_duration_ms(rhs).map_err(|w| err(&w))?;
                (
                    Metric::Latency {
                        percentile,
                        selector,
                    },
                    limit,
                )
            }
        };
        Ok(Threshold {
            expr: text.to_owned(),
            metric,
            cmp,
            limit,
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
            Metric::ErrorRate | Metric::SkippedRate(_) => {
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
            Metric::ErrorRate | Metric::SkippedRate(_) => format!("{:.2}%", v * 100.0),
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
    pub fn validate(&self, scenarios: &[&str]) -> Result<(), String> {
        let scenario = |s: &str| {
            if scenarios.contains(&s) {
                Ok(())
            } else {
                Err(format!(
                    "threshold {:?}: the plan has no scenario {s:?} (scenarios: {})",
                    self.expr,
                    scenarios.join(", ")
                ))
            }
        };
        match &self.metric {
            Metric::Latency {
                selector: LegSelector::Leg(l),
                ..
            } if !is_known_leg(l) => Err(format!(
                "threshold {:?}: no leg is named {l:?}; use first, retry, e2e or one of: {}",
                self.expr,
                KNOWN_LEGS.join(", ")
            )),
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
pub fn parse_duration_ms(text: &str) -> Result<f64, String> {
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
                percentile: 99.0,
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
        let e = t.validate(&["replay"]).unwrap_err();
        assert!(e.contains("no scenario \"tamper\""), "{e}");
        let t = Threshold::parse("p99(tools/call #2 retry) < 5ms").unwrap();
        assert!(t.validate(&[]).is_ok());
        let t = Threshold::parse("p99(flow page GTE) < 5ms").unwrap();
        assert!(t.validate(&[]).unwrap_err().contains("flow page GET"));
        assert!(Threshold::parse("ok() > 0").is_err());
        assert!(Threshold::parse("ok(x) > many").is_err());
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
