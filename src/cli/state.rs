//! `elicitkit state`: (in progress)
