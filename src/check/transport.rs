//! Which checks mean nothing on a target's transport. Over stdio there are
//! no HTTP headers, status codes, sessions, GET or SSE streams, Origin or
//! Host, and no Nagle on a socket: what the loopback bridge
//! ([`crate::stdio::bridge`]) answers there is ours, so those checks are
//! reported not applicable. Nor is there a principal on the pipe unless
//! the user names the variable the server takes it from. Each check says
//! which it needs in its `check!` ([`super::registry::Needs`]).

use super::probe::Target;
use super::registry::Check;

/// Why `check` does not apply to `target`'s transport, if it does not.
pub fn not_applicable(check: &Check, target: &Target) -> Option<String> {
    let stdio = target.settings.stdio.as_ref()?;
    if let Some(what) = check.needs.http {
        return Some(format!("over stdio: it judges {what}, which stdio has not"));
    }
    if check.needs.two_principals && stdio.identity_env.is_none() {
        return Some(
            "over stdio: a pipe carries no principal; name the variable the server \
             takes it from with --identity-env to run it"
                .into(),
        );
    }
    None
}
