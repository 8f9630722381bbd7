//! One finding per root cause. Two hits are one root cause when the same
//! [`Oracle`] fires, in the same generation, on the same JSON-RPC method,
//! after the same minimised op kinds; the tool and the ops' payloads (which
//! character flipped, which JSON type, how deep, how many copies) do not
//! count, so one missing check shows once however many tools it breaks.
//!
//! - Op kinds are [`Op::kind`]s as a set: `state:flip_char` and
//!   `state:truncate` stay apart (a server may verify a state's tag yet
//!   accept a prefix of it), the order ops were applied in does not; the
//!   list ops are one kind `list`, told apart by the method.
//! - The generation stays in the key: the two are separate code paths in a
//!   server (sessions and streams against stateless retries), fixed apart
//!   and reproduced apart.
//! - The method is the one of the request that carried the mutation (or
//!   that the oracle fired on), so a 2025-11-25 `tools/list` mutation is a
//!   `tools/list` finding, not one of the tool the case happened to pick.
//! - A stdio server's process exit is one cause whatever the case did and
//!   in whichever generation: what the case sent next failed because the
//!   process was gone, and one defect kills the process on many paths
//!   (a run against `serve --stdio --flaw exit-on-decline` filed 7).

use std::collections::{BTreeSet, HashMap};

use crate::protocol::Generation;

use super::case::Op;
use super::summary::Listed;
use crate::oracle::Oracle;

/// What makes two hits one finding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RootCause {
    /// The oracle that fired.
    pub oracle: Oracle,
    /// The generation spoken (none for a process exit).
    pub generation: Option<Generation>,
    /// The JSON-RPC method of the request that carried the mutation.
    pub method: String,
    /// The kinds of the (minimised) ops.
    pub kinds: BTreeSet<String>,
}

impl RootCause {
    /// The cause of `oracle` firing on `method` after `ops`.
    pub fn new(oracle: Oracle, generation: Generation, method: &str, ops: &[Op]) -> Self {
        if oracle == Oracle::ProcessExited {
            return RootCause {
                oracle,
                generation: None,
                method: String::new(),
                kinds: BTreeSet::new(),
            };
        }
        RootCause {
            oracle,
            generation: Some(generation),
            method: method.to_owned(),
            kinds: ops.iter().map(Op::kind).collect(),
        }
    }
}

/// The findings of a run, one per root cause, with the hits counted.
#[derive(Debug, Default)]
pub struct Groups {
    /// The findings, in the order found.
    pub listed: Vec<Listed>,
    causes: HashMap<RootCause, usize>,
    /// Unminimised causes (with the tool) already minimised, and the
    /// finding they went to: a case like one minimised before is counted
    /// without minimising it again.
    cases: HashMap<(RootCause, Option<String>), usize>,
}

impl Groups {
    /// Counts a hit whose unminimised cause `pre` on `tool` was minimised
    /// before; false when it was not (minimise it, then [`Groups::file`]).
    pub fn repeat(&mut self, pre: &RootCause, tool: Option<&str>) -> bool {
        let key = (pre.clone(), tool.map(str::to_owned));
        match self.cases.get(&key) {
            Some(&i) => {
                self.listed[i].seen_on(tool);
                true
            }
            None => false,
        }
    }

    /// Counts a minimised hit on the finding of its `cause`, remembering
    /// `pre` for [`Groups::repeat`]; `None` when the cause is new (list it
    /// with [`Groups::add`]).
    pub fn file(
        &mut self,
        pre: &RootCause,
        cause: &RootCause,
        tool: Option<&str>,
    ) -> Option<usize> {
        let i = *self.causes.get(cause)?;
        self.listed[i].seen_on(tool);
        self.cases.insert((pre.clone(), tool.map(str::to_owned)), i);
        Some(i)
    }

