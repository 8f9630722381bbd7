//! The skip of a probe that needs users when the target shows no sign of
//! knowing them ([`crate::discover::identity`] gathers the signs).

use super::model::Verdict;
use crate::discover::identity::LOOKED_AT;

/// The skip of a probe that needs users when the target shows none.
pub fn no_identity() -> Verdict {
    Verdict::skip(format!(
        "no sign that the server knows its users ({LOOKED_AT}); name two principals with \
         --principal and --other-principal if it has users"
    ))
}
