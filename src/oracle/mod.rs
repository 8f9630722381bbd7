//! Oracles: one implementation of each rule a reply is judged by, shared by
//! `check`, `fuzz` and `load` (a command that needs one calls it here), and
//! one vocabulary for what they find.
//!
//! - [`table`]: every [`Oracle`], one row each (name, severity, which fuzzer
//!   judges it), and [`Oracles`], a set of them.
//! - [`transport`]: a server error (5xx), a hang, a reset connection, a
//!   reply without a JSON-RPC response.
//! - [`reply`]: rules on one 2026-07-28 reply: `resultType` declared and
//!   known (§4.4), `input_required` only where MRTR is allowed (S1), and how
//!   a request with a wrongly typed `inputResponses` or `requestState` was
//!   answered (S9).
//! - [`capability`]: input requests for an elicitation mode the request
//!   did not declare (§2.4, S5).
//! - [`effect`]: whether a completion acted, against the same flow
//!   declined (the control of replay and tamper findings).
//! - [`replay`]: a request completing again from the same state and
//!   answers (S8): an error for single-use tools, a warning elsewhere.
//! - [`tamper`]: a tampered (or foreign) state completing, judged against
//!   a no-state and an untampered control: a finding only where the state
//!   is shown to be load-bearing (S7, S8a).

pub mod capability;
pub mod effect;
pub mod replay;
pub mod reply;
pub mod table;
pub mod tamper;
pub mod transport;

pub use table::{Oracle, Oracles};
