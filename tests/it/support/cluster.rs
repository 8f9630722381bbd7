//! Shared helpers for the scale-out tests: a real `redis-server`, a real
//! `nginx` rendered from `loadtests/nginx/elicitkit.conf.template`, and
//! `elicitkit serve` child processes, all on 127.0.0.1, each in its own temp
//! dir and stopped by PID when its guard drops. A missing `redis-server` or
//! `nginx` is installed first (`support::need`); nothing is skipped.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (SIGKILL, by its PID) and reaped on drop.
pub struct Proc {
    child: Option<Child>,
    what: &'static str,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGKILL now (no shutdown, no flush) and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM by PID (graceful for nginx), then wait up to 5 s, then SIGKILL.
    pub fn term(&mut self) {
        if let Some(c) = &self.child {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
        }
        let end = Instant::now() + Duration::from_secs(5);
        while let Some(c) = &mut self.child {
            if matches!(c.try_wait(), Ok(Some(_))) || Instant::now() > end {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.is_some() {
            eprintln!("stopping {} (pid {})", self.what, self.pid());
        }
        self.kill();
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn wait_for_port(port: u16, what: &str, child: &mut Child, log: &Path) {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(st)) = child.try_wait() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{what} exited ({st}) before listening on {port}:\n{text}");
        }
        assert!(
            Instant::now() < end,
            "{what} did not listen on 127.0.0.1:{port} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A private `redis-server`: loopback, a free port, its files in a temp
/// dir; durable enough for `serve` (an append-only file, fsync every
/// second), or with no persistence at all ([`Redis::volatile`]).
pub struct Redis {
    pub port: u16,
    pub proc: Proc,
    persistence: Vec<String>,
    dir: tempfile::TempDir,
}

impl Redis {
    /// With an append-only file (`--appendonly yes --appendfsync everysec`).
    pub fn start() -> Redis {
        Redis::with(&["--appendonly", "yes", "--appendfsync", "everysec"])
    }

    /// [`Redis::start`] with `extra` settings (e.g. `--maxmemory-policy
    /// allkeys-lru`).
    pub fn durable_with(extra: &[&str]) -> Redis {
        let mut args = vec!["--appendonly", "yes", "--appendfsync", "everysec"];
        args.extend_from_slice(extra);
        Redis::with(&args)
    }

    /// Keeping nothing across a restart (`--save '' --appendonly no`).
    pub fn volatile() -> Redis {
        Redis::with(&["--save", "", "--appendonly", "no"])
    }

    fn with(persistence: &[&str]) -> Redis {
        super::need::need("redis-server");
        let dir = tempfile::tempdir().expect("tempdir");
        let persistence: Vec<String> = persistence.iter().map(|a| (*a).to_owned()).collect();
        let port = free_port();
        let proc = Redis::spawn(port, &persistence, dir.path());
        Redis {
            port,
            proc,
            persistence,
            dir,
        }
    }

    fn spawn(port: u16, persistence: &[String], dir: &Path) -> Proc {
        let log = dir.join("redis.log");
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(persistence)
            .args(["--daemonize", "no"])
            .arg("--dir")
            .arg(dir)
            .arg("--logfile")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        wait_for_port(port, "redis-server", &mut child, &log);
        Proc {
            child: Some(child),
            what: "redis-server",
        }
    }

    /// SIGKILL and start again on the same port, directory and settings
    /// (a volatile one comes back empty).
    pub fn restart(&mut self) {
        self.proc.kill();
        self.proc = Redis::spawn(self.port, &self.persistence, self.dir.path());
    }

    /// `redis://127.0.0.1:PORT/DB`.
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// A plain client connection to database `db` (for FLUSHDB and counting).
    pub fn conn(&self, db: u8) -> redis::Connection {
        redis::Client::open(self.url(db))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(3)))
            .expect("redis connection")
    }
}

/// A key ring file (one current key) in `dir`, as `serve --key-file` reads it.
pub fn key_file(dir: &Path, name: &str, key: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("1:{key}\n")).expect("write key file");
    p
}

/// Two distinct 32-byte keys, base64url.
pub const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
pub const KEY_B: &str = "HxwdHh8aGxwdHh8QERITFBUWFxgZGhscHR4fAAECAwQ";

/// One `elicitkit serve` child.
pub struct Serve {
    pub base: String,
    pub port: u16,
    pub id: String,
    pub proc: super::serve::Serve,
}

impl Serve {
    /// Starts `serve` on `port` (0: any) with `store`, the key ring file
    /// `keys`, `--instance-id id`, and `extra` flags; waits for its
    /// `listening on` line. Logs go to `dir/<id>.log`.
    pub fn start(
        dir: &Path,
        id: &str,
        port: u16,
        store: &str,
        keys: &Path,
        extra: &[&str],
    ) -> Serve {
        let log = std::fs::File::create(dir.join(format!("{id}.log"))).expect("log file");
        let mut cmd = super::serve::cmd_on(&format!("127.0.0.1:{port}"));
        cmd.args(["--workers", "2", "--store", store, "--instance-id", id])
            .arg("--key-file")
            .arg(keys)
            .args(extra)
            .stderr(log);
        let proc = super::serve::Serve::spawn(cmd).unwrap_or_else(|e| {
            let text = std::fs::read_to_string(dir.join(format!("{id}.log")));
            panic!("serve {id} did not start: {e} {text:?}");
        });
        let base = proc.base_url().to_owned();
        let port = base.rsplit(':').next().unwrap().parse().unwrap();
        Serve {
            base,
            port,
            id: id.to_owned(),
            proc,
        }
    }
}

impl Serve {
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }
}

