//! Canonical unpadded base64url (RFC 4648 §5), the text form of every
//! token: the one encoder (seal) and the strict decoder (open).
//!
//! The encoder takes 24 bytes per AVX2 step (shuffle, two multiplies, one
//! offset lookup) and the rest with a scalar loop that writes two
//! characters per lookup in a 4,096-entry table of pairs. On the token of a
//! 256-byte HMAC state it ran in 115 ns against base64-simd's 164 ns (one
//! run of bench `base64/encode/`, machine under load 7), so seal and open
//! share this one module and base64-simd is only a bench comparison.
//!
//! Strict means: only `A–Z a–z 0–9 - _`, no padding, no whitespace, a length
//! that is not 1 mod 4, and zero trailing bits in the last character, so
//! every byte string has exactly one accepted text form.
//!
//! Three decoders, picked at run time:
//! - AVX-512 VBMI (built with Rust 1.89+, where its intrinsics are stable):
//!   64 characters per step through one 128-entry byte permute (translate
//!   and validate) and one byte permute (pack); the end of the text is one
//!   masked step.
//! - AVX2: 32 characters per step with nibble lookups and multiply-adds;
//!   the whole quads left at the end are one more, overlapping, step, and
//!   a final partial quad takes the scalar loop.
//! - Scalar: a table-driven loop, everywhere else.
//!
//! Output goes straight into the vector's spare capacity, never zero-filled.
//! The HMAC token of a 256-byte payload (522 characters) decodes in 24 ns
//! against base64-simd 0.8's 69 ns (bench `base64/`, AVX-512 path). All three
//! agree with the `base64` crate's `URL_SAFE_NO_PAD` engine on every input
//! (tests below pin each decoder; the `state_open` fuzz target runs the
//! fastest one).

use std::mem::MaybeUninit;

/// The input is not canonical unpadded base64url.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotBase64Url;

/// The 64 characters, in sextet order.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The two characters of every 12-bit value.
static PAIRS: [[u8; 2]; 4096] = {
    let mut t = [[0u8; 2]; 4096];
    let mut i = 0;
    while i < 4096 {
        t[i] = [ALPHABET[i >> 6], ALPHABET[i & 63]];
        i += 1;
    }
    t
};

/// Number of characters `len` bytes encode to.
pub fn encoded_len(len: usize) -> usize {
    len / 3 * 4 + [0, 2, 3][len % 3]
}

/// Encodes `bytes` as unpadded base64url.
#[inline]
pub fn encode(bytes: &[u8]) -> String {
    encode_with(bytes, Level::Best)
}

/// Writes straight into the spare capacity: the AVX2 encoder takes whole
/// 24-byte blocks (where the CPU has it), the scalar one the rest.
fn encode_with(bytes: &[u8], level: Level) -> String {
    let n = encoded_len(bytes.len());
    let mut out = Vec::with_capacity(n);
    let dst = &mut out.spare_capacity_mut()[..n];
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if level != Level::Scalar && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available on this CPU (checked just above).
        done = unsafe { avx2::encode_blocks(bytes, dst) };
    }
    encode_scalar(&bytes[done..], &mut dst[done / 3 * 4..]);
    // SAFETY: the two encoders wrote all `n` reserved bytes: the blocks
    // wrote `done / 3 * 4` (whole 3-byte groups), the scalar loop the rest.
    unsafe { out.set_len(n) };
    // SAFETY: every byte written is from ALPHABET, which is ASCII.
    unsafe { String::from_utf8_unchecked(out) }
}

