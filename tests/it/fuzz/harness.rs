//! The in-process harness over the reference server (and, in
//! `fuzz_harness_rmcp.rs`, over rmcp): clean servers keep every invariant
//! over many random sessions; each invariant fires on the `--flaw` that
//! breaks it (an invariant that cannot fire proves nothing).
#![cfg(feature = "net")]

use elicitkit::fuzz::harness::{Config, Harness, Oracle, Session, SingleUse, Step};
use elicitkit::fuzz::mutation::{AnswerMutation, StateMutation};
use elicitkit::server::embed::{InProcess, in_process};
use elicitkit::server::{Flaw, FlawSet, ServerConfig};

fn harness(flaws: &[Flaw]) -> Harness<axum::Router> {
    let flaws: FlawSet = flaws.iter().copied().collect();
    let cfg = ServerConfig {
        flaws,
        ..ServerConfig::default()
    };
    let url = in_process(cfg.clone()).unwrap().mcp_url();
    let make = move || -> axum::Router {
        let s: InProcess = in_process(cfg.clone()).expect("server builds");
        s.router()
    };
    Harness::new(make, Config::new(url).single_use(SingleUse::All)).expect("harness")
}

fn tool(h: &Harness<axum::Router>, name: &str) -> u8 {
    h.tool_names().iter().position(|t| t == name).unwrap() as u8
}

/// SplitMix64 bytes: the same sessions every run.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

#[test]
fn clean_server_keeps_every_invariant_over_random_sessions() {
    let mut h = harness(&[]);
    let mut requests = 0;
    let mut flows = 0;
    let n = h.tool_names().len() as u8;
    for seed in 0..300u64 {
        // Random steps after two first calls (random bytes alone rarely
        // start a flow before they end).
        let mut s = Session::from_bytes(&bytes(seed, 160));
        let t = (seed % u64::from(n)) as u8;
        s.steps.insert(0, Step::Start { tool: t });
        s.steps.insert(
            1,
            Step::Start {
                tool: t.wrapping_add(1),
            },
        );
        match h.run(&s) {
            Ok(r) => {
                requests += r.requests;
                flows += r.flows;
            }
            Err(v) => panic!("seed {seed}: {v}"),
        }
    }
    assert!(
        requests > 500 && flows > 100,
        "{requests} requests, {flows} flows"
    );
}

fn expect(h: &mut Harness<axum::Router>, steps: Vec<Step>, want: Oracle) {
    let s = Session { steps };
    match h.run(&s) {
        Err(v) => assert_eq!(v.oracle, want, "{v}"),
        Ok(r) => panic!("no violation ({r:?}) for {s:?}"),
    }
}

fn passes(h: &mut Harness<axum::Router>, steps: Vec<Step>) {
    let s = Session { steps };
    if let Err(v) = h.run(&s) {
        panic!("{v}");
    }
}

