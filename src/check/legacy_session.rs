//! (in progress)

use super::discover::CheckError;
use super::model::Check;
use super::probe::{Settings, Target};
use crate::protocol::Generation;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    Vec::new()
}

/// Discovers a 2025-11-25 target.
pub async fn discover_legacy(
    settings: Settings,
    http: reqwest::Client,
) -> Result<Target, CheckError> {
    Ok(Target::new(settings, http, Generation::Legacy))
}
