//! A server started as a command: its own process group (so everything it
//! starts goes with it), killed with the parent (`PR_SET_PDEATHSIG`), on
//! drop (a panic unwinds through it) and on Ctrl-C ([`install_cleanup`]);
//! the last bytes of its stderr are kept as evidence.

use super::StdioError;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, Once};
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How much of a child's stderr is kept (its tail).
pub const STDERR_TAIL: usize = 4096;

/// The command a stdio target is started with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Command {
    /// Program and arguments (`python server.py`).
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory (default: ours).
    pub cwd: Option<PathBuf>,
}

impl Command {
    /// A command from its argv.
    pub fn new(argv: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Command {
            argv: argv.into_iter().map(Into::into).collect(),
            ..Command::default()
        }
    }

    /// The argv as one shell-quoted line (for reports and `repro.sh`).
    pub fn display(&self) -> String {
        let mut parts: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .collect();
        parts.extend(self.argv.iter().map(|a| shell_quote(a)));
        parts.join(" ")
    }
}

/// `s` quoted for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+%".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The last [`STDERR_TAIL`] bytes a child wrote to stderr.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        if let Ok(mut t) = self.0.lock() {
            t.extend(bytes);
            let over = t.len().saturating_sub(STDERR_TAIL);
            t.drain(..over);
        }
    }

    /// The tail as text (lossy UTF-8), trimmed.
    pub fn text(&self) -> String {
        let bytes: Vec<u8> = self
            .0
            .lock()
            .map(|t| t.iter().copied().collect())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }
}

/// A running child: its pipes, its process group, its stderr tail.
pub struct Running {
    /// The process (killed on drop).
    pub child: Child,
    /// Its stdin.
    pub stdin: ChildStdin,
    /// Its stdout.
    pub stdout: ChildStdout,
    /// Its stderr tail (filled by a background task).
    pub stderr: StderrTail,
    /// Its pid, which is also its process group id.
    pub pid: u32,
}

/// Starts `cmd` with piped stdio in a new process group.
pub fn spawn(cmd: &Command) -> Result<Running, StdioError> {
    let Some((program, args)) = cmd.argv.split_first() else {
        return Err(StdioError::NoCommand);
    };
    let mut c = tokio::process::Command::new(program);
    c.args(args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(dir) = &cmd.cwd {
        c.current_dir(dir);
    }
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = c.spawn().map_err(|e| StdioError::Spawn(cmd.display(), e))?;
    let pid = child.id().unwrap_or_default();
    register(pid);
    let (Some(stdin), Some(stdout), Some(mut err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(StdioError::NoPipes);
    };
    let stderr = StderrTail::default();
    let tail = stderr.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.push(&buf[..n]);
        }
    });
    Ok(Running {
        child,
        stdin,
        stdout,
        stderr,
        pid,
    })
}

/// Process groups of children still alive, killed on Ctrl-C and on panic.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn register(pgid: u32) {
    if pgid != 0
        && let Ok(mut l) = LIVE.lock()
    {
        l.push(pgid);
    }
}

/// Kills the process group `pgid` (SIGKILL) and forgets it.
pub fn kill_group(pgid: u32) {
    if pgid == 0 {
        return;
    }
    if let Ok(mut l) = LIVE.lock() {
        l.retain(|p| *p != pgid);
    }
    let Ok(pg) = i32::try_from(pgid) else { return };
    // SAFETY: a plain syscall on a process group we started.
    unsafe {
        libc::killpg(pg, libc::SIGKILL);
    }
}

/// Kills every child group still alive.
pub fn kill_all() {
    let live: Vec<u32> = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for p in live {
        kill_group(p);
    }
}

/// Kills every child on Ctrl-C, then exits 130. Idempotent; needs a Tokio
/// runtime. (A panic unwinds through the owners, whose drop kills their
/// children; a hook would also kill the children of other threads.)
pub fn install_cleanup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tokio::spawn(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                kill_all();
                eprintln!("elicitkit: interrupted; the stdio server was stopped");
                if !CALLER_EXITS.load(std::sync::atomic::Ordering::SeqCst) {
                    std::process::exit(130);
                }
            }
        });
    });
}

static CALLER_EXITS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// On Ctrl-C, [`install_cleanup`] stops the children but leaves the exit
/// to the caller (which writes what it has first).
pub fn caller_exits_on_interrupt() {
    CALLER_EXITS.store(true, std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_what_a_shell_would_split() {
        let mut c = Command::new(["python", "my server.py", "--x=1"]);
        c.env.push(("TOKEN".into(), "a b".into()));
        assert_eq!(c.display(), "TOKEN='a b' python 'my server.py' --x=1");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_clear_error() {
        let e = spawn(&Command::new(["/nonexistent/elicitkit-no-such-server"]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("cannot start"), "{e}");
        assert!(spawn(&Command::default()).is_err());
    }

    #[tokio::test]
    async fn the_stderr_tail_keeps_the_last_bytes() {
        let t = StderrTail::default();
        t.push(&vec![b'a'; STDERR_TAIL]);
        t.push(b"the end");
        let s = t.text();
        assert_eq!(s.len(), STDERR_TAIL);
        assert!(s.ends_with("the end"));
    }
}
