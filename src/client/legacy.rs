//! The 2025-11-25 client (in progress).