/// `n` `serve` instances `i0`, `i1`, … on any free ports, sharing Redis
/// database 0 of `redis` and one key ring file (`KEY_A`) in `dir`, each
/// with `extra` flags.
pub fn instances_on(redis: &Redis, dir: &Path, n: usize, extra: &[&str]) -> Vec<Serve> {
    let keys = key_file(dir, "keys", KEY_A);
    (0..n)
        .map(|i| Serve::start(dir, &format!("i{i}"), 0, &redis.url(0), &keys, extra))
        .collect()
}

/// `127.0.0.1:PORT` of each instance (nginx upstream lines).
pub fn upstreams(instances: &[Serve]) -> Vec<String> {
    instances
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect()
}

/// A Redis, `n` instances on it sharing one key file, and nginx in front
/// (round robin), each instance allowing nginx's address as its Host.
pub struct Cluster {
    pub nginx: Nginx,
    pub instances: Vec<Serve>,
    pub redis: Redis,
    /// Where the key file and the instances' logs live.
    pub dir: tempfile::TempDir,
}

impl Cluster {
    pub fn start(n: usize) -> Cluster {
        let redis = Redis::start();
        let dir = tempfile::tempdir().unwrap();
        let nginx_port = free_port();
        let host = format!("127.0.0.1:{nginx_port}");
        let instances = instances_on(&redis, dir.path(), n, &["--allowed-host", &host]);
        let nginx = Nginx::start(nginx_port, &upstreams(&instances));
        Cluster {
            nginx,
            instances,
            redis,
            dir,
        }
    }
}

/// The recipe's nginx config template.
pub fn nginx_template() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("loadtests/nginx/elicitkit.conf.template");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// nginx in front of `upstreams` (`IP:PORT` each), rendered from the
/// recipe's template into a temp dir: `daemon off`, pid, logs and temp
/// paths inside it, listening on `port`.
pub struct Nginx {
    pub port: u16,
    pub proc: Proc,
    pub dir: tempfile::TempDir,
}

impl Nginx {
    pub fn start(port: u16, upstreams: &[String]) -> Nginx {
        let servers: String = upstreams
            .iter()
            .map(|u| format!("    server {u} max_fails=1 fail_timeout=2s;\n"))
            .collect();
        Nginx::with_conf(port, |prefix| {
            nginx_template()
                .replace("{{PREFIX}}", prefix)
                .replace("{{LISTEN}}", &format!("127.0.0.1:{port}"))
                .replace("{{SERVERS}}", &servers)
        })
    }

    /// nginx with the config `conf` renders for its temp dir (the prefix
    /// its pid, log and temp paths go under), up once `port` listens.
    pub fn with_conf(port: u16, conf: impl FnOnce(&str) -> String) -> Nginx {
        super::need::need("nginx");
        let dir = tempfile::tempdir().expect("tempdir");
        // Workers may run as another user: let them reach the temp paths.
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let conf = conf(&dir.path().display().to_string());
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).expect("write nginx.conf");
        let log = dir.path().join("error.log");
        let mut child = Command::new("nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path)
            .arg("-e")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx");
        wait_for_port(port, "nginx", &mut child, &log);
        Nginx {
            port,
            proc: Proc {
                child: Some(child),
                what: "nginx",
            },
            dir,
        }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// nginx's error log so far (for assertion messages).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // Graceful: the master stops its workers (SIGKILL would orphan them).
        self.proc.term();
    }
}

/// The value of the instance header of a reply.
#[cfg(feature = "net")]
pub fn instance_of(headers: &reqwest::header::HeaderMap) -> String {
    headers
        .get(elicitkit::server::INSTANCE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}