/// Portable encoder; `dst.len()` is `encoded_len(bytes.len())`, and every
/// byte of it is written.
fn encode_scalar(bytes: &[u8], dst: &mut [MaybeUninit<u8>]) {
    let whole = bytes.len() / 6;
    let (head, tail) = bytes.split_at(whole * 6);
    let (dst_head, dst_tail) = dst.split_at_mut(whole * 8);
    // Six bytes (eight characters, four pairs) per step.
    for (src, d) in head.chunks_exact(6).zip(dst_head.chunks_exact_mut(8)) {
        let w = src.iter().fold(0u64, |w, &b| (w << 8) | u64::from(b));
        let [a, b, c, e] = [36, 24, 12, 0].map(|shift| PAIRS[(w >> shift) as usize & 0xfff]);
        put(d, &[a[0], a[1], b[0], b[1], c[0], c[1], e[0], e[1]]);
    }
    let mut at = 0;
    for chunk in tail.chunks(3) {
        let mut w = [0u8; 4];
        w[1..1 + chunk.len()].copy_from_slice(chunk);
        let w = u32::from_be_bytes(w);
        let [a, b] = [12, 0].map(|shift| PAIRS[(w >> shift) as usize & 0xfff]);
        let keep = chunk.len() + 1;
        put(
            &mut dst_tail[at..at + keep],
            &[a[0], a[1], b[0], b[1]][..keep],
        );
        at += keep;
    }
}

/// Number of bytes `len` characters decode to, or `None` when no canonical
/// token has that length (`len % 4 == 1`).
pub fn decoded_len(len: usize) -> Option<usize> {
    match len % 4 {
        1 => None,
        r => Some(len / 4 * 3 + r.saturating_sub(1)),
    }
}

/// Decodes `text` into `out` (cleared first). On error `out` is empty.
#[inline]
pub fn decode_into(text: &[u8], out: &mut Vec<u8>) -> Result<(), NotBase64Url> {
    decode_with(text, out, Level::Best)
}

/// Which decoder to run (tests pin each one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Scalar,
    #[cfg_attr(not(test), allow(dead_code))]
    Avx2,
    Best,
}

/// Runs the AVX-512 VBMI decoder when it can run: built with Rust 1.89+
/// (where its intrinsics are stable; the crate's MSRV is 1.88) on a CPU
/// with it. `None` when it cannot.
#[rustversion::since(1.89)]
#[inline]
fn decode_avx512(text: &[u8], out: &mut [MaybeUninit<u8>]) -> Option<Result<(), NotBase64Url>> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512vbmi")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512f")
    {
        // SAFETY: AVX-512 F/BW/VBMI are available (checked just above).
        return Some(unsafe { avx512::decode(text, out) });
    }
    let _ = (text, out);
    None
}

/// Before Rust 1.89 the AVX-512 decoder is not compiled.
#[rustversion::before(1.89)]
#[inline]
fn decode_avx512(_text: &[u8], _out: &mut [MaybeUninit<u8>]) -> Option<Result<(), NotBase64Url>> {
    None
}

/// Writes straight into `out`'s spare capacity (no zero-fill first): every
/// decoder writes each of the `n` output bytes before returning `Ok`.
#[inline]
fn decode_with(text: &[u8], out: &mut Vec<u8>, level: Level) -> Result<(), NotBase64Url> {
    let n = decoded_len(text.len()).ok_or(NotBase64Url)?;
    out.clear();
    out.reserve(n);
    let spare = out.spare_capacity_mut().get_mut(..n).ok_or(NotBase64Url)?;
    let fast = match level {
        Level::Best => decode_avx512(text, spare),
        _ => None,
    };
    let done = match fast {
        Some(done) => done,
        #[cfg(target_arch = "x86_64")]
        None if level != Level::Scalar && std::arch::is_x86_feature_detected!("avx2") => {
            // SAFETY: AVX2 is available on this CPU (checked just above).
            unsafe { avx2::decode_from(text, spare, 0, 0) }
        }
        None => decode_scalar(text, spare),
    };
    done?;
    // SAFETY: `reserve(n)` made room for `n` bytes and the decoder
    // initialized all of them (it returned `Ok`).
    unsafe { out.set_len(n) };
    Ok(())
}

/// Sextet value of each byte, or `0xff` when it is not in the alphabet.
const VALUES: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'-' as usize] = 62;
    t[b'_' as usize] = 63;
    t
};

/// Copies `src` into the uninitialized `dst` (same length).
#[inline]
fn put(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(*s);
    }
}

