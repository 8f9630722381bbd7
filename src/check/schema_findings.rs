//! What the schema engine says about every requested form (§2.2, §6.A 6–8:
//! shape, defaults, secrets asked in a form, links in forms) and every
//! URL-mode URL (§3.6 rule 4: scheme, HTTPS, credentials or personal data in
//! the URL). Rounds after the first are covered by running each form tool's
//! happy path. The 2025-11-25 twin (`legacy-schema-findings`,
//! [`legacy_checks`]) reads the elicitations pushed on a session.

use super::input_required_shape::{findings_of, is_shape_rule, verdict_of};
use super::legacy_session::{all_elicitations, elicit_findings};
use super::model::Verdict;
use super::probe::{FirstReply, Probe};
use super::registry::{Check, check};
use crate::client::policy::AnswerPolicy;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-schema-findings",
        "§2.2, §3.6 rules 1 and 4 / §6.A 6-9",
        Must,
        Modern,
        "requested schemas are valid, forms ask for no secrets, URLs are safe",
        schema_findings
    )]
}

fn not_shape(rule: &str) -> bool {
    !is_shape_rule(rule)
}

async fn schema_findings(p: Probe) -> Verdict {
    let mut all = Vec::new();
    let mut seen = 0;
    for t in &p.target().tools {
        let FirstReply::InputRequired { raw, .. } = &t.first else {
            continue;
        };
        seen += 1;
        all.extend(
            findings_of(raw, not_shape)
                .into_iter()
                .map(|f| (format!("{} round 1", t.name), f)),
        );
        if t.modes().url {
            continue;
        }
        // Later rounds: replay the flow and inspect every input_required body.
        let cfg = super::flows::config(&p, AnswerPolicy::AcceptValid);
        let (_, bodies) = p.flow_with_bodies(t.call(), cfg).await;
        for (i, body) in bodies.iter().enumerate().skip(1) {
            let body = String::from_utf8_lossy(body);
            // Declared or not (`mrtr-result-type` reports a missing one).
            if body.contains("\"input_required\"") || body.contains("\"inputRequests\"") {
                all.extend(
                    findings_of(&body, not_shape)
                        .into_iter()
                        .map(|f| (format!("{} round {}", t.name, i + 1), f)),
                );
            }
        }
    }
    if seen == 0 {
        return Verdict::skip("no tool answered input_required");
    }
    verdict_of(all, &format!("the requests of {seen} eliciting tools"))
}

/// The 2025-11-25 twin: the same findings on pushed elicitations (§6.A 6–9).
pub fn legacy_checks() -> Vec<Check> {
    vec![check!(
        "legacy-schema-findings",
        "§2.2, §3.6 rules 1 and 4 / §6.A 6-9",
        Must,
        Legacy,
        "requested schemas are valid, forms ask for no secrets, URLs are safe",
        legacy_schema_findings
    )]
}

async fn legacy_schema_findings(p: Probe) -> Verdict {
    let all = match all_elicitations(&p).await {
        Ok(a) => a,
        Err(v) => return v,
    };
    let found = all
        .iter()
        .flat_map(|(tool, e)| {
            elicit_findings(e)
                .into_iter()
                .filter(|f| !is_shape_rule(&f.rule) && !f.rule.starts_with("legacy-"))
                .map(|f| (tool.clone(), f))
        })
        .collect();
    verdict_of(found, &format!("{} elicitation requests", all.len()))
}
