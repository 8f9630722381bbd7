//! What a check is: the [`Check`] descriptor, the [`CheckFn`] body it runs,
//! and the `check!` macro every family declares its checks with (it records
//! the file). [`super::all_checks`] lists them in report order.

use futures::future::BoxFuture;
use std::fmt;

use super::model::Verdict;
use super::probe::Probe;
use crate::findings::Severity;
use crate::protocol::Generation;

/// The body of a check: given a [`Probe`] (target, discovered tools and an
/// evidence recorder), it returns a verdict.
pub type CheckFn = fn(Probe) -> BoxFuture<'static, Verdict>;

/// One conformance check: which rule it checks and how.
#[derive(Clone, Copy)]
pub struct Check {
    /// Stable kebab-case id, e.g. `mrtr-tamper-bit-flip`.
    pub id: &'static str,
    /// Spec reference: spec-digest section and rule, e.g. `§4.7 S7 / §6.B 11`.
    pub rule: &'static str,
    /// Strength of the rule: MUST → FAIL, SHOULD → WARN, INFO.
    pub severity: Severity,
    /// Which protocol generation it applies to.
    pub generation: Generation,
    /// One line saying what is checked.
    pub title: &'static str,
    /// The check body.
    pub run: CheckFn,
    /// The file that defines it (`src/check/<family>.rs`), filled in by
    /// the `check!` macro; `check --list` shows it.
    pub source: &'static str,
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check")
            .field("id", &self.id)
            .field("rule", &self.rule)
            .field("severity", &self.severity)
            .field("source", &self.source)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Check`] from its descriptor fields and an `async fn(Probe) ->
/// Verdict`, recording the file it is written in.
macro_rules! check {
    ($id:literal, $rule:literal, $sev:ident, $gen:ident, $title:literal, $f:path) => {
        $crate::check::registry::Check {
            id: $id,
            rule: $rule,
            severity: $crate::findings::Severity::$sev,
            generation: $crate::protocol::Generation::$gen,
            title: $title,
            run: |p| ::futures::FutureExt::boxed($f(p)),
            source: file!(),
        }
    };
}
pub(crate) use check;
