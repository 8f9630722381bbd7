//! The `instances` section as text, shared by the terminal, `summary.md`
//! and `report.html`: one line when a single instance answered, else a
//! table row per instance, and the retries that crossed instances.

use super::format::ms;
use super::summary::{InstancesSummary, Summary};

/// What to show of a run's instances.
#[derive(Debug, Clone, PartialEq)]
pub enum InstancesView {
    /// No leg has a known instance (a merged report, or only 2025-11-25
    /// sessions): nothing to show.
    None,
    /// One instance answered every attributed request: one line.
    One(String),
    /// Several: a heading line, and per instance `[instance, requests,
    /// share, errors, p50 ms, p99 ms, per leg]`.
    Table(String, Vec<[String; 7]>),
}

/// Column headings of [`InstancesView::Table`] rows.
pub const INSTANCE_COLUMNS: [&str; 7] = [
    "instance",
    "requests",
    "share",
    "errors",
    "p50 ms",
    "p99 ms",
    "per leg: requests (p99 ms)",
];

/// The retry and unattributed counts, as a sentence.
fn retry_text(i: &InstancesSummary) -> String {
    let mut t = if i.retries == 0 {
        "no retry with a known instance on both sides".to_owned()
    } else {
        format!(
            "{} of {} retries crossed instances ({:.1} %)",
            i.cross_instance_retries,
            i.retries,
            100.0 * i.cross_instance_retries as f64 / i.retries as f64
        )
    };
    if i.retries_unattributed > 0 {
        t.push_str(&format!(
            "; {} retries not judged (an instance unknown)",
            i.retries_unattributed
        ));
    }
    if i.unattributed_requests > 0 {
        t.push_str(&format!(
            "; {} requests without a known instance (no reply, or 2025-11-25 sessions)",
            i.unattributed_requests
        ));
    }
    if !i.targets.is_empty() {
        t.push_str(&format!(
            "; spread over {} targets: {}",
            i.targets.len(),
            i.targets.join(", ")
        ));
    }
    t
}

/// The view of `s.instances`.
pub fn instances_view(s: &Summary) -> InstancesView {
    let i = &s.instances;
    match i.answered_by.as_slice() {
        [] => InstancesView::None,
        [one] => InstancesView::One(format!(
            "one instance answered: {} ({} requests, p50 {} ms, p99 {} ms, {} errors); {}",
            one.instance,
            one.requests,
            ms(one.latency.p50_ms),
            ms(one.latency.p99_ms),
            one.errors,
            retry_text(i)
        )),
        many => {
            let total: u64 = many.iter().map(|x| x.requests).sum();
            let rows = many
                .iter()
                .map(|x| {
                    let mut legs: Vec<String> = x
                        .legs
                        .iter()
                        .map(|(name, l)| {
                            format!("{name}: {} ({})", l.requests, ms(l.latency.p99_ms))
                        })
                        .collect();
                    if legs.is_empty() {
                        legs.push("not in merged logs".into());
                    }
                    [
                        x.instance.clone(),
                        x.requests.to_string(),
                        format!("{:.1} %", 100.0 * x.requests as f64 / total.max(1) as f64),
                        x.errors.to_string(),
                        ms(x.latency.p50_ms),
                        ms(x.latency.p99_ms),
                        legs.join("; "),
                    ]
                })
                .collect();
            let head = format!(
                "{} instances answered {total} requests; {}",
                many.len(),
                retry_text(i)
            );
            InstancesView::Table(head, rows)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{InstanceLegSummary, InstanceSummary, LatencyStats};

    fn inst(name: &str, requests: u64) -> InstanceSummary {
        InstanceSummary {
            instance: name.into(),
            requests,
            errors: 0,
            latency: LatencyStats {
                count: requests,
                p50_ms: 1.0,
                p99_ms: 2.0,
                ..Default::default()
            },
            legs: [(
                "tools/call #1".to_owned(),
                InstanceLegSummary {
                    requests,
                    ..Default::default()
                },
            )]
            .into(),
        }
    }

    #[test]
    fn one_instance_is_one_line_and_several_a_table() {
        let mut s = Summary::default();
        assert_eq!(instances_view(&s), InstancesView::None);
        s.instances.answered_by.push(inst("i0", 10));
        s.instances.retries = 5;
        let InstancesView::One(line) = instances_view(&s) else {
            panic!("one instance is one line");
        };
        assert!(
            line.contains("one instance answered: i0 (10 requests"),
            "{line}"
        );
        assert!(line.contains("0 of 5 retries crossed"), "{line}");
        s.instances.answered_by.push(inst("i1", 30));
        s.instances.cross_instance_retries = 4;
        s.instances.unattributed_requests = 2;
        let InstancesView::Table(head, rows) = instances_view(&s) else {
            panic!("two instances are a table");
        };
        assert!(
            head.starts_with("2 instances answered 40 requests"),
            "{head}"
        );
        assert!(
            head.contains("4 of 5 retries crossed instances (80.0 %)"),
            "{head}"
        );
        assert!(
            head.contains("2 requests without a known instance"),
            "{head}"
        );
        assert_eq!(rows[1][0], "i1");
        assert_eq!(rows[1][2], "75.0 %");
        assert!(rows[1][6].contains("tools/call #1: 30"), "{}", rows[1][6]);
    }
}
