//! A black-box case: one tool of one generation and a short list of
//! [`Op`]s, the [`super::super::mutation`] changes plus replays, derived
//! from `(seed, index)` alone, so a `--seed` reproduces the run's cases.

use arbitrary::{Arbitrary, Unstructured};
use rand::{RngCore, SeedableRng, rngs::StdRng};

use crate::fuzz::mutation::{AnswerMutation, BodyMutation, HeaderMutation, StateMutation};
use crate::protocol::{ClientCapabilities, Generation};

/// One change to a flow, or one extra send of its valid retry.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// Change the retry's `requestState` (applied in order).
    State(StateMutation),
    /// Change the retry's `inputResponses` (2025-11-25: a decline or
    /// cancel becomes the answer to `elicitation/create`).
    Answers(AnswerMutation),
    /// Change the request's headers.
    Header(HeaderMutation),
    /// Change the request's JSON text.
    Body(BodyMutation),
    /// Send the retry with the other principal's credentials.
    OtherPrincipal,
    /// Afterwards, send the valid retry again (a new id).
    Replay,
    /// Afterwards, send `2 + copies % 4` valid retries at once.
    Concurrent {
        /// Copies, modulo.
        copies: u8,
    },
    /// Declare these capabilities (instead of every mode) on every request
    /// of the flow (2026-07-28 `_meta`, 2025-11-25 `initialize`), so an
    /// input request for a mode the client did not declare is seen for what
    /// it is. The last one of a case counts.
    Caps(Declared),
    /// First, send this list or discovery request on the flow (with the
    /// case's capabilities), judged by the per-reply rules: `input_required`
    /// is for `tools/call`, `prompts/get` and `resources/read` only (S1).
    List(Listing),
}

/// A list or discovery request a case sends ([`Op::List`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Listing {
    /// `server/discover` (2026-07-28 only).
    Discover,
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
    /// `prompts/get` of the first prompt `prompts/list` names.
    PromptGet,
    /// `resources/read` of the first resource `resources/list` names.
    ResourceRead,
}

impl Listing {
    /// The JSON-RPC method it sends last.
    pub fn method(self) -> &'static str {
        match self {
            Listing::Discover => "server/discover",
            Listing::Tools => "tools/list",
            Listing::Prompts => "prompts/list",
            Listing::Resources => "resources/list",
            Listing::Templates => "resources/templates/list",
            Listing::PromptGet => "prompts/get",
            Listing::ResourceRead => "resources/read",
        }
    }

    /// The list whose first entry it reads or gets, if it follows one.
    pub fn follows(self) -> Option<Listing> {
        match self {
            Listing::PromptGet => Some(Listing::Prompts),
            Listing::ResourceRead => Some(Listing::Resources),
            _ => None,
        }
    }
}

/// The client capabilities a case may declare: the five spellings the
/// capability rule tells apart (§2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Declared {
    /// `{}`: no `elicitation` key, so no elicitation at all.
    None,
    /// `{elicitation:{}}`: form only (the backward-compatible spelling).
    Empty,
    /// `{elicitation:{form:{}}}`.
    FormOnly,
    /// `{elicitation:{url:{}}}`.
    UrlOnly,
    /// `{elicitation:{form:{},url:{}}}` (what a case without this op declares).
    Both,
}

impl Declared {
    /// The capabilities as sent.
    pub fn capabilities(self) -> ClientCapabilities {
        match self {
            Declared::None => ClientCapabilities::none(),
            Declared::Empty => ClientCapabilities::elicitation_empty(),
            Declared::FormOnly => ClientCapabilities::with_modes(true, false),
            Declared::UrlOnly => ClientCapabilities::with_modes(false, true),
            Declared::Both => ClientCapabilities::with_modes(true, true),
        }
    }

    /// Stable short name, e.g. `form_only`.
    pub fn name(self) -> &'static str {
        match self {
            Declared::None => "none",
            Declared::Empty => "empty",
            Declared::FormOnly => "form_only",
            Declared::UrlOnly => "url_only",
            Declared::Both => "both",
        }
    }
}

impl Op {
    /// Its kind, as a root cause counts it ([`super::group`]): the name,
    /// but every [`Op::List`] is one kind `list` (the method the oracle
    /// fired on tells them apart; a `prompts/get` op that fired on its
    /// `prompts/list` is that list's finding).
    pub fn kind(&self) -> String {
        match self {
            Op::List(_) => "list".into(),
            _ => self.name(),
        }
    }

