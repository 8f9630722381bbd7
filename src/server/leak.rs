//! [`super::flaw::Flaw::Leak`]: what the leaking server keeps. Each
//! completed `tools/call` adds a block of memory (written, so it is
//! resident) and an open descriptor (`/dev/null`), never freed, up to fixed
//! caps so a forgotten `serve --flaw leak` cannot take the machine down.

use std::sync::Mutex;

/// Memory kept per completed call.
pub const BLOCK: usize = 128 * 1024;
/// Most memory kept in all (2048 calls' worth).
pub const MAX_BYTES: usize = 256 * 1024 * 1024;
/// Most descriptors kept.
pub const MAX_FDS: usize = 256;

/// The memory and descriptors the leaking server keeps.
#[derive(Debug, Default)]
pub struct Hoard {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    blocks: Vec<Box<[u8]>>,
    files: Vec<std::fs::File>,
}

impl Hoard {
    /// Keeps one more block and descriptor, each while under its cap.
    pub fn keep_one(&self) {
        let mut k = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if k.blocks.len() * BLOCK < MAX_BYTES {
            // Non-zero bytes: every page is touched, so it counts in RSS.
            k.blocks.push(vec![0xA5u8; BLOCK].into_boxed_slice());
        }
        if k.files.len() < MAX_FDS
            && let Ok(f) = std::fs::File::open("/dev/null")
        {
            k.files.push(f);
        }
    }

    /// Bytes and descriptors kept so far.
    #[cfg(test)]
    pub fn kept(&self) -> (usize, usize) {
        let k = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        (k.blocks.len() * BLOCK, k.files.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hoard_grows_per_call_and_stops_at_its_caps() {
        let h = Hoard::default();
        h.keep_one();
        h.keep_one();
        assert_eq!(h.kept(), (2 * BLOCK, 2));
        for _ in 0..MAX_BYTES / BLOCK + 10 {
            h.keep_one();
        }
        assert_eq!(h.kept(), (MAX_BYTES, MAX_FDS));
    }
}
