//! Which checks mean nothing on a target's transport. Over stdio there are
//! no HTTP headers, status codes, sessions, GET or SSE streams, Origin or
//! Host, and no Nagle on a socket: what the loopback bridge
//! ([`crate::stdio::bridge`]) answers there is ours, so those checks are
//! reported not applicable. Nor is there a principal on the pipe unless
//! the user names the variable the server takes it from.

use super::probe::Target;
use super::registry::Check;

/// HTTP-only checks: id → what they judge.
const HTTP_ONLY: &[(&str, &str)] = &[
    ("mrtr-header-", "the Mcp-* and MCP-Protocol-Version headers"),
    ("mrtr-get-delete-405", "HTTP methods"),
    ("mrtr-no-session-id", "the MCP-Session-Id header"),
    ("mrtr-origin-validated", "the Origin and Host headers"),
    ("legacy-origin-validated", "the Origin and Host headers"),
    ("mrtr-cache-hints", "HTTP caching"),
    ("mrtr-sse-hygiene", "SSE streams"),
    ("mrtr-tail-stall", "TCP segments (Nagle and delayed ACKs)"),
    ("legacy-tail-stall", "TCP segments (Nagle and delayed ACKs)"),
    ("legacy-session-deleted-404", "HTTP sessions"),
    ("legacy-missing-session-400", "HTTP sessions"),
    ("legacy-bad-version-400", "the MCP-Protocol-Version header"),
    ("legacy-answer-202", "the HTTP status of a POSTed answer"),
    ("legacy-stream-rules", "SSE streams"),
    ("legacy-get-stream", "the standalone GET stream"),
];

/// Checks that need two principals on the wire.
const CROSS_PRINCIPAL: &[&str] = &[
    "mrtr-cross-principal",
    "mrtr-url-cross-user",
    "legacy-url-cross-user",
    "legacy-cross-principal-session",
    "legacy-cross-principal-answer",
];

/// Why `check` does not apply to `target`'s transport, if it does not.
pub fn not_applicable(check: &Check, target: &Target) -> Option<String> {
    let stdio = target.settings.stdio.as_ref()?;
    if let Some((_, what)) = HTTP_ONLY
        .iter()
        .find(|(id, _)| check.id == *id || (id.ends_with('-') && check.id.starts_with(id)))
    {
        return Some(format!("over stdio: it judges {what}, which stdio has not"));
    }
    if CROSS_PRINCIPAL.contains(&check.id) && stdio.identity_env.is_none() {
        return Some(
            "over stdio: a pipe carries no principal; name the variable the server \
             takes it from with --identity-env to run it"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_id_names_a_check() {
        let ids: Vec<&str> = super::super::all_checks().iter().map(|c| c.id).collect();
        for (id, _) in HTTP_ONLY {
            assert!(
                ids.iter()
                    .any(|c| c == id || (id.ends_with('-') && c.starts_with(id))),
                "{id} names no check"
            );
        }
        for id in CROSS_PRINCIPAL {
            assert!(ids.contains(id), "{id} names no check");
        }
    }
}
