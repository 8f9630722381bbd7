//! (in progress)

use super::model::Check;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    Vec::new()
}
