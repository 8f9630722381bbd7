//! What a check is: the [`Check`] descriptor, the [`CheckFn`] body it runs,
//! what it [`Needs`] from the run, and the `check!` macro every family
//! declares its checks with (it records the file). [`super::all_checks`] lists them in report order.

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
    /// What it needs from the run, declared after its body in `check!`.
    pub needs: Needs,
    /// What is checked, worded for a stdio target where `title` names an
    /// HTTP status (over stdio the bridge's statuses are never the
    /// server's, so the rule there is the JSON-RPC part alone): `; stdio
    /// "TEXT"` in its `check!`. `None`: the title reads the same on both.
    pub stdio_title: Option<&'static str>,
    /// The official conformance suite's scenario (`@modelcontextprotocol/conformance`,
    /// `server --scenario NAME`) that checks the same rule, where one does:
    /// `; scenario "NAME"` at the end of its `check!`.
    pub scenario: Option<&'static str>,
}

/// What a check needs beyond a target and the per-check timeout. Each is a
/// word after the body in its `check!` (`alone`, `http("SSE streams")`);
/// a word that names no field does not compile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// The part of HTTP it judges: over stdio, which has none of it, the
    /// check is reported not applicable.
    pub http: Option<&'static str>,
    /// Two principals on the wire (over stdio, only with `--identity-env`).
    pub two_principals: bool,
    /// No other check in flight: it reads server state before and after an
    /// action, or times replies, and another check's calls would change it.
    pub alone: bool,
    /// `--wait-expiry` on top of its timeout.
    pub expiry: bool,
    /// It judges what the whole run did, so it runs after every other
    /// check.
    pub whole_run: bool,
}

impl Needs {
    /// Nothing beyond the target.
    pub const NONE: Needs = Needs {
        http: None,
        two_principals: false,
        alone: false,
        expiry: false,
        whole_run: false,
    };
}

impl Check {
    /// The check as a target's transport words it: over stdio its
    /// [`Check::stdio_title`], where it has one, is its title.
    pub fn worded_for(self, stdio: bool) -> Check {
        match self.stdio_title {
            Some(t) if stdio => Check { title: t, ..self },
            _ => self,
        }
    }
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check")
            .field("id", &self.id)
            .field("rule", &self.rule)
            .field("severity", &self.severity)
            .field("source", &self.source)
            .field("generation", &self.generation)
            .field("needs", &self.needs)
            .field("stdio_title", &self.stdio_title)
            .field("scenario", &self.scenario)
            .finish_non_exhaustive()
    }
}

/// The value of one word of a `check!`'s needs: `alone` is `true`,
/// `http("SSE streams")` is `Some("SSE streams")`.
macro_rules! need {
    () => {
        true
    };
    ($what:expr) => {
        Some($what)
    };
}
pub(crate) use need;

/// A `check!`'s optional literal (its scenario, its stdio title), when it
/// names one.
macro_rules! optional {
    () => {
        None
    };
    ($name:literal) => {
        Some($name)
    };
}
pub(crate) use optional;

/// Builds a [`Check`] from its descriptor fields, an `async fn(Probe) ->
/// Verdict`, what it [`Needs`] (none, or words such as `alone`,
/// `http("SSE streams")`) and, after a `;`, the official conformance
/// scenario that checks the same rule (`; scenario "caching"`), recording
/// the file it is written in.
macro_rules! check {
    ($id:literal, $rule:literal, $sev:ident, $gen:ident, $title:literal, $f:path
        $(, $need:ident $(($what:expr))?)* $(; stdio $stdio:literal)?
        $(; scenario $scenario:literal)? $(,)?) => {
        $crate::check::registry::Check {
            id: $id,
            rule: $rule,
            severity: $crate::findings::Severity::$sev,
            generation: $crate::protocol::Generation::$gen,
            title: $title,
            run: |p| ::futures::FutureExt::boxed($f(p)),
            source: file!(),
            needs: $crate::check::registry::Needs {
                $($need: $crate::check::registry::need!($($what)?),)*
                ..$crate::check::registry::Needs::NONE
            },
            stdio_title: $crate::check::registry::optional!($($stdio)?),
            scenario: $crate::check::registry::optional!($($scenario)?),
        }
    };
}
pub(crate) use check;
