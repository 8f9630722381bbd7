//! The embedded target: `elicitkit serve` started as a child process on
//! 127.0.0.1 (so its CPU time can be read from `/proc/<pid>/stat`), and
//! CPU-time readers for any local process.
//!
//! The child is killed when the [`EmbeddedServer`] is dropped, so every path
//! out of a run (success, error, panic unwinding) ends it. It runs in a
//! process group of its own: a terminal's Ctrl-C (SIGINT to the foreground
//! group) stops the load run, which then stops the server itself, instead of
//! killing the target under a run that would report it dead.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Why the embedded server did not start.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The binary could not be found or spawned.
    #[error("cannot start the embedded server ({exe}): {why}")]
    Spawn {
        /// The executable.
        exe: String,
        /// Why.
        why: String,
    },
    /// It printed no `listening on` line in time.
    #[error("the embedded server did not report its address within {0:?}: {1}")]
    NoAddress(Duration, String),
    /// It exited before listening: its status and what it said.
    #[error("the embedded server exited before listening, {0}")]
    Exited(String),
}

/// Most lines of a child's stderr kept for its error message.
const TAIL_LINES: usize = 5;

/// Drains a child's stderr to its end on a thread of its own, keeping the
/// last [`TAIL_LINES`] lines (joined by "; ") for the thread's result: a
/// server that exits at once said why there, and one that runs never
/// blocks on a full pipe.
fn stderr_tail(err: std::process::ChildStderr) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut tail = std::collections::VecDeque::with_capacity(TAIL_LINES);
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line.trim().to_owned());
        }
        tail.into_iter()
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// A running `elicitkit serve` child process.
#[derive(Debug)]
pub struct EmbeddedServer {
    child: Child,
    base_url: String,
}

impl EmbeddedServer {
    /// Starts `exe serve --listen 127.0.0.1:0 --workers N [extra...]` and
    /// waits (at most 15 s) for its `listening on URL` line.
    pub fn start(exe: PathBuf, workers: usize, extra: &[String]) -> Result<Self, TargetError> {
        let mut cmd = Command::new(&exe);
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--workers")
            .arg(workers.max(1).to_string())
            .args(extra)
            .stdin(Stdio::null())
            // Read by a drain that keeps the last lines: what `serve` said
            // when it exits before listening (a bad --serve-arg).
            .stderr(Stdio::piped());
        own_process_group(&mut cmd);
        die_with_parent(&mut cmd);
        Self::spawn(cmd)
    }

    /// Starts a prepared `elicitkit serve` command (its stdout is taken over;
    /// everything else is the caller's) and waits (at most 15 s) for its
    /// `listening on URL` line. The one way a `serve` child is started, here
    /// and in the integration tests.
    pub fn spawn(cmd: Command) -> Result<Self, TargetError> {
        Self::spawn_within(cmd, Duration::from_secs(15))
    }

    /// [`EmbeddedServer::spawn`], waiting at most `wait` for the line (for
    /// any server with the same launch contract).
    pub fn spawn_within(mut cmd: Command, wait: Duration) -> Result<Self, TargetError> {
        let exe = cmd.get_program().to_string_lossy().into_owned();
        cmd.stdout(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| TargetError::Spawn {
            exe: exe.clone(),
            why: e.to_string(),
        })?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TargetError::Spawn {
                exe,
                why: "no stdout pipe".into(),
            });
        };
        let said = child.stderr.take().map(stderr_tail);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if let Some(url) = listening_url(&line) {
                            let _ = tx.send(Some(url.to_owned()));
                            // Keep draining so the child never blocks on a full pipe.
                            let mut sink = String::new();
                            while matches!(reader.read_line(&mut sink), Ok(n) if n > 0) {
                                sink.clear();
                            }
                            return;
                        }
                    }
                }
            }
        });
        let mut server = EmbeddedServer {
            child,
            base_url: String::new(),
        };
        match rx.recv_timeout(wait) {
            Ok(Some(url)) => {
                server.base_url = url.trim_end_matches('/').to_owned();
                Ok(server)
            }
            Ok(None) => {
                // Its exit and its last words (the drain reads to the end).
                let status = server.child.wait().ok();
                let status = match status.and_then(|s| s.code()) {
                    Some(c) => format!("with status {c}"),
                    None => "on a signal".to_owned(),
                };
                let words = said
                    .and_then(|t| t.join().ok())
                    .filter(|w| !w.is_empty())
                    .map_or_else(
                        || "; try `elicitkit serve` by hand".to_owned(),
                        |w| format!(": {w}"),
                    );
                Err(TargetError::Exited(format!("{status}{words}")))
            }
            Err(_) => Err(TargetError::NoAddress(wait, "timed out".into())),
        }
        // `server` drops (and kills the child) on the error paths.
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url)
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the child runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// CPU seconds (user + system) the child has used.
    pub fn cpu_seconds(&self) -> Option<f64> {
        process_cpu_seconds(self.child.id())
    }

    /// Kills the child and reaps it.
    pub fn stop(mut self) {
        self.kill();
    }

    /// SIGKILL now (no shutdown, no flush) and reap; a no-op once it ended.
    pub fn kill(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The base URL in `serve`'s one stdout line, `listening on http://IP:PORT`.
pub fn listening_url(line: &str) -> Option<&str> {
    line.trim().strip_prefix("listening on ")
}

/// Puts the child in a process group of its own (Unix), out of reach of
/// the terminal's SIGINT.
#[cfg(unix)]
fn own_process_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(not(unix))]
fn own_process_group(_cmd: &mut Command) {}

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on
/// every mainstream Linux build).
const USER_HZ: f64 = 100.0;