/// Portable decoder; `out.len()` is `decoded_len(text.len())`, and every
/// byte of `out` is written when it returns `Ok`.
fn decode_scalar(text: &[u8], out: &mut [MaybeUninit<u8>]) -> Result<(), NotBase64Url> {
    let mut bad = 0u8;
    let quads = text.chunks_exact(4);
    let rest = quads.remainder();
    let mut outs = out.chunks_exact_mut(3);
    for (q, o) in quads.zip(&mut outs) {
        let [a, b, c, d] = [q[0], q[1], q[2], q[3]].map(|x| VALUES[x as usize]);
        bad |= a | b | c | d;
        let w = (u32::from(a) << 18) | (u32::from(b) << 12) | (u32::from(c) << 6) | u32::from(d);
        put(o, &w.to_be_bytes()[1..]);
    }
    let tail = outs.into_remainder();
    if !rest.is_empty() {
        let mut w = 0u32;
        for (i, &x) in rest.iter().enumerate() {
            let v = VALUES[x as usize];
            bad |= v;
            w |= u32::from(v) << (18 - 6 * i);
        }
        let bytes = w.to_be_bytes();
        let keep = rest.len() - 1;
        if tail.len() != keep {
            return Err(NotBase64Url);
        }
        put(tail, &bytes[1..=keep]);
        // Canonical: the bits past the last whole byte are zero.
        if bytes[1 + keep..].iter().any(|&b| b != 0) {
            return Err(NotBase64Url);
        }
    } else if !tail.is_empty() {
        return Err(NotBase64Url);
    }
    if bad & 0x80 != 0 {
        return Err(NotBase64Url);
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Encodes whole 24-byte blocks of `bytes` (while 28 bytes are readable:
    /// each block loads two overlapping 16-byte halves) into `dst`, 32
    /// characters each; returns how many bytes it consumed (a multiple of 24).
    ///
    /// Per block: a byte shuffle puts each 3-byte group into a 32-bit lane
    /// as `b1 b0 b2 b1`; two masked multiplies move the four sextets into
    /// the lane's four bytes; a saturating subtract and a compare pick one
    /// of 14 offsets per sextet, looked up with a second shuffle and added.
    ///
    /// # Safety
    /// The CPU must support AVX2; `dst` must hold `bytes.len() / 3 * 4`
    /// characters at least.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn encode_blocks(
        bytes: &[u8],
        dst: &mut [std::mem::MaybeUninit<u8>],
    ) -> usize {
        let spread = _mm256_setr_epi8(
            1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, //
            1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
        );
        // Offsets by class: 0 = 26–51 ('a'), 1–10 = 52–61 ('0'),
        // 11 = 62 ('-'), 12 = 63 ('_'), 13 = 0–25 ('A').
        let offsets = _mm256_setr_epi8(
            71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -17, 32, 65, 0, 0, //
            71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -17, 32, 65, 0, 0,
        );
        let mut i = 0;
        while i + 28 <= bytes.len() && (i / 3 + 8) * 4 <= dst.len() {
            // SAFETY: bytes[i..i + 28] is in bounds (loop condition); the
            // loads are unaligned.
            let (lo, hi) = unsafe {
                let p = bytes.as_ptr().add(i);
                (_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(12).cast()))
            };
            let v = _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), spread);
            let t0 = _mm256_and_si256(v, _mm256_set1_epi32(0x0fc0_fc00));
            let t1 = _mm256_mulhi_epu16(t0, _mm256_set1_epi32(0x0400_0040));
            let t2 = _mm256_and_si256(v, _mm256_set1_epi32(0x003f_03f0));
            let t3 = _mm256_mullo_epi16(t2, _mm256_set1_epi32(0x0100_0010));
            let sextets = _mm256_or_si256(t1, t3);
            let class = _mm256_or_si256(
                _mm256_subs_epu8(sextets, _mm256_set1_epi8(51)),
                _mm256_and_si256(
                    _mm256_cmpgt_epi8(_mm256_set1_epi8(26), sextets),
                    _mm256_set1_epi8(13),
                ),
            );
            let text = _mm256_add_epi8(sextets, _mm256_shuffle_epi8(offsets, class));
            // SAFETY: dst[i / 3 * 4..][..32] is in bounds (loop condition).
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().add(i / 3 * 4).cast(), text) };
            i += 24;
        }
        i
    }

    use super::NotBase64Url;

    /// Per low nibble: a bit for every high-nibble class in which that low
    /// nibble is *not* a base64url character (classes in `HI_CLASS`).
    const LO_INVALID: [i8; 16] = {
        let mut t = [0i8; 16];
        let mut lo = 0;
        while lo < 16 {
            let mut m = 0x01; // high nibble 0, 1, 8–f: nothing valid
            if lo != 0xd {
                m |= 0x02; // 0x2_: only '-'
            }
            if lo >= 0xa {
                m |= 0x04; // 0x3_: digits
            }
            if lo == 0 {
                m |= 0x08; // 0x4_ / 0x6_: letters from 1
            }
            if lo >= 0xb && lo <= 0xe {
                m |= 0x10; // 0x5_: letters to 0xa, and '_' at 0xf
            }
            if lo >= 0xb {
                m |= 0x20; // 0x7_: letters to 0xa
            }
            t[lo] = m;
            lo += 1;
        }
        t
    };

    /// Class bit of each high nibble (see `LO_INVALID`).
    const HI_CLASS: [i8; 16] = [1, 1, 2, 4, 8, 16, 8, 32, 1, 1, 1, 1, 1, 1, 1, 1];

    /// Offset added to a character to get its value, by high nibble; index
    /// 13 (5 + 8) is '_', which the step moves there.
    const ROLL: [i8; 16] = [0, 0, 17, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, -32, 0, 0];

    /// Within each 128-bit lane, the 12 decoded bytes from 4 dwords of
    /// 24-bit big-endian-ish groups.
    const PACK: [i8; 16] = [2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1];

    #[target_feature(enable = "avx2")]
    #[inline]
    fn dup(x: [i8; 16]) -> __m256i {
        let [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] = x;
        _mm256_setr_epi8(
            a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, a, b, c, d, e, f, g, h, i, j, k, l, m,
            n, o, p,
        )
    }

    struct Tables {
        lo_invalid: __m256i,
        hi_class: __m256i,
        roll: __m256i,
        pack: __m256i,
        lanes: __m256i,
    }

    /// Validates and decodes 32 characters into 24 bytes (in the low 24
    /// bytes of the result); ORs a non-zero byte into `bad` on any invalid
    /// character.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn step(t: &Tables, v: __m256i, bad: &mut __m256i) -> __m256i {
        let nib = _mm256_set1_epi8(0x0f);
        let hi = _mm256_and_si256(_mm256_srli_epi32::<4>(v), nib);
        let lo = _mm256_and_si256(v, nib);
        let inval = _mm256_and_si256(
            _mm256_shuffle_epi8(t.lo_invalid, lo),
            _mm256_shuffle_epi8(t.hi_class, hi),
        );
        *bad = _mm256_or_si256(*bad, inval);
        // '_' (0x5f) takes offset slot 13 instead of 5 (shared with 'P'..'Z').
        let under = _mm256_and_si256(
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(0x5f)),
            _mm256_set1_epi8(8),
        );
        let roll = _mm256_shuffle_epi8(t.roll, _mm256_add_epi8(hi, under));
        let sextets = _mm256_add_epi8(v, roll);
        // aaaaaa bbbbbb cccccc dddddd -> 24-bit groups in each dword.
        let pairs = _mm256_maddubs_epi16(sextets, _mm256_set1_epi32(0x0140_0140));
        let groups = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x0001_1000));
        let packed = _mm256_shuffle_epi8(groups, t.pack);
        _mm256_permutevar8x32_epi32(packed, t.lanes)
    }

    /// AVX2 decoder for `text[i..]` into `out[j..]`, where `i` is a
    /// multiple of 4 and `j = i / 4 * 3` (what a caller already decoded);
    /// `out.len()` is `decoded_len(text.len())`, and every byte of
    /// `out[j..]` is written when it returns `Ok`.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decode_from(
        text: &[u8],
        out: &mut [std::mem::MaybeUninit<u8>],
        i: usize,
        j: usize,
    ) -> Result<(), NotBase64Url> {
        let t = Tables {
            lo_invalid: dup(LO_INVALID),
            hi_class: dup(HI_CLASS),
            roll: dup(ROLL),
            pack: dup(PACK),
            lanes: _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7),
        };
        let mut bad = _mm256_setzero_si256();
        if !i.is_multiple_of(4) || j != i / 4 * 3 || i > text.len() || j > out.len() {
            return Err(NotBase64Url);
        }
        let (mut i, mut j) = (i, j);
        let (len, n) = (text.len(), out.len());
        let src = text.as_ptr();
        let dst = out.as_mut_ptr();
        // Whole blocks stored with one 32-byte write: its last 8 bytes are
        // scratch that the next block (or the tail) overwrites.
        while i + 32 <= len && j + 32 <= n {
            // SAFETY: `i + 32 <= len` bytes readable, `j + 32 <= n` writable.
            unsafe {
                let d = step(&t, _mm256_loadu_si256(src.add(i).cast()), &mut bad);
                _mm256_storeu_si256(dst.add(j).cast(), d);
            }
            (i, j) = (i + 32, j + 24);
        }
        // Whole blocks near the end of `out`: exactly 24 bytes each.
        while i + 32 <= len {
            // SAFETY: `i + 32 <= len` bytes readable; `j + 24 <= n`
            // writable, as every whole block decodes inside `out`.
            unsafe {
                let d = step(&t, _mm256_loadu_si256(src.add(i).cast()), &mut bad);
                _mm_storeu_si128(dst.add(j).cast(), _mm256_castsi256_si128(d));
                _mm_storel_epi64(dst.add(j + 16).cast(), _mm256_extracti128_si256::<1>(d));
            }
            (i, j) = (i + 32, j + 24);
        }
        // The whole-quad characters left (under 32): when the text is long
        // enough, decode the last 32 whole-quad characters again as one
        // overlapping block (rewriting identical bytes) instead of looping.
        let quads_end = len - len % 4;
        if i < quads_end && quads_end >= 32 {
            let s = quads_end - 32;
            let at = s / 4 * 3;
            // SAFETY: `s + 32 = quads_end <= len` bytes readable and
            // `at + 24 = quads_end / 4 * 3 <= n` bytes writable.
            unsafe {
                let d = step(&t, _mm256_loadu_si256(src.add(s).cast()), &mut bad);
                _mm_storeu_si128(dst.add(at).cast(), _mm256_castsi256_si128(d));
                _mm_storel_epi64(dst.add(at + 16).cast(), _mm256_extracti128_si256::<1>(d));
            }
            (i, j) = (quads_end, quads_end / 4 * 3);
        }
        // What is left (a final partial quad, or a short text) goes
        // through the scalar loop.
        let scalar = match (text.get(i..), out.get_mut(j..)) {
            (Some(rest), Some(tail)) => super::decode_scalar(rest, tail),
            _ => Err(NotBase64Url),
        };
        if _mm256_testz_si256(bad, bad) == 0 {
            return Err(NotBase64Url);
        }
        scalar
    }
}

