//! URL-mode flow pages completed over a [`Wire`], the way a browser would
//! (the visit of [`crate::client::page`], which every driver moves) — only
//! on the target's own origin. A page elsewhere is never fetched unless the
//! user allows it: it is reported, not followed.

use super::wire::Wire;
use crate::client::browser;
use crate::client::http::Endpoint;
use crate::client::page::{PageStep, PageVisit, same_origin};
use crate::client::raw::RawRequest;

pub use crate::client::page::PageError;

/// Completes the flow page at `url` as the wire's principal; returns the
/// status of the submission and the values typed into it.
pub async fn complete<W: Wire + ?Sized>(
    p: &W,
    url: &str,
) -> Result<(u16, Vec<browser::Typed>), PageError> {
    let page_url = same_origin(p.mcp_url(), url)?;
    let endpoint = Endpoint::new(p.mcp_url(), p.token());
    let (mut visit, mut out) = PageVisit::start(page_url.into(), p.seed());
    loop {
        let (to, token) = endpoint
            .address(&out)
            .map_err(|e| PageError::Failed(e.to_string()))?;
        let reply = p
            .send(RawRequest::from_outgoing(&out, to, Some(token)))
            .await
            .map_err(|e| visit.on_failure(&e.to_string()))?;
        out = match visit.on_reply(reply.status, &reply.body) {
            PageStep::Send(next) => next,
            PageStep::Done(status) => return Ok((status, visit.take_typed())),
            PageStep::Failed(e) => return Err(e),
        };
    }
}
