//! What the memory store counts for each heap part it keeps: the size
//! class the allocator gives it, shared by records and claims.

/// What an allocation of `n` bytes costs with mimalloc (the allocator
/// `serve` runs on): a multiple of 8 up to 64 bytes, then four size classes
/// per doubling. What the store counts for each heap part.
pub(super) fn heap_bytes(n: usize) -> u64 {
    let words = (n as u64).div_ceil(8);
    if words <= 8 {
        return words * 8;
    }
    let step = 1 << ((words - 1).ilog2() - 2);
    words.div_ceil(step) * step * 8
}
