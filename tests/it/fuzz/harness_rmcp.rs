//! The in-process harness over the rmcp 3.11 test server
//! (`tests/rmcp_server/`, an axum router around rmcp's
//! `StreamableHttpService`). With the invariants the `rmcp_server` fuzz
//! target keeps, random sessions pass; each invariant it steps past is a
//! real, documented deviation of that server, shown here to fire:
//! - other-principal-never-completes: the server authenticates nobody;
//! - other-request-never-completes: states are sealed with no associated
//!   data (as rmcp's example does), so one request's state completes another;
//! - json-rpc-on-malformed: rmcp answers an unparseable body with a
//!   plain-text HTTP 415, not a JSON-RPC parse error.
#![cfg(feature = "net")]

use crate::support::rmcp_harness::{harness, kept};

use elicitkit::fuzz::harness::{Harness, Oracle, Oracles, Session, SingleUse, Step};
use elicitkit::fuzz::mutation::BodyMutation;

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
fn kept_invariants_hold_over_random_sessions() {
    let mut h = harness(kept(), SingleUse::Declared);
    let n = h.tool_names().len() as u8;
    let mut requests = 0;
    for seed in 0..300u64 {
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
            Ok(r) => requests += r.requests,
            Err(v) => panic!("seed {seed}: {v}"),
        }
    }
    assert!(requests > 500, "{requests}");
}

fn fires(h: &mut Harness<axum::Router>, steps: Vec<Step>, want: Oracle) {
    match h.run(&Session { steps }) {
        Err(v) => assert_eq!(v.oracle, want, "{v}"),
        Ok(r) => panic!("{want} did not fire ({r:?})"),
    }
}

#[test]
fn the_deviations_the_target_steps_past_are_real() {
    let mut h = harness(Oracles::all(), SingleUse::Declared);
    let order = h
        .tool_names()
        .iter()
        .position(|t| t == "place_order")
        .unwrap() as u8;
    fires(
        &mut h,
        vec![
            Step::Start { tool: order },
            Step::CrossPrincipal { flow: 0 },
        ],
        Oracle::ForeignPrincipalAccepted,
    );
    fires(
        &mut h,
        vec![
            Step::Start { tool: order },
            Step::CrossRequest {
                flow: 0,
                tool: order,
            },
        ],
        Oracle::OtherRequestAccepted,
    );
    fires(
        &mut h,
        vec![
            Step::Start { tool: order },
            Step::Retry {
                flow: 0,
                state: None,
                answers: None,
                headers: vec![],
                body: Some(BodyMutation::Truncated { at: 40 }),
            },
        ],
        Oracle::NotJsonRpcOnMalformed,
    );
    // Not an invariant of the target (place_order is not marked single
    // use), but named single use, a replayed order is placed again.
    let mut h = harness(Oracles::all(), SingleUse::Named(vec!["place_order".into()]));
    fires(
        &mut h,
        vec![
            Step::Start { tool: order },
            Step::Answer { flow: 0 },
            Step::Duplicate { flow: 0 },
        ],
        Oracle::SingleUseTwice,
    );
}
