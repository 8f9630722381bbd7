//! The target flags `check`, `fuzz`, `plan` and `load` share for a server
//! that speaks stdio: `--target stdio`, then the command after `--`, with
//! `--env`, `--cwd` and `--identity-env`; and those `check` and `fuzz`
//! share for whom and what they aim at ([`AimArgs`]); and how every command
//! with a target trusts an `https` one ([`TlsArgs`]).

use crate::discover::TargetSettings;
use crate::protocol::Generation;
use crate::stdio::{Bridge, Command, Spec};
use std::path::PathBuf;

/// Which generation, as whom, and which tools `check` and `fuzz` aim at.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct AimArgs {
    /// Protocol generation: auto, 2025-11-25 or 2026-07-28.
    #[arg(help_heading = "Target", long, default_value = "auto")]
    pub generation: String,
    /// Bearer token of the principal the flows run as (default `alice`:
    /// the reference server's demo mode takes the user name as token).
    #[arg(
        help_heading = "Target",
        long,
        env = "ELICITKIT_PRINCIPAL",
        value_name = "TOKEN"
    )]
    pub principal: Option<String>,
    /// Bearer token of a second principal, for cross-principal probes
    /// (default `bob`).
    #[arg(
        help_heading = "Target",
        long,
        env = "ELICITKIT_OTHER_PRINCIPAL",
        value_name = "TOKEN"
    )]
    pub other_principal: Option<String>,
    /// Only this tool (repeatable); default: every listed tool.
    #[arg(help_heading = "Target", long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Never call this tool (repeatable).
    #[arg(help_heading = "Target", long = "skip-tool", value_name = "NAME")]
    pub skip_tools: Vec<String>,
    /// Treat this tool's completion as single-use (repeatable), besides
    /// tools marked destructive or described as "exactly once".
    #[arg(help_heading = "Target", long = "single-use", value_name = "NAME")]
    pub single_use: Vec<String>,
}

impl AimArgs {
    /// The generation asked for; `None` for `auto`.
    pub fn generation(&self) -> Result<Option<Generation>, String> {
        match self.generation.as_str() {
            "auto" => Ok(None),
            g => g.parse::<Generation>().map(Some).map_err(|e| e.to_string()),
        }
    }

    /// Sets the principals and tools given on `t`.
    pub fn apply(&self, t: &mut TargetSettings) {
        if let Some(p) = &self.principal {
            t.principal = p.clone();
        }
        if let Some(p) = &self.other_principal {
            t.other_principal = p.clone();
        }
        t.tools = self.tools.clone();
        t.skip_tools = self.skip_tools.clone();
        t.single_use = self.single_use.clone();
    }
}

/// How an `https` target's certificate is checked: the platform's roots
/// (and `SSL_CERT_FILE` / `SSL_CERT_DIR`), a private CA, or nothing.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsArgs {
    /// Also trust this CA (PEM) for an https target (SSL_CERT_FILE works too)
    #[arg(help_heading = "Target", long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify an https target's certificate (testing only)
    #[arg(help_heading = "Target", long)]
    pub insecure: bool,
}

impl TlsArgs {
    /// These settings, as the TLS options every client of this process
    /// uses from now on ([`crate::client::tls::install`]).
    pub fn install(&self) -> Result<(), String> {
        crate::client::tls::install(&self.options()).map_err(|e| e.to_string())
    }

    /// As TLS options.
    pub fn options(&self) -> crate::client::tls::TlsOptions {
        crate::client::tls::TlsOptions {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
        }
    }
}

/// The `--target` value that names a stdio server.
pub const STDIO: &str = "stdio";

/// A stdio server's command and how it is started.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct StdioArgs {
    /// With --target stdio: an environment variable for the server
    /// (repeatable), e.g. --env API_MODE=test.
    #[arg(help_heading = "Stdio server", long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// With --target stdio: the server's working directory.
    #[arg(help_heading = "Stdio server", long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// With --target stdio: the environment variable the server reads its
    /// user from. Each principal (--principal, --other-principal) then gets
    /// processes of its own with the variable set to its token, and the
    /// cross-principal checks run; without it they do not apply.
    #[arg(help_heading = "Stdio server", long, value_name = "NAME")]
    pub identity_env: Option<String>,
    /// With --target stdio: the server's command and its arguments, after
    /// `--`, e.g. -- python server.py.
    #[arg(help_heading = "Stdio server", last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn parse_env(v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((k, val)) if !k.is_empty() && !k.contains('\0') && !val.contains('\0') => {
            Ok((k.to_owned(), val.to_owned()))
        }
        _ => Err(format!("{v:?} is not KEY=VALUE")),
    }
}