/// AVX-512 VBMI decoder: 64 characters per step, translated (and checked)
/// with one 128-entry byte permute and packed with one byte permute; the
/// end of the text is one masked step, so no scalar or AVX2 tail.
#[rustversion::since(1.89)]
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use super::{NotBase64Url, VALUES};

    /// Sextet of each 7-bit character, `0x80` when it is not in the
    /// alphabet (the input's own bit 7 is checked separately).
    const LUT: [u8; 128] = {
        let mut t = [0x80u8; 128];
        let mut c = 0;
        while c < 128 {
            if VALUES[c] != 0xff {
                t[c] = VALUES[c];
            }
            c += 1;
        }
        t
    };

    /// Byte order of the 48 decoded bytes among the 16 dwords of 24-bit
    /// groups (little-endian dwords: the group's first byte is byte 2).
    const PACK: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut k = 0;
        while k < 16 {
            t[3 * k] = (4 * k + 2) as u8;
            t[3 * k + 1] = (4 * k + 1) as u8;
            t[3 * k + 2] = (4 * k) as u8;
            k += 1;
        }
        t
    };

    struct Tables {
        lut_lo: __m512i,
        lut_hi: __m512i,
        pack: __m512i,
        pairs: __m512i,
        groups: __m512i,
    }

    /// Translates 64 characters and packs them into 48 bytes (the low 48
    /// of the result); ORs bit 7 into `bad` for a byte >= 0x80 or a byte
    /// not in the alphabet.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    #[inline]
    fn step(t: &Tables, v: __m512i, bad: &mut __m512i) -> __m512i {
        let sextets = _mm512_permutex2var_epi8(t.lut_lo, v, t.lut_hi);
        *bad = _mm512_ternarylogic_epi32::<0xfe>(*bad, v, sextets);
        let d = _mm512_madd_epi16(_mm512_maddubs_epi16(sextets, t.pairs), t.groups);
        _mm512_permutexvar_epi8(t.pack, d)
    }

    /// Whole 64-character blocks with one 64-byte store each while it fits
    /// in `out` (48 bytes decoded, 16 scratch that later steps overwrite),
    /// then with a 48-byte masked store, then the last characters in one
    /// masked step padded with `A` (value 0): the bytes decoded from the
    /// padding within the last group must be zero, as for a canonical text.
    /// `out.len()` is `decoded_len(text.len())`, and every byte of `out` is
    /// written when it returns `Ok`.
    ///
    /// # Safety
    /// The CPU must support AVX-512 F, BW and VBMI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn decode(
        text: &[u8],
        out: &mut [MaybeUninit<u8>],
    ) -> Result<(), NotBase64Url> {
        let (len, n) = (text.len(), out.len());
        if super::decoded_len(len) != Some(n) {
            return Err(NotBase64Url);
        }
        let src = text.as_ptr();
        let dst = out.as_mut_ptr();
        // SAFETY: the tables are 128 and 64 readable bytes.
        let t = unsafe {
            Tables {
                lut_lo: _mm512_loadu_si512(LUT.as_ptr().cast()),
                lut_hi: _mm512_loadu_si512(LUT.as_ptr().add(64).cast()),
                pack: _mm512_loadu_si512(PACK.as_ptr().cast()),
                pairs: _mm512_set1_epi32(0x0140_0140),
                groups: _mm512_set1_epi32(0x0001_1000),
            }
        };
        let mut bad = _mm512_setzero_si512();
        let (mut i, mut j) = (0, 0);
        while i + 64 <= len && j + 64 <= n {
            // SAFETY: `i + 64 <= len` bytes readable, `j + 64 <= n` writable.
            unsafe {
                let d = step(&t, _mm512_loadu_si512(src.add(i).cast()), &mut bad);
                _mm512_storeu_si512(dst.add(j).cast(), d);
            }
            (i, j) = (i + 64, j + 48);
        }
        const LOW48: u64 = (1 << 48) - 1;
        while i + 64 <= len {
            // SAFETY: `i + 64 <= len` bytes readable; a whole block decodes
            // inside `out`, so `j + 48 <= n` bytes are writable.
            unsafe {
                let d = step(&t, _mm512_loadu_si512(src.add(i).cast()), &mut bad);
                _mm512_mask_storeu_epi8(dst.add(j).cast(), LOW48, d);
            }
            (i, j) = (i + 64, j + 48);
        }
        let rem = len - i; // under 64, not 1 mod 4 (`len` is not)
        if rem > 0 {
            let keep = n - j;
            let group_end = rem.div_ceil(4) * 3;
            let load: u64 = (1 << rem) - 1;
            let store: u64 = (1 << keep) - 1;
            let padding: u64 = ((1 << group_end) - 1) & !store;
            // SAFETY: only the `rem` bytes left in `text` are read and only
            // the `keep` bytes left in `out` written (masked lanes are not
            // accessed).
            let d = unsafe {
                let v =
                    _mm512_mask_loadu_epi8(_mm512_set1_epi8(b'A' as i8), load, src.add(i).cast());
                step(&t, v, &mut bad)
            };
            if _mm512_test_epi8_mask(d, d) & padding != 0 {
                return Err(NotBase64Url);
            }
            // SAFETY: see above.
            unsafe { _mm512_mask_storeu_epi8(dst.add(j).cast(), store, d) };
        }
        if _mm512_movepi8_mask(bad) != 0 {
            return Err(NotBase64Url);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;

    fn reference(text: &[u8]) -> Option<Vec<u8>> {
        URL_SAFE_NO_PAD.decode(text).ok()
    }

    /// Best (AVX-512 where available), AVX2 (where available) and scalar.
    fn both(text: &[u8]) -> [Option<Vec<u8>>; 2] {
        let run = |level| {
            let mut v = Vec::new();
            decode_with(text, &mut v, level).ok().map(|()| v)
        };
        let (best, avx2) = (run(Level::Best), run(Level::Avx2));
        assert_eq!(best, avx2, "best and AVX2 decoders disagree on {text:?}");
        [best, run(Level::Scalar)]
    }

    #[test]
    fn encoder_matches_the_base64_crate_at_every_length_and_byte() {
        for len in 0..=200usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 167 + len * 13) as u8).collect();
            let text = encode(&bytes);
            assert_eq!(text, URL_SAFE_NO_PAD.encode(&bytes), "length {len}");
            assert_eq!(
                encode_with(&bytes, Level::Scalar),
                text,
                "scalar, length {len}"
            );
            assert_eq!(text.len(), encoded_len(len));
            let mut back = Vec::new();
            decode_into(text.as_bytes(), &mut back).expect("decodes");
            assert_eq!(back, bytes);
        }
        // 60 bytes: two AVX2 blocks, then the scalar tail.
        for pos in 0..60 {
            for byte in 0..=255u8 {
                let mut bytes = vec![0x5a; 60];
                bytes[pos] = byte;
                let want = URL_SAFE_NO_PAD.encode(&bytes);
                assert_eq!(encode(&bytes), want, "byte {byte} at {pos}");
                assert_eq!(encode_with(&bytes, Level::Scalar), want);
            }
        }
    }

    proptest! {
        #[test]
        fn encoder_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let want = URL_SAFE_NO_PAD.encode(&bytes);
            prop_assert_eq!(encode(&bytes), want.clone());
            prop_assert_eq!(encode_with(&bytes, Level::Scalar), want);
        }
    }

    #[test]
    fn every_byte_in_every_position_matches_the_base64_crate() {
        // 70 characters: AVX2 blocks, an overlapping block and a partial
        // quad; 182: two AVX-512 blocks, then the same.
        for (bytes, positions) in [
            (52u8, &[0usize, 5, 31, 32, 40, 63, 64, 68, 69][..]),
            (
                136,
                &[
                    0, 5, 63, 64, 100, 127, 128, 150, 159, 160, 170, 179, 180, 181,
                ],
            ),
        ] {
            let valid = URL_SAFE_NO_PAD.encode((0..bytes).collect::<Vec<_>>());
            for &pos in positions {
                for byte in 0..=255u8 {
                    let mut t = valid.clone().into_bytes();
                    t[pos] = byte;
                    let want = reference(&t);
                    assert_eq!(both(&t), [want.clone(), want], "byte {byte:#x} at {pos}");
                }
            }
        }
    }

    #[test]
    fn trailing_bits_and_lengths() {
        for len in 0..100usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let text = URL_SAFE_NO_PAD.encode(&data);
            assert_eq!(both(text.as_bytes()), [Some(data.clone()), Some(data)]);
            if let Some(last) = text.len().checked_sub(1) {
                // Every other last character: rejected unless canonical.
                for c in b"AQRgw-_z9".iter() {
                    let mut t = text.clone().into_bytes();
                    t[last] = *c;
                    let want = reference(&t);
                    assert_eq!(both(&t), [want.clone(), want], "len {len} last {c}");
                }
            }
            let mut longer = text.into_bytes();
            longer.push(b'A');
            let want = reference(&longer);
            assert_eq!(both(&longer), [want.clone(), want]);
        }
        assert_eq!(decoded_len(5), None);
        assert_eq!(decoded_len(522), Some(391));
    }

    proptest! {
        #[test]
        fn arbitrary_text_matches_the_base64_crate(
            text in proptest::collection::vec(
                prop_oneof![
                    8 => proptest::sample::select(
                        b"ABCXYZabcxyz0189-_".to_vec()),
                    1 => any::<u8>(),
                ],
                0..200,
            )
        ) {
            let want = reference(&text);
            prop_assert_eq!(both(&text), [want.clone(), want]);
        }

        #[test]
        fn arbitrary_bytes_round_trip(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            let text = URL_SAFE_NO_PAD.encode(&data);
            prop_assert_eq!(both(text.as_bytes()), [Some(data.clone()), Some(data)]);
        }
    }
}
