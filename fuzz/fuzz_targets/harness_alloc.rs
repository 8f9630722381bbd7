//! The harness targets' allocator. A session is mostly allocation (JSON
//! trees on both sides of every request): mimalloc ran the serve_mrtr
//! corpus 1.22-1.36x faster than glibc's malloc. Under AddressSanitizer
//! (`-s address`, cargo-fuzz's default) the system allocator stays, so
//! ASan still sees every heap access.

#[cfg(not(sanitize = "address"))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
