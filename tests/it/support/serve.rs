//! The one way the tests start `elicitkit serve` as a child process:
//! [`cmd`] prepares it, [`start`] spawns it through the library's own
//! spawner (`elicitkit::load::exec::target::EmbeddedServer`, which `load` uses
//! for its embedded target) and waits for its `listening on` line. The
//! child is killed by PID and reaped when the handle drops.

use std::process::{Command, Stdio};

pub use elicitkit::load::exec::target::EmbeddedServer as Serve;

/// The `elicitkit` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_elicitkit");

/// `elicitkit serve --listen LISTEN` with `RUST_LOG=warn`, no state key
/// from the environment and stderr discarded; add flags, env and stderr.
pub fn cmd_on(listen: &str) -> Command {
    let mut c = Command::new(BIN);
    c.args(["serve", "--listen", listen])
        .env("RUST_LOG", "warn")
        .env_remove("ELICITKIT_STATE_KEY")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// [`cmd_on`] an ephemeral loopback port.
pub fn cmd() -> Command {
    cmd_on("127.0.0.1:0")
}

/// Starts `cmd`; panics saying why it did not come up.
pub fn start(cmd: Command) -> Serve {
    Serve::spawn(cmd).unwrap_or_else(|e| panic!("elicitkit serve did not start: {e}"))
}

/// `elicitkit serve --listen 127.0.0.1:0 --workers 1 ARGS`, started.
pub fn serve(args: &[&str]) -> Serve {
    let mut c = cmd();
    c.args(["--workers", "1"]).args(args);
    start(c)
}

/// Sends `kill -SIG PID`; whether it was delivered.
pub fn signal(pid: u32, sig: &str) -> bool {
    Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Freezes process `pid` for `frozen` of every `period` (SIGSTOP, then
/// SIGCONT), starting `after` from now, until `until` from now; it is left
/// running. A thread of its own: join it to know it thawed for good.
pub fn duty_freeze(
    pid: u32,
    after: std::time::Duration,
    frozen: std::time::Duration,
    period: std::time::Duration,
    until: std::time::Duration,
) -> std::thread::JoinHandle<()> {
    let end = std::time::Instant::now() + until;
    std::thread::spawn(move || {
        std::thread::sleep(after);
        while std::time::Instant::now() + frozen < end {
            assert!(signal(pid, "STOP"), "kill -STOP {pid}");
            std::thread::sleep(frozen);
            assert!(signal(pid, "CONT"), "kill -CONT {pid}");
            std::thread::sleep(period.saturating_sub(frozen));
        }
    })
}

/// Freezes process `pid` (SIGSTOP) `after` from now for `lasting`, then
/// thaws it (SIGCONT), on a thread of its own; join it to know it thawed.
pub fn freeze_later(
    pid: u32,
    after: std::time::Duration,
    lasting: std::time::Duration,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        assert!(signal(pid, "STOP"), "kill -STOP {pid}");
        std::thread::sleep(lasting);
        assert!(signal(pid, "CONT"), "kill -CONT {pid}");
    })
}

/// Spawns a prepared `serve` command as a plain child (stdout piped and
/// read up to its `listening on` line, within 15 s), for a test that needs
/// the child's exit status; [`start`] is the way for every other test.
/// The caller waits for or kills the child.
pub fn spawn_child(mut cmd: Command) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn elicitkit serve");
    let stdout = child.stdout.take().expect("stdout pipe");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        let url = lines.find_map(|l| {
            l.ok()
                .and_then(|l| elicitkit::load::exec::target::listening_url(&l).map(str::to_owned))
        });
        let _ = tx.send(url);
        // Drained to the end, so the child never blocks on a full pipe.
        lines.for_each(drop);
    });
    match rx.recv_timeout(std::time::Duration::from_secs(15)) {
        Ok(Some(url)) => (child, url),
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("elicitkit serve did not report its address: {other:?}");
        }
    }
}
