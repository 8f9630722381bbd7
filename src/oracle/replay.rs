//! Replay of a completed request (S8): the same `requestState` and
//! `inputResponses` sent again must not complete again. For a tool known
//! to be single-use that is an error; elsewhere a warning, since the server
//! cannot know the action may not repeat (`check --single-use NAME` and the
//! tool's annotations say it must not).

use crate::findings::Severity;

/// How bad a request completing more than once is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Twice {
    /// A single-use tool repeated its action: an error.
    SingleUse,
    /// A tool not known to be single-use completed again: a warning.
    MayRepeat,
}

impl Twice {
    /// The severity it is reported at: MUST for a single-use tool,
    /// SHOULD elsewhere.
    pub fn severity(self) -> Severity {
        match self {
            Twice::SingleUse => Severity::Must,
            Twice::MayRepeat => Severity::Should,
        }
    }
}

/// The judgement on one request (the same state and answers) that
/// completed `completions` times; `None` at most once.
pub fn judge(single_use: bool, completions: usize) -> Option<Twice> {
    match completions {
        0 | 1 => None,
        _ if single_use => Some(Twice::SingleUse),
        _ => Some(Twice::MayRepeat),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_completion_is_an_error_for_single_use_tools_only() {
        assert_eq!(judge(true, 1), None);
        assert_eq!(judge(false, 0), None);
        assert_eq!(judge(true, 2), Some(Twice::SingleUse));
        assert_eq!(judge(false, 3), Some(Twice::MayRepeat));
    }
}