/// Asks the kernel to stop the child (SIGTERM) when the thread that
/// spawned it dies, so a load run killed with SIGKILL leaves no server
/// behind (Linux; elsewhere the child is only stopped by [`Drop`]).
/// `EmbeddedServer::start` runs on the thread that drives the whole run.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure calls only prctl and
    // getppid (async-signal-safe) and allocates nothing (no boxed errors).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// How long the target keeps what a finished round trip leaves behind, as
/// the reference server publishes it in `/stats` (`retention.keeps_for_s`,
/// asked as bearer `token`); `None` when the target does not say (another
/// server, or `/stats` refused).
pub async fn keeps_for(http: &reqwest::Client, mcp_url: &str, token: &str) -> Option<Duration> {
    let mut url = url::Url::parse(mcp_url).ok()?;
    url.set_path("/stats");
    url.set_query(None);
    let reply = http
        .get(url)
        .bearer_auth(token)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?;
    if !reply.status().is_success() {
        return None;
    }
    let v: serde_json::Value = reply.json().await.ok()?;
    let s = v.get("retention")?.get("keeps_for_s")?.as_f64()?;
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s))
}

/// CPU seconds (utime + stime) of a process, from `/proc/<pid>/stat`.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_cpu(&stat)
}

/// CPU seconds of the target: the embedded server and every `--cpu-pid`
/// (`None` when there is neither, or one cannot be read).
pub fn target_cpu(server: Option<&EmbeddedServer>, pids: &[u32]) -> Option<f64> {
    let mut total = match server {
        Some(s) => Some(s.cpu_seconds()?),
        None => None,
    };
    for &p in pids {
        total = Some(total.unwrap_or(0.0) + process_cpu_seconds(p)?);
    }
    total
}

/// CPU seconds of this process.
pub fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_cpu(&stat)
}

/// CPU seconds the whole host has been busy (every core's user, nice,
/// system, irq, softirq and steal time from `/proc/stat`), for the load of
/// the processes beside a run.
pub fn host_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_host_busy(&stat)
}

/// The busy seconds of `/proc/stat`'s aggregate `cpu` line.
pub fn parse_host_busy(stat: &str) -> Option<f64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    // user nice system idle iowait irq softirq steal …
    let busy =
        f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)? + f.get(7).unwrap_or(&0.0);
    Some(busy / USER_HZ)
}

/// Reads utime + stime (fields 14 and 15) from a `/proc/<pid>/stat` line.
pub fn parse_stat_cpu(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces and parentheses: split after
    // its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime is field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// The process listening on a loopback URL's port (`127.0.0.1`, `::1`,
/// `localhost`), with how it was found (`listener of 127.0.0.1:PORT`);
/// `None` for another host or when no process of this user listens there.
pub fn loopback_listener(url: &str) -> Option<(u32, String)> {
    let u = url::Url::parse(url).ok()?;
    let loopback = match u.host()? {
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
        url::Host::Domain(d) => d == "localhost",
    };
    let port = u.port_or_known_default().filter(|_| loopback)?;
    listener_pid(port).map(|p| (p, format!("listener of 127.0.0.1:{port}")))
}

/// Programs that listen for a server rather than serve it: reverse
/// proxies, TLS terminators, port forwarders and container port proxies.
const PROXIES: [&str; 18] = [
    "nginx",
    "haproxy",
    "envoy",
    "caddy",
    "traefik",
    "docker-proxy",
    "rootlessport",
    "socat",
    "stunnel",
    "stunnel4",
    "varnishd",
    "httpd",
    "apache2",
    "lighttpd",
    "kubectl",
    "ssh",
    "slirp4netns",
    "gvproxy",
];

/// The program `pid` runs (`/proc/PID/comm`) when it is a proxy in front
/// of the server (see [`PROXIES`]), not the server itself.
pub fn proxy_program(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let comm = comm.trim();
    // nginx's and haproxy's workers rename themselves ("nginx: worker").
    let program = comm.split([':', ' ']).next().unwrap_or(comm);
    PROXIES.contains(&program).then(|| program.to_owned())
}

/// The process listening on TCP `port` (any local address), found through
/// `/proc/net/tcp`, `/proc/net/tcp6` and the `socket:[INODE]` links under
/// `/proc/*/fd` (only processes this user may inspect); the lowest such PID.
pub fn listener_pid(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).ok().is_some_and(|l| {
                l.to_str()
                    .and_then(|l| l.strip_prefix("socket:[")?.strip_suffix(']'))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|ino| inodes.contains(&ino))
            })
        })
    })
}

/// The socket inodes in LISTEN state (`0A`) on local `port` of a
/// `/proc/net/tcp` (or `tcp6`) table.
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = u16::from_str_radix(f.get(1)?.rsplit_once(':')?.1, 16).ok()?;
            (local_port == port && *f.get(3)? == "0A")
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_are_found_by_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0 20 4 30 10 -1
   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0 100 0 0 10 0
";
        assert_eq!(listening_inodes(table, 8080), vec![4242], "LISTEN only");
        assert_eq!(listening_inodes(table, 80), vec![99]);
        assert!(listening_inodes(table, 81).is_empty());
    }

    #[test]
    fn our_own_listener_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(listener_pid(port), Some(std::process::id()));
        drop(l);
    }

    #[test]
    fn stat_cpu_fields() {
        let line =
            "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_stat_cpu(line), Some(3.0));
        assert_eq!(parse_stat_cpu("garbage"), None);
        assert_eq!(parse_stat_cpu("1 (x) S 1"), None);
        assert!(own_cpu_seconds().is_some());
    }
}
