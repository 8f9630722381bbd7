//! URL-mode flow pages, completed the way a browser would (GET the page,
//! fill its first form with values that satisfy the form's own constraints,
//! submit it: the requests of [`crate::client::browser`], which the MRTR
//! flow sends too) — only on the target's own origin. A page elsewhere is never
//! fetched unless the user allows it: it is reported, not followed.

use super::wire::Wire;
use crate::client::browser;
use crate::client::http::Endpoint;
use crate::client::leg::Outgoing;
use crate::client::raw::RawRequest;

/// Why a page was not completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The page is on another origin than the MCP endpoint.
    #[error("flow page on another origin ({0}): not followed")]
    OtherOrigin(String),
    /// The URL does not parse.
    #[error("flow page URL {0:?} does not parse")]
    BadUrl(String),
    /// GET or POST failed or was refused.
    #[error("flow page {0}")]
    Failed(String),
    /// The page has no form.
    #[error("flow page {0} has no <form> to complete")]
    NoForm(String),
}

/// The origin (`scheme://host:port`) of a URL.
pub fn origin_of(u: &url::Url) -> String {
    u.origin().ascii_serialization()
}

/// `url` resolved against the MCP URL, when it is on the same origin.
pub fn same_origin(mcp_url: &str, url: &str) -> Result<url::Url, PageError> {
    let base = url::Url::parse(mcp_url).map_err(|_| PageError::BadUrl(mcp_url.to_owned()))?;
    let page = base
        .join(url)
        .map_err(|_| PageError::BadUrl(url.to_owned()))?;
    if page.origin() != base.origin() {
        return Err(PageError::OtherOrigin(origin_of(&page)));
    }
    Ok(page)
}

/// Completes the flow page at `url` as the wire's principal, with the
/// browser's requests ([`browser::page_request`], [`browser::submit_typed`]);
/// returns the status of the submission and the values typed into it.
pub async fn complete<W: Wire + ?Sized>(
    p: &W,
    url: &str,
) -> Result<(u16, Vec<browser::Typed>), PageError> {
    let page_url = same_origin(p.mcp_url(), url)?;
    let endpoint = Endpoint::new(p.mcp_url(), p.token());
    let request = |out: &Outgoing| {
        let (to, token) = endpoint
            .address(out)
            .map_err(|e| PageError::Failed(e.to_string()))?;
        Ok(RawRequest::from_outgoing(out, to, Some(token)))
    };
    let page = p
        .send(request(&browser::page_request(page_url.as_str()))?)
        .await
        .map_err(|e| PageError::Failed(format!("GET {page_url}: {e}")))?;
    if !(200..400).contains(&page.status) {
        return Err(PageError::Failed(format!(
            "GET {page_url} returned HTTP {}",
            page.status
        )));
    }
    let html = String::from_utf8_lossy(&page.body);
    let Some((submit, typed)) = browser::submit_typed(page_url.as_str(), &html, p.seed()) else {
        return Err(PageError::NoForm(page_url.to_string()));
    };
    let r = p
        .send(request(&submit)?)
        .await
        .map_err(|e| PageError::Failed(format!("POST: {e}")))?;
    if (200..400).contains(&r.status) {
        Ok((r.status, typed))
    } else {
        Err(PageError::Failed(format!(
            "POST {page_url} returned HTTP {}",
            r.status
        )))
    }
}