    /// Lists the finding of a new `cause` (its first hit counted in
    /// `listed`); returns its index.
    pub fn add(
        &mut self,
        pre: &RootCause,
        cause: RootCause,
        tool: Option<&str>,
        listed: Listed,
    ) -> usize {
        let i = self.listed.len();
        self.listed.push(listed);
        self.cases.insert((pre.clone(), tool.map(str::to_owned)), i);
        self.cases
            .insert((cause.clone(), tool.map(str::to_owned)), i);
        self.causes.insert(cause, i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::blackbox::summary::{Reproduced, Verdict};
    use crate::fuzz::mutation::{AnswerMutation, BodyMutation, JsonKind, StateMutation};

    fn listed(cause: &RootCause, tool: Option<&str>) -> Listed {
        Listed {
            dir: String::new(),
            oracle: cause.oracle,
            severity: cause.oracle.severity(),
            generation: cause.generation.map(|g| g.to_string()).unwrap_or_default(),
            method: cause.method.clone(),
            ops: cause.kinds.iter().cloned().collect(),
            tools: tool.into_iter().map(str::to_owned).collect(),
            count: 1,
            what: String::new(),
            at_secs: 0.0,
            rerun: Verdict {
                reproduced: Reproduced::Unknown,
                detail: String::new(),
            },
        }
    }

    /// Files a minimised hit as the run does.
    fn hit(g: &mut Groups, pre: &RootCause, cause: RootCause, tool: Option<&str>) -> usize {
        if let Some(i) = g.file(pre, &cause, tool) {
            return i;
        }
        let l = listed(&cause, tool);
        g.add(pre, cause, tool, l)
    }

    const MODERN: Generation = Generation::Modern;

    #[test]
    fn one_mutation_on_two_tools_is_one_finding() {
        let mut g = Groups::default();
        let id = |k| {
            RootCause::new(
                Oracle::ServerError,
                MODERN,
                "tools/call",
                &[Op::Body(BodyMutation::IdType(k))],
            )
        };
        // Another tool, another JSON type for the id, ops in another
        // order before minimising: the same root cause.
        let pre_b = RootCause::new(
            Oracle::ServerError,
            MODERN,
            "tools/call",
            &[Op::Replay, Op::Body(BodyMutation::IdType(JsonKind::Null))],
        );
        let a = hit(
            &mut g,
            &id(JsonKind::Object),
            id(JsonKind::Object),
            Some("deploy"),
        );
        let b = hit(&mut g, &pre_b, id(JsonKind::Null), Some("book"));
        assert_eq!(a, b);
        assert_eq!(g.listed.len(), 1);
        assert_eq!(g.listed[0].count, 2);
        assert_eq!(g.listed[0].tools, ["deploy", "book"]);
        // The same case again on a tool seen: counted, no minimising.
        assert!(g.repeat(&pre_b, Some("book")));
        assert!(!g.repeat(&pre_b, Some("deploy")));
        assert_eq!(g.listed[0].count, 3);
        assert_eq!(g.listed[0].tools, ["deploy", "book"]);
    }

    #[test]
    fn another_method_kind_oracle_or_generation_is_another_finding() {
        let mut g = Groups::default();
        let ops = [Op::Body(BodyMutation::Truncated { at: 3 })];
        let call = RootCause::new(Oracle::ServerError, MODERN, "tools/call", &ops);
        let list = RootCause::new(Oracle::ServerError, MODERN, "tools/list", &ops);
        let legacy = RootCause::new(Oracle::ServerError, Generation::Legacy, "tools/call", &ops);
        let hang = RootCause::new(Oracle::Hang, MODERN, "tools/call", &ops);
        let truncate = RootCause::new(
            Oracle::ServerError,
            MODERN,
            "tools/call",
            &[Op::State(StateMutation::Truncate { count: 1 })],
        );
        let decline = RootCause::new(
            Oracle::ServerError,
            MODERN,
            "tools/call",
            &[Op::Answers(AnswerMutation::Decline)],
        );
        for c in [&call, &legacy, &hang, &truncate, &decline] {
            hit(&mut g, c, c.clone(), Some("deploy"));
        }
        // A `tools/list` hit names no tool.
        hit(&mut g, &list, list.clone(), None);
        assert_eq!(g.listed.len(), 6);
        assert!(g.listed.iter().all(|l| l.count == 1));
        hit(&mut g, &list, list.clone(), None);
        assert_eq!(g.listed[5].count, 2);
        assert!(g.listed[5].tools.is_empty());
    }

    /// A read that fired on the list it follows is that list's finding;
    /// another list is another (seen failing with op names as kinds: a
    /// run against `--flaw input-required-on-other-lists` filed
    /// `resources/list` twice).
    #[test]
    fn list_ops_are_told_apart_by_the_method_they_fired_on() {
        use crate::fuzz::blackbox::case::Listing;
        let mut g = Groups::default();
        let on = |method, l| {
            RootCause::new(
                Oracle::InputRequiredOutOfScope,
                MODERN,
                method,
                &[Op::List(l)],
            )
        };
        let list = on("resources/list", Listing::Resources);
        let read = on("resources/list", Listing::ResourceRead);
        let prompts = on("prompts/list", Listing::Prompts);
        for c in [&list, &read, &prompts] {
            hit(&mut g, c, c.clone(), None);
        }
        assert_eq!(g.listed.len(), 2);
        assert_eq!(g.listed[0].count, 2);
    }

    /// Seen failing before process exits were keyed apart: 3 findings.
    #[test]
    fn process_exits_are_one_finding_whatever_led_to_them() {
        let mut g = Groups::default();
        let exit = |generation, method, ops: &[Op]| {
            RootCause::new(Oracle::ProcessExited, generation, method, ops)
        };
        let a = exit(
            MODERN,
            "tools/call",
            &[Op::Answers(AnswerMutation::Decline)],
        );
        let b = exit(Generation::Legacy, "tools/list", &[Op::Replay]);
        let c = exit(MODERN, "tools/call", &[]);
        for (cause, tool) in [(a, Some("deploy")), (b, None), (c, Some("book"))] {
            hit(&mut g, &cause, cause.clone(), tool);
        }
        assert_eq!(g.listed.len(), 1);
        assert_eq!(g.listed[0].count, 3);
    }
}
