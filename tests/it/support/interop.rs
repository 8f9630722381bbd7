//! The launcher the interop tests share: starts one of the SDK servers of
//! `tests/interop/README.md` as a child process on 127.0.0.1, waits for its
//! `listening on URL` line, and stops it by PID when dropped. Missing
//! packages are installed first (`tests/interop/install.sh`, idempotent);
//! the rmcp example is built when absent.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Once;
use std::time::Duration;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `@modelcontextprotocol/server` (TypeScript SDK v2).
    Ts,
    /// `mcp` 2.x (Python SDK).
    Python,
    /// rmcp 3.11 (Rust SDK), TCP_NODELAY on.
    Rmcp,
    /// rmcp with TCP_NODELAY off (Nagle + delayed ACK can stall replies).
    RmcpNagle,
}

impl Sdk {
    /// Every server with its default settings.
    pub const ALL: [Sdk; 3] = [Sdk::Ts, Sdk::Python, Sdk::Rmcp];

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Sdk::Ts => "typescript-sdk",
            Sdk::Python => "python-sdk",
            Sdk::Rmcp => "rmcp",
            Sdk::RmcpNagle => "rmcp (TCP_NODELAY off)",
        }
    }

    /// Bearer token of a principal the server knows (the Python server
    /// authenticates `alice`, `bob` and `mallory`; the others take any).
    pub fn token(self) -> &'static str {
        "alice"
    }
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

static INSTALL: Once = Once::new();

fn install() {
    INSTALL.call_once(|| {
        super::need::need("node");
        super::need::need("npm");
        let script = root().join("tests/interop/install.sh");
        let status = Command::new("bash")
            .arg(&script)
            .status()
            .expect("run tests/interop/install.sh");
        assert!(status.success(), "tests/interop/install.sh failed");
    });
}

static BUILD_RMCP: Once = Once::new();

/// `target/<profile>/examples/interop_rmcp`, built when missing.
fn rmcp_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/<test> -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf();
    let bin = profile_dir.join("examples/interop_rmcp");
    BUILD_RMCP.call_once(|| {
        if bin.exists() {
            return;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(root())
            .args(["build", "--example", "interop_rmcp"]);
        if profile_dir.ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo build --example interop_rmcp");
        assert!(status.success(), "building the rmcp interop server failed");
    });
    bin
}

/// A running interop server.
pub struct Server {
    /// Which one.
    pub sdk: Sdk,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    child: super::serve::Serve,
}

/// The command that starts `sdk` speaking stdio (TypeScript and Python;
/// the Python server takes its principal from `ELICITKIT_PRINCIPAL`).
pub fn stdio_command(sdk: Sdk) -> elicitkit::stdio::Command {
    install();
    let mut argv = match sdk {
        Sdk::Ts => vec!["node".to_owned()],
        Sdk::Python => vec![
            root()
                .join("tests/interop/python/.venv/bin/python")
                .display()
                .to_string(),
        ],
        Sdk::Rmcp | Sdk::RmcpNagle => panic!("the rmcp interop server speaks HTTP only"),
    };
    let script = match sdk {
        Sdk::Ts => "tests/interop/ts/server.mjs",
        _ => "tests/interop/python/server.py",
    };
    argv.push(root().join(script).display().to_string());
    argv.push("--stdio".into());
    let mut c = elicitkit::stdio::Command::new(argv);
    c.env
        .push(("ELICITKIT_PRINCIPAL".into(), sdk.token().into()));
    c
}

impl Server {
    /// Starts `sdk` on an ephemeral port and waits (at most 60 s) until it
    /// listens.
    pub fn start(sdk: Sdk) -> Server {
        let mut cmd = match sdk {
            Sdk::Ts => {
                install();
                let mut c = Command::new("node");
                c.arg(root().join("tests/interop/ts/server.mjs"));
                c
            }
            Sdk::Python => {
                install();
                let mut c = Command::new(root().join("tests/interop/python/.venv/bin/python"));
                c.arg(root().join("tests/interop/python/server.py"));
                c
            }
            Sdk::Rmcp | Sdk::RmcpNagle => {
                let mut c = Command::new(rmcp_binary());
                c.args([
                    "--nodelay",
                    if sdk == Sdk::RmcpNagle { "off" } else { "on" },
                ]);
                c
            }
        };
        cmd.args(["--port", "0"])
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        // Same launch contract as `elicitkit serve`: one `listening on URL`
        // line. A first start of an SDK server may take a while.
        let child = super::serve::Serve::spawn_within(cmd, Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("start {}: {e}", sdk.name()));
        let url = child.base_url().to_owned();
        Server { sdk, url, child }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Freezes the server (SIGSTOP): it accepts nothing and answers nothing.
    pub fn pause(&self) {
        assert!(
            super::serve::signal(self.pid(), "STOP"),
            "kill -STOP {}",
            self.pid()
        );
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&self) {
        assert!(
            super::serve::signal(self.pid(), "CONT"),
            "kill -CONT {}",
            self.pid()
        );
    }
}
