//! elicitkit's integration tests: one crate, so the whole library and its
//! dependencies are linked once. A module per family; run one family with
//! `cargo test --test it load::` (module paths are matched as substrings:
//! `server::cli::` is one file).
//!
//! | family | what it drives |
//! |---|---|
//! | `check` | `elicitkit check` and its probes against `serve --flaw …` |
//! | `client` | the MRTR and 2025-11-25 clients, the h1 pool |
//! | `fuzz` | harnesses, committed corpora, `elicitkit fuzz --target` |
//! | `help` | every command's `--help`: groups, examples, narrow terminals |
//! | `imports` | `src/`'s imports: no circle in a folder, none up the layers of `src/lib.rs` |
//! | `interop` | `check` and `load` against the SDK servers (`tests/interop/`) |
//! | `load` | `elicitkit load`: plans, shapes, capacity, segments, instances, reports |
//! | `schema` | schema fixtures and generated forms |
//! | `server` | the reference server: both generations, defences, stores, cluster |
//! | `state` | sealed `requestState` known answers and tokens |
//! | `store` | the exactly-once store contract on every backend |
//! | `validate` | `elicitkit validate` on fixture messages |
//!
//! `support` holds what they share: the one `elicitkit serve` spawner, the
//! installer for what a test needs from the machine, Redis/nginx clusters,
//! the interop launcher and the request helpers.

mod support;

mod check;
mod client;
mod fuzz;
mod help;
mod https;
mod imports;
mod interop;
mod load;
mod schema;
mod server;
mod state;
mod store;
mod validate;
