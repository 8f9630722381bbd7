//! Transport-level rules on one exchange: a 5xx is a server error, no
//! whole reply within the bound a hang, a broken connection a reset; and a
//! reply to a JSON-RPC request must carry a JSON-RPC response.

use super::Oracle;
use crate::client::mask::shorten;
use crate::client::raw::{RawError, RawReply};

/// The transport-level finding on the exchange labelled `label`, if any. A
/// server closing the connection on an oversized request is refusing it,
/// not failing.
pub fn judge(label: &str, reply: &Result<RawReply, RawError>) -> Option<(Oracle, String)> {
    match reply {
        Err(RawError::Timeout(t)) => {
            Some((Oracle::Hang, format!("{label}: no reply within {t:?}")))
        }
        Err(RawError::Transport(e)) => Some((Oracle::ConnectionReset, format!("{label}: {e}"))),
        Err(RawError::Refused(_)) => None,
        Ok(r) if r.status >= 500 => Some((
            Oracle::ServerError,
            format!(
                "{label}: HTTP {} ({})",
                r.status,
                shorten(&String::from_utf8_lossy(&r.body), 160)
            ),
        )),
        Ok(_) => None,
    }
}

/// A reply to the JSON-RPC request labelled `label` without a JSON-RPC
/// response (`why`, as [`RawReply::rpc`] says it); `oracle` is
/// [`Oracle::NotJsonRpc`] or, for a request malformed on purpose,
/// [`Oracle::NotJsonRpcOnMalformed`].
pub fn not_json_rpc(oracle: Oracle, label: &str, why: &str) -> (Oracle, String) {
    (
        oracle,
        format!("{label}: the reply is not a JSON-RPC response: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reply(status: u16, body: &str) -> Result<RawReply, RawError> {
        Ok(RawReply {
            status,
            headers: Vec::new(),
            body: body.to_owned().into(),
            elapsed: Duration::ZERO,
        })
    }

    #[test]
    fn a_5xx_a_timeout_and_a_reset_are_findings_a_refusal_is_not() {
        let t = Err(RawError::Timeout(Duration::from_secs(2)));
        assert_eq!(judge("x", &t).unwrap().0, Oracle::Hang);
        let reset = Err(RawError::Transport("reset".into()));
        assert_eq!(judge("x", &reset).unwrap().0, Oracle::ConnectionReset);
        assert_eq!(judge("x", &Err(RawError::Refused("431".into()))), None);
        let (o, what) = judge("call", &reply(502, "bad gateway")).unwrap();
        assert_eq!(o, Oracle::ServerError);
        assert_eq!(what, "call: HTTP 502 (bad gateway)");
        assert_eq!(judge("x", &reply(404, "")), None);
    }
}
