//! Custom `Mcp-Param-{Name}` headers (§4.3, SEP-2243; the official
//! scenario `http-custom-header-server-validation`): a tool argument whose
//! input schema carries `x-mcp-header: Name` travels in that header too,
//! and the server validates the mirror: a header that differs from the
//! argument, one left out while the argument is in the body, or a
//! `=?base64?…?=` value that does not decode gets HTTP 400 and `-32020`;
//! a correct mirror, also base64-encoded, is served.

use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::raw::{RawRequest, Rpc};
use crate::protocol::codes;
use crate::protocol::headers::PARAM_PREFIX;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-param-header-validated",
        "§4.3 (SEP-2243) / §6.B 2",
        Must,
        Modern,
        "an Mcp-Param-* header that does not mirror its argument (different, missing, bad base64) gets HTTP 400 and -32020",
        param_header_validated,
        http("the Mcp-Param-* headers");
        scenario "http-custom-header-server-validation"
    )]
}

/// A tool argument mirrored into a header.
struct Mirrored {
    tool: ToolProfile,
    argument: String,
    header: String,
    value: String,
}

/// The first string argument of a listed tool annotated `x-mcp-header`,
/// with a value for it (the one discovery called the tool with, else the
/// schema's first enum value or default, else a word).
fn mirrored(p: &Probe) -> Option<Mirrored> {
    p.target().tools.iter().find_map(|t| {
        let props = t
            .descriptor
            .get("inputSchema")?
            .get("properties")?
            .as_object()?;
        props.iter().find_map(|(arg, schema)| {
            let header = schema.get("x-mcp-header")?.as_str()?;
            if schema
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|ty| ty != "string")
            {
                return None;
            }
            let value = t
                .arguments
                .get(arg)
                .or_else(|| schema.get("enum").and_then(|e| e.get(0)))
                .or_else(|| schema.get("default"))
                .and_then(Value::as_str)
                .unwrap_or("elicitkit")
                .to_owned();
            Some(Mirrored {
                tool: t.clone(),
                argument: arg.clone(),
                header: format!("{PARAM_PREFIX}{header}"),
                value,
            })
        })
    })
}

/// A `tools/call` with the mirrored argument in the body and `header`
/// (`None`: left out) as its `Mcp-Param-*` header.
fn call(p: &Probe, m: &Mirrored, label: &str, header: Option<&str>) -> RawRequest {
    let mut args: Map<String, Value> = m.tool.arguments.clone();
    args.insert(m.argument.clone(), m.value.clone().into());
    let req = p.modern_request(
        label,
        "tools/call",
        json!({"name": m.tool.name, "arguments": args}),
        &all_modes(),
    );
    match header {
        Some(h) => req.header(&m.header, h),
        None => req.without_header(&m.header),
    }
}

async fn param_header_validated(p: Probe) -> Verdict {
    let Some(m) = mirrored(&p) else {
        return Verdict::skip("no listed tool has a string argument annotated x-mcp-header");
    };
    let (h, v) = (&m.header, &m.value);
    let encoded = format!("=?base64?{}?=", STANDARD.encode(v.as_bytes()));
    let other = format!("{v}-other");
    // Served: the header mirrors the argument, plain or encoded.
    let good = [
        (format!("{h}: {v} (mirrors {})", m.argument), v.clone()),
        (format!("{h}: {encoded} (base64 of {v:?})"), encoded),
    ];
    // Refused: -32020 with HTTP 400.
    let bad = [
        (
            format!("{h}: {other} (the body says {v:?})"),
            Some(other.clone()),
        ),
        (format!("{h} left out (the body has {})", m.argument), None),
        (
            format!("{h}: =?base64?SGVs!!!bG8=?= (not base64)"),
            Some("=?base64?SGVs!!!bG8=?=".to_owned()),
        ),
    ];
    let mut served = Vec::new();
    let mut wrong = Vec::new();
    for (label, value) in good {
        match p.send(call(&p, &m, &label, Some(&value))).await {
            Ok(r) => match r.rpc() {
                Rpc::Error(e) if e.code == codes::HEADER_MISMATCH => wrong.push(format!(
                    "{label}: refused with -32020, though the header mirrors the argument"
                )),
                rpc @ Rpc::Result(_) => served.push(format!("{label}: {}", rpc.describe())),
                other => served.push(format!(
                    "{label}: HTTP {} and {} (not a header refusal)",
                    r.status,
                    other.describe()
                )),
            },
            Err(e) => return Verdict::fail(format!("{label}: no reply: {e}")),
        }
    }
    // The first call is the control: a correct mirror gets a result.
    let control_held = served.first().is_some_and(|s| s.contains("a result"));
    let mut refused = Vec::new();
    for (label, value) in bad {
        match p.send(call(&p, &m, &label, value.as_deref())).await {
            Ok(r) => match r.rpc() {
                Rpc::Error(e) if e.code == codes::HEADER_MISMATCH && r.status == 400 => {
                    refused.push(label)
                }
                Rpc::Error(e) if e.code == codes::HEADER_MISMATCH && !p.status_is_servers() => {
                    refused.push(label)
                }
                other => wrong.push(format!(
                    "{label}: HTTP {} and {}, expected HTTP 400 and -32020",
                    r.status,
                    other.describe()
                )),
            },
            Err(e) => return Verdict::fail(format!("{label}: no reply: {e}")),
        }
    }
    if !wrong.is_empty() {
        if !control_held {
            return Verdict::info(format!(
                "could not tell: {}; but a call whose {h} mirrors {} did not get a result ({}), so \
                 the refusals may not be about the header",
                wrong.join("; "),
                m.argument,
                served.first().map_or("no reply", String::as_str)
            ));
        }
        return Verdict::fail(format!("tool {}: {}", m.tool.name, wrong.join("; ")));
    }
    if !control_held {
        return Verdict::info(format!(
            "could not tell: every mismatch was refused, but so was the correct mirror ({})",
            served.join("; ")
        ));
    }
    Verdict::pass(format!(
        "tool {}: refused with HTTP 400 and -32020: {}; served: {}",
        m.tool.name,
        refused.join(", "),
        served.join("; ")
    ))
}
