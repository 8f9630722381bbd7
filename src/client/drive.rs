//! The one driver of a [`ModernFlow`]: [`drive`] owns the step loop (start,
//! send, feed the reply or the failure back, until `Step::Done`) and times
//! the whole flow; an [`Exchange`] says how each leg travels (reqwest in
//! [`super::http`], the checker's evidence-recording probe, the load
//! generator's pooled lanes under its request cap).

use super::leg::{HttpReply, LegFailure, Outgoing, Step};
use super::modern::ModernFlow;
use super::outcome::RoundTrip;
use std::borrow::BorrowMut;
use std::future::Future;
use std::time::{Duration, Instant};

/// What sending one leg gives: the whole reply, or why none came and after
/// how long.
pub type LegReply = Result<HttpReply, (LegFailure, Duration)>;

/// How the legs of a flow travel: one [`Outgoing`] in, its [`LegReply`] out.
///
/// Not to be confused with [`super::raw::Exchange`], which is one recorded
/// request and reply as evidence text.
pub trait Exchange {
    /// Why this exchange may abandon a flow before the flow ends (a request
    /// cap reached, a stop): [`std::convert::Infallible`] for one that always
    /// sends.
    type Stop;

    /// Called before each leg, `Err` abandons the flow: [`drive`] returns it
    /// and no round trip. By default every leg goes.
    fn before(&mut self, out: &Outgoing) -> Result<(), Self::Stop> {
        let _ = out;
        Ok(())
    }

    /// Sends `out` and reads its whole reply (under the exchange's own
    /// timeout: a leg that takes too long is a [`LegFailure::Timeout`]).
    /// `out` is given, not lent: a leg is sent once, and a driver that
    /// owns its body need not copy it.
    fn send(&mut self, out: Outgoing) -> impl Future<Output = LegReply> + Send;
}

/// Runs `flow` to its end over `ex`: the round trip, its `total` the wall
/// time of the whole flow, or why `ex` abandoned it. With an exchange that
/// never stops, `let Ok(rt) = drive(flow, &mut ex).await;`. The flow may
/// be lent (`&mut flow`): a flow given by value is held twice in this
/// future (as the argument and as the moved local, about 1 KB each), so
/// the load generator's hot path lends it.
pub async fn drive<E: Exchange>(
    mut flow: impl BorrowMut<ModernFlow>,
    ex: &mut E,
) -> Result<RoundTrip, E::Stop> {
    let flow = flow.borrow_mut();
    let started = Instant::now();
    let mut out = flow.start();
    loop {
        ex.before(&out)?;
        let step = match ex.send(out).await {
            Ok(reply) => flow.on_reply(reply),
            Err((failure, elapsed)) => flow.on_failure(failure, elapsed),
        };
        match step {
            Step::Send(next) => out = next,
            Step::Done(mut rt) => {
                rt.total = started.elapsed();
                return Ok(rt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::modern::{FlowConfig, ToolCall};
    use crate::client::outcome::LegResult;
    use serde_json::json;

    /// Refuses every leg after `budget` of them; each sent leg fails.
    struct Capped {
        budget: u32,
        sent: Vec<String>,
    }

    impl Exchange for Capped {
        type Stop = &'static str;
        fn before(&mut self, _: &Outgoing) -> Result<(), &'static str> {
            self.budget = self.budget.checked_sub(1).ok_or("cap reached")?;
            Ok(())
        }
        async fn send(&mut self, out: Outgoing) -> LegReply {
            self.sent.push(out.leg.to_string());
            Err((LegFailure::Timeout, Duration::from_millis(3)))
        }
    }

    fn flow() -> ModernFlow {
        ModernFlow::new(ToolCall::new("t", json!({})), FlowConfig::default())
    }

    #[tokio::test]
    async fn a_failed_leg_ends_the_flow_with_that_leg() {
        let mut ex = Capped {
            budget: 5,
            sent: Vec::new(),
        };
        let rt = drive(flow(), &mut ex).await.unwrap();
        assert_eq!(ex.sent, ["tools/call #1"]);
        assert_eq!(rt.legs.len(), 1);
        assert_eq!(rt.legs[0].result, LegResult::Timeout);
        assert!(rt.total < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn an_exchange_that_stops_abandons_the_flow_unsent() {
        let mut ex = Capped {
            budget: 0,
            sent: Vec::new(),
        };
        assert_eq!(drive(flow(), &mut ex).await.unwrap_err(), "cap reached");
        assert!(ex.sent.is_empty());
    }
}
