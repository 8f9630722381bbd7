//! What a test needs from the machine, installed on first use by
//! `tests/need.sh` (apt-get as root; otherwise a message naming the
//! command to run). A test never skips for a missing part: it installs it
//! or fails saying how to.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// What is known to be present in this process.
static PRESENT: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// Makes sure `what` is on the machine (`redis-server`, `nginx`, `openssl`,
/// `chromium`, `pyyaml`, `node`, `npm`, `script`); panics with the installer's
/// message when it cannot be had.
pub fn need(what: &'static str) {
    // Held while installing: parallel tests wait for one installer.
    let mut present = PRESENT.lock().unwrap_or_else(|e| e.into_inner());
    if present.contains(what) {
        return;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/need.sh");
    let out = Command::new(&script)
        .arg(what)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{what} is missing and was not installed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    present.insert(what);
}
