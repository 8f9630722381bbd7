//! Validators (in progress).
