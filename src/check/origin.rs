//! Origin and Host validation against DNS rebinding (§3.2 for 2025-11-25,
//! §4.3 for 2026-07-28): a request carrying a foreign `Origin` must get
//! HTTP 403 (a MUST). A foreign `Host` served where `Origin` is validated is
//! hardening advice (INFO), not the transport rule. DNS rebinding is named
//! only when neither header is validated. Each probe is a correct request
//! that succeeds without the foreign header (the control), so a refusal is
//! about the header and nothing else.

use super::legacy_session::initialize_request;
use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::RawRequest;
use crate::findings::Severity;
use crate::protocol::Generation;
use serde_json::json;

/// The origin no server under test is on.
pub const FOREIGN_ORIGIN: &str = "http://evil.example";

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-origin-validated",
            "§4.3 / §6.B 4",
            Must,
            Modern,
            "a request with a foreign Origin gets HTTP 403 (a foreign Host served alone is INFO)",
            modern,
            http("the Origin and Host headers");
            scenario "dns-rebinding-protection"
        ),
        check!(
            "legacy-origin-validated",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "a request with a foreign Origin gets HTTP 403 (a foreign Host served alone is INFO)",
            legacy,
            http("the Origin and Host headers")
        ),
    ]
}

fn request(p: &Probe, g: Generation, label: &str) -> RawRequest {
    match g {
        Generation::Modern => {
            p.modern_request(label, p.target().plain_method(), json!({}), &all_modes())
        }
        Generation::Legacy => {
            let mut r = initialize_request(
                &p.settings().target.mcp_url,
                Some(&p.settings().target.principal),
                p.target().next_id(),
                &all_modes().to_value(),
            );
            r.label = label.to_owned();
            r
        }
    }
}

fn foreign_host(mcp_url: &str) -> String {
    let port = url::Url::parse(mcp_url)
        .ok()
        .and_then(|u| u.port_or_known_default())
        .unwrap_or(80);
    format!("evil.example:{port}")
}

async fn judge(p: Probe, g: Generation) -> Verdict {
    let what = match g {
        Generation::Modern => p.target().plain_method(),
        Generation::Legacy => "initialize",
    };
    match p.send(request(&p, g, &format!("control: {what}"))).await {
        Ok(r) if (200..300).contains(&r.status) => {}
        Ok(r) => {
            return Verdict::skip(format!(
                "a correct {what} already gets HTTP {}, so a refusal would prove nothing",
                r.status
            ));
        }
        Err(e) => return Verdict::skip(format!("a correct {what} got no reply: {e}")),
    }
    let origin = request(&p, g, &format!("{what} with Origin: {FOREIGN_ORIGIN}"))
        .header("Origin", FOREIGN_ORIGIN);
    let origin_status = match p.send(origin).await {
        Ok(r) => r.status,
        Err(e) => return Verdict::fail(format!("no reply with a foreign Origin: {e}")),
    };
    let host = foreign_host(&p.settings().target.mcp_url);
    let host_req =
        request(&p, g, &format!("{what} with Host: {host}")).header("Host", host.clone());
    let host_status = p.send(host_req).await.map(|r| r.status).ok();
    let host_served = matches!(host_status, Some(s) if (200..300).contains(&s));
    let host_note = match host_status {
        Some(s) if (400..500).contains(&s) => format!("a foreign Host got HTTP {s}"),
        Some(s) => format!("a foreign Host ({host}) was served: HTTP {s}"),
        None => "a foreign Host got no reply".to_owned(),
    };
    match origin_status {
        403 => {
            if host_served {
                return Verdict::info(format!(
                    "Origin: HTTP 403 as required; {host_note}. Hardening only: a \
                     browser's rebound request carries the foreign Origin, which is refused"
                ))
                .expecting("a foreign Host is refused (4xx), like a foreign Origin");
            }
            Verdict::pass(format!("a foreign Origin got HTTP 403; {host_note}"))
        }
        s if (200..300).contains(&s) => Verdict::fail(format!(
            "Origin: {FOREIGN_ORIGIN} was served (HTTP {s}): the server does not validate Origin, \
             so a web page on any site can send it requests through the user's browser{}; \
             {host_note}",
            if host_served {
                " (DNS rebinding too: a foreign Host is served as well)"
            } else {
                ""
            }
        ))
        .expecting(format!(
            "HTTP 403 for a request with Origin: {FOREIGN_ORIGIN}"
        )),
        s => Verdict::violation(
            Severity::Should,
            format!("a foreign Origin was refused with HTTP {s}, not 403; {host_note}"),
        )
        .expecting(format!(
            "HTTP 403 for a request with Origin: {FOREIGN_ORIGIN}"
        )),
    }
}

async fn modern(p: Probe) -> Verdict {
    judge(p, Generation::Modern).await
}

async fn legacy(p: Probe) -> Verdict {
    judge(p, Generation::Legacy).await
}
