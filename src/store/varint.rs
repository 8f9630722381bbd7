//! Variable-length integers for the memory store's packed entries: LEB128
//! (seven bits a byte, low first), and times kept as a signed offset from a
//! base time (zigzag), so a length under 128 or an offset of a few minutes
//! takes one to three bytes where a fixed field took four or eight.

/// Appends `n`.
pub(super) fn put(b: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        b.push((n as u8) | 0x80);
        n >>= 7;
    }
    b.push(n as u8);
}

/// The number at `*at`, moving `*at` past it; `None` when `b` ends first or
/// it does not fit 64 bits.
pub(super) fn get(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        n |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte < 0x80 {
            return Some(n);
        }
    }
    None
}

/// Bytes [`put`] writes for `n`.
pub(super) fn len(n: u64) -> usize {
    (64 - n.leading_zeros() as usize).div_ceil(7).max(1)
}

/// Time `t` as an offset from `base` (either side), for [`put`].
pub(super) fn offset(base: u64, t: u64) -> u64 {
    let d = t.wrapping_sub(base) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

/// The time [`offset`] encoded.
pub(super) fn at_offset(base: u64, z: u64) -> u64 {
    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
    base.wrapping_add(d as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_offsets_read_back_in_the_bytes_counted() {
        for n in [0, 1, 127, 128, 16_383, 16_384, 645_000, u64::MAX] {
            let mut b = Vec::new();
            put(&mut b, n);
            assert_eq!(b.len(), len(n), "{n}");
            let mut at = 0;
            assert_eq!((get(&b, &mut at), at), (Some(n), b.len()));
        }
        assert_eq!(get(&[0x80], &mut 0), None, "cut short");
        let base = 1_765_000_000_000;
        for t in [base, base + 645_000, base - 5, 0, u64::MAX] {
            assert_eq!(at_offset(base, offset(base, t)), t);
        }
        assert_eq!(len(offset(base, base + 645_000)), 3);
    }
}