#[test]
fn each_invariant_fires_on_its_flaw() {
    let tamper = |tool| {
        vec![
            Step::Start { tool },
            Step::Retry {
                flow: 0,
                state: Some(StateMutation::FlipChar { index: 5 }),
                answers: None,
                headers: vec![],
                body: None,
            },
        ]
    };
    let mut clean = harness(&[]);
    let deploy = tool(&clean, "deploy");
    let delete = tool(&clean, "delete_file");
    let book = tool(&clean, "book_trip");
    passes(&mut clean, tamper(deploy));
    let mut h = harness(&[Flaw::AcceptTamperedState]);
    expect(&mut h, tamper(deploy), Oracle::TamperedStateAccepted);

    let cross = vec![
        Step::Start { tool: deploy },
        Step::CrossPrincipal { flow: 0 },
    ];
    passes(&mut clean, cross.clone());
    let mut h = harness(&[Flaw::IgnorePrincipal]);
    expect(&mut h, cross, Oracle::ForeignPrincipalAccepted);

    let other = vec![
        Step::Start { tool: deploy },
        Step::CrossRequest {
            flow: 0,
            tool: deploy,
        },
    ];
    passes(&mut clean, other.clone());
    let mut h = harness(&[Flaw::IgnoreRequestBinding]);
    expect(&mut h, other, Oracle::OtherRequestAccepted);

    let twice = vec![
        Step::Start { tool: delete },
        Step::Answer { flow: 0 },
        Step::Duplicate { flow: 0 },
    ];
    passes(&mut clean, twice.clone());
    let mut h = harness(&[Flaw::ReplayableSideEffect]);
    expect(&mut h, twice, Oracle::SingleUseTwice);

    let many = vec![
        Step::Start { tool: delete },
        Step::Concurrent { flow: 0, n: 5 },
    ];
    passes(&mut clean, many.clone());
    let mut h = harness(&[Flaw::ReplayableSideEffect]);
    expect(&mut h, many, Oracle::SingleUseTwice);

    let decline = vec![
        Step::Start { tool: book },
        Step::Retry {
            flow: 0,
            state: None,
            answers: Some(AnswerMutation::Decline),
            headers: vec![],
            body: None,
        },
    ];
    passes(&mut clean, decline.clone());
    let mut h = harness(&[Flaw::CrashOnDecline]);
    expect(&mut h, decline, Oracle::ServerError);

    let mut h = harness(&[Flaw::MissingResultType]);
    expect(
        &mut h,
        vec![Step::Start { tool: deploy }],
        Oracle::IllFormed,
    );
}

/// `WellFormed` reads an SSE event's data as sent: a duplicate key inside
/// it (added here by a layer over a clean server answering in SSE) is a
/// violation. It was not while the check wrote the decoded message out
/// again, which kept one of the two keys.
#[test]
fn a_duplicate_key_inside_an_sse_event_breaks_well_formed() {
    use axum::body::{Body, to_bytes};
    use axum::response::Response;
    use elicitkit::server::ResponseMode;

    async fn doubled(r: Response) -> Response {
        let (parts, body) = r.into_parts();
        let bytes = to_bytes(body, usize::MAX).await.unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes).replacen(
            "\"resultType\":\"input_required\"",
            "\"resultType\":\"input_required\",\"resultType\":\"input_required\"",
            1,
        );
        Response::from_parts(parts, Body::from(text))
    }
    let cfg = ServerConfig {
        response: ResponseMode::Sse,
        ..ServerConfig::default()
    };
    let url = in_process(cfg.clone()).unwrap().mcp_url();
    let build = move |dup: bool| {
        let cfg = cfg.clone();
        move || -> axum::Router {
            let r = in_process(cfg.clone()).expect("server builds").router();
            if dup {
                r.layer(axum::middleware::map_response(doubled))
            } else {
                r
            }
        }
    };
    let config = || Config::new(url.clone()).single_use(SingleUse::All);
    let mut clean = Harness::new(build(false), config()).expect("harness");
    let deploy = tool(&clean, "deploy");
    passes(&mut clean, vec![Step::Start { tool: deploy }]);
    let mut dup = Harness::new(build(true), config()).expect("harness");
    expect(
        &mut dup,
        vec![Step::Start { tool: deploy }],
        Oracle::IllFormed,
    );
}

/// A splice or donor from a flow of the *same* request (tool and
/// arguments) is that request's own valid state, so the harness takes its
/// donor from another request; a clean server then refuses it, and a server
/// that ignores the request binding completes it. (A fuzz run in CI found
/// the harness calling the identical request's state a tamper.)
#[test]
fn a_spliced_state_comes_from_another_request() {
    let splice = |first, second| {
        vec![
            Step::Start { tool: first },
            Step::Start { tool: second },
            Step::Start { tool: first },
            Step::Retry {
                flow: 0,
                state: Some(StateMutation::Splice { at: 0 }),
                answers: None,
                headers: vec![],
                body: None,
            },
        ]
    };
    let mut clean = harness(&[]);
    let delete = tool(&clean, "delete_file");
    let deploy = tool(&clean, "deploy");
    passes(&mut clean, splice(delete, delete));
    passes(&mut clean, splice(delete, deploy));
    let mut h = harness(&[Flaw::IgnoreRequestBinding]);
    expect(
        &mut h,
        splice(delete, deploy),
        Oracle::TamperedStateAccepted,
    );
}