impl StdioArgs {
    /// The stdio server `target` names: `Ok(None)` for a URL target (and
    /// then no stdio flag may be given), `Err` on a mismatch.
    pub fn spec(&self, target: &str) -> Result<Option<Spec>, String> {
        if target != STDIO {
            if !self.command.is_empty() {
                return Err(format!(
                    "a command after `--` needs --target stdio (got --target {target})"
                ));
            }
            if !self.env.is_empty() || self.cwd.is_some() || self.identity_env.is_some() {
                return Err("--env, --cwd and --identity-env need --target stdio".into());
            }
            return Ok(None);
        }
        if self.command.is_empty() {
            return Err(
                "--target stdio needs the server's command after `--`, e.g. \
                 --target stdio -- python server.py"
                    .into(),
            );
        }
        if let Some(dir) = &self.cwd
            && !dir.is_dir()
        {
            return Err(format!("--cwd {}: not a directory", dir.display()));
        }
        if let Some(var) = &self.identity_env
            && (var.is_empty() || var.contains('='))
        {
            return Err(format!("--identity-env {var:?}: not a variable name"));
        }
        Ok(Some(Spec {
            command: Command {
                argv: self.command.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            },
            identity_env: self.identity_env.clone(),
        }))
    }
}

/// Where a command sends its requests: the URL given, or the loopback
/// endpoint of a started stdio server (held until the run ends).
#[derive(Debug)]
pub struct Resolved {
    /// The MCP endpoint URL the drivers use.
    pub url: String,
    /// The stdio server behind `url`, if any.
    pub bridge: Option<Bridge>,
}

impl Resolved {
    /// A failure of the run before it started, as a user reads it: over
    /// stdio it names the command (`shown`), never the bridge's URL, and
    /// when the server process exited it says so, with its exit status and
    /// the last lines of its stderr, instead of the bridge's HTTP status.
    pub fn explain(&self, e: String, shown: &str) -> String {
        let Some(bridge) = &self.bridge else {
            return e;
        };
        let crashes = bridge.log().crashes();
        let Some(exit) = crashes.first() else {
            return e.replace(&self.url, shown);
        };
        let mut out = format!(
            "{shown}: the server process exited before the run could start ({})",
            exit.status
        );
        let tail = exit.stderr_last(5);
        if tail.is_empty() {
            out.push_str(", writing nothing to stderr");
        } else {
            out.push_str("; its stderr ends:");
            for l in tail {
                out.push_str("\n    ");
                out.push_str(l);
            }
        }
        out
    }
}

/// Starts the stdio server `spec` names, spending processes as `reuse`
/// says (or passes the URL through). Needs a Tokio runtime.
pub async fn resolve(
    target: &str,
    spec: Option<Spec>,
    reuse: crate::stdio::Reuse,
) -> Result<Resolved, String> {
    match spec {
        None => Ok(Resolved {
            url: target.to_owned(),
            bridge: None,
        }),
        Some(spec) => {
            let bridge = Bridge::start_with(spec, reuse)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Resolved {
                url: bridge.mcp_url().to_owned(),
                bridge: Some(bridge),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[arg(long)]
        target: String,
        #[command(flatten)]
        s: StdioArgs,
    }

    fn parse(args: &[&str]) -> Result<Option<Spec>, String> {
        let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        t.s.spec(&t.target)
    }

    #[test]
    fn stdio_takes_the_command_after_the_dashes() {
        let s = parse(&[
            "--target",
            "stdio",
            "--env",
            "A=b=c",
            "--identity-env",
            "USER_TOKEN",
            "--",
            "python",
            "server.py",
            "--port",
            "0",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.command.argv, ["python", "server.py", "--port", "0"]);
        assert_eq!(s.command.env, [("A".to_owned(), "b=c".to_owned())]);
        assert_eq!(s.identity_env.as_deref(), Some("USER_TOKEN"));
    }

    #[test]
    fn mismatched_flags_are_usage_errors() {
        assert!(
            parse(&["--target", "stdio"])
                .unwrap_err()
                .contains("after `--`")
        );
        let e = parse(&["--target", "http://127.0.0.1:1/mcp", "--", "x"]).unwrap_err();
        assert!(e.contains("needs --target stdio"), "{e}");
        assert!(parse(&["--target", "http://127.0.0.1:1/mcp", "--env", "A=1"]).is_err());
        assert!(parse(&["--target", "stdio", "--env", "nokey", "--", "x"]).is_err());
        assert_eq!(
            parse(&["--target", "http://127.0.0.1:1/mcp"]).unwrap(),
            None
        );
    }
}