    /// Stable short name, e.g. `state:flip_char`.
    pub fn name(&self) -> String {
        match self {
            Op::State(m) => format!("state:{}", m.name()),
            Op::Answers(m) => format!("answers:{}", m.name()),
            Op::Header(m) => format!("header:{}", m.name()),
            Op::Body(m) => format!("body:{}", m.name()),
            Op::OtherPrincipal => "other_principal".into(),
            Op::Replay => "replay".into(),
            Op::Concurrent { .. } => "concurrent".into(),
            Op::Caps(d) => format!("caps:{}", d.name()),
            Op::List(l) => format!("list:{}", l.method().replace('/', "_")),
        }
    }
}

/// The capabilities a case declares: its last [`Op::Caps`], else every
/// mode.
pub fn declared(ops: &[Op]) -> ClientCapabilities {
    ops.iter()
        .rev()
        .find_map(|o| match o {
            Op::Caps(d) => Some(d.capabilities()),
            _ => None,
        })
        .unwrap_or_else(|| Declared::Both.capabilities())
}

/// Most ops in a case.
pub const MAX_OPS: usize = 5;

/// One generated case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Its number in the run (with the seed, all it takes to rebuild it).
    pub index: u64,
    /// The generation it speaks.
    pub generation: Generation,
    /// Index into the generation's tools.
    pub tool: usize,
    /// The changes, in order.
    pub ops: Vec<Op>,
}

/// Case `index` of a run with `seed`, over `tools[g]` tools per generation
/// in `gens` (every fourth case goes to 2025-11-25 when both are spoken).
/// `None` when no generation has a tool.
pub fn generate(seed: u64, index: u64, gens: &[(Generation, usize)]) -> Option<Case> {
    let usable: Vec<(Generation, usize)> = gens.iter().copied().filter(|(_, n)| *n > 0).collect();
    if usable.is_empty() {
        return None;
    }
    let (generation, tools) = if usable.len() > 1 && index % 4 == 3 {
        usable[1]
    } else {
        usable[0]
    };
    let mut rng = StdRng::seed_from_u64(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut bytes = [0u8; 1024];
    rng.fill_bytes(&mut bytes);
    let n = 1 + (rng.next_u32() as usize % MAX_OPS);
    let tool = rng.next_u32() as usize % tools;
    let mut u = Unstructured::new(&bytes);
    let ops = (0..n).filter_map(|_| Op::arbitrary(&mut u).ok()).collect();
    Some(Case {
        index,
        generation,
        tool,
        ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_follow_the_seed() {
        let g = [(Generation::Modern, 3), (Generation::Legacy, 2)];
        let a: Vec<_> = (0..50).filter_map(|i| generate(7, i, &g)).collect();
        let b: Vec<_> = (0..50).filter_map(|i| generate(7, i, &g)).collect();
        let c: Vec<_> = (0..50).filter_map(|i| generate(8, i, &g)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(
            a.iter()
                .all(|c| !c.ops.is_empty() && c.ops.len() <= MAX_OPS)
        );
        assert!(a.iter().any(|c| c.generation == Generation::Legacy));
        let kinds: std::collections::BTreeSet<String> = a
            .iter()
            .flat_map(|c| c.ops.iter().map(|o| o.name()))
            .collect();
        assert!(kinds.len() > 10, "{kinds:?}");
        assert!(generate(1, 0, &[(Generation::Modern, 0)]).is_none());
    }

    /// Every list and discovery request comes up within a short run.
    #[test]
    fn cases_send_every_list_request() {
        let g = [(Generation::Modern, 3)];
        let seen: std::collections::BTreeSet<&str> = (0..400)
            .filter_map(|i| generate(1, i, &g))
            .flat_map(|c| c.ops)
            .filter_map(|o| match o {
                Op::List(l) => Some(l.method()),
                _ => None,
            })
            .collect();
        assert_eq!(seen.len(), 7, "{seen:?}");
    }

    /// Every capability variant comes up within a short run, and the last
    /// one of a case is what it declares.
    #[test]
    fn cases_cycle_the_declared_capabilities() {
        let g = [(Generation::Modern, 3)];
        let seen: std::collections::BTreeSet<String> = (0..400)
            .filter_map(|i| generate(1, i, &g))
            .flat_map(|c| c.ops)
            .filter(|o| matches!(o, Op::Caps(_)))
            .map(|o| o.name())
            .collect();
        let all = ["none", "empty", "form_only", "url_only", "both"];
        assert_eq!(seen.len(), all.len(), "{seen:?}");
        for d in all {
            assert!(seen.contains(&format!("caps:{d}")), "{d}: {seen:?}");
        }
        let ops = [
            Op::Caps(Declared::UrlOnly),
            Op::Replay,
            Op::Caps(Declared::None),
        ];
        assert!(!declared(&ops).elicit_modes().any());
        assert!(declared(&ops).elicitation.is_none());
        let m = declared(&[Op::Caps(Declared::Empty)]).elicit_modes();
        assert!(m.form && !m.url);
        let m = declared(&[Op::Replay]).elicit_modes();
        assert!(m.form && m.url);
    }
}
