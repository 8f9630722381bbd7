//! `elicitkit validate`: (in progress)
