//! A URL-mode flow page completed as a browser would, sans I/O, for every
//! driver: GET the page, fill its first form ([`browser`]), submit it. The
//! MRTR flow, the 2025-11-25 load client and discovery's and check's
//! drivers each move a [`PageVisit`]'s requests their own way; whether a
//! page on another origin is followed is theirs to say ([`same_origin`]).

use super::browser::{self, Typed};
use super::leg::Outgoing;
use std::borrow::Cow;

/// Why a page was not completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The page is on another origin than the one it was checked against.
    #[error("flow page on another origin ({0}): not followed")]
    OtherOrigin(String),
    /// The URL does not parse.
    #[error("flow page URL {0:?} does not parse")]
    BadUrl(String),
    /// The page's GET was answered with a status outside 200–399.
    #[error("flow page GET {url} returned HTTP {status}")]
    GetRefused {
        /// The page.
        url: String,
        /// The status.
        status: u16,
    },
    /// The page has no form.
    #[error("flow page {0} has no <form> to complete")]
    NoForm(String),
    /// The submission was answered with a status outside 200–399.
    #[error("flow page POST {url} returned HTTP {status}")]
    PostRefused {
        /// The page.
        url: String,
        /// The status.
        status: u16,
    },
    /// A request of the visit got no reply (the driver's words).
    #[error("flow page {0}")]
    Failed(String),
}

/// `url` resolved against `base` (the MCP URL, or an origin), when it is
/// on `base`'s origin.
pub fn same_origin(base: &str, url: &str) -> Result<url::Url, PageError> {
    let b = url::Url::parse(base).map_err(|_| PageError::BadUrl(base.to_owned()))?;
    let page = b.join(url).map_err(|_| PageError::BadUrl(url.to_owned()))?;
    if page.origin() != b.origin() {
        return Err(PageError::OtherOrigin(page.origin().ascii_serialization()));
    }
    Ok(page)
}

/// The origin of `url` (resolved against `base`) when it is not `base`'s;
/// `None` when it is, or when either does not parse.
pub fn foreign_origin(base: &str, url: &str) -> Option<String> {
    match same_origin(base, url) {
        Err(PageError::OtherOrigin(o)) => Some(o),
        _ => None,
    }
}

/// Where a visit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The page's GET is out.
    Get,
    /// The form's submission is out.
    Submit,
    /// Over.
    Done,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq)]
pub enum PageStep {
    /// Send this (the form's submission).
    Send(Outgoing),
    /// The page is completed: the submission's status.
    Done(u16),
    /// The page could not be completed.
    Failed(PageError),
}

/// One flow page being completed.
#[derive(Debug, Clone, PartialEq)]
pub struct PageVisit {
    url: String,
    seed: u64,
    stage: Stage,
    /// The leg name of the request in flight, as it was sent.
    leg: Cow<'static, str>,
    typed: Vec<Typed>,
}

impl PageVisit {
    /// The visit of the page at `url` (filled from `seed`) and its first
    /// request, the page's GET ([`browser::page_request`]).
    pub fn start(url: String, seed: u64) -> (PageVisit, Outgoing) {
        let get = browser::page_request(&url);
        let visit = PageVisit {
            url,
            seed,
            stage: Stage::Get,
            leg: get.leg.clone(),
            typed: Vec::new(),
        };
        (visit, get)
    }

    /// The leg name of the request in flight (`flow page GET` or `flow
    /// page POST`), for the driver's timings.
    pub fn leg(&self) -> Cow<'static, str> {
        self.leg.clone()
    }

    /// The values typed into the form, taken (there are some once its
    /// submission is out).
    pub fn take_typed(&mut self) -> Vec<Typed> {
        std::mem::take(&mut self.typed)
    }

    /// Feeds the reply to the request last sent.
    pub fn on_reply(&mut self, status: u16, body: &[u8]) -> PageStep {
        let ok = (200..400).contains(&status);
        let url = || self.url.clone();
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Get if !ok => PageStep::Failed(PageError::GetRefused { url: url(), status }),
            Stage::Get => {
                let html = String::from_utf8_lossy(body);
                match browser::submit_typed(&self.url, &html, self.seed) {
                    Some((submit, typed)) => {
                        self.typed = typed;
                        self.stage = Stage::Submit;
                        self.leg = submit.leg.clone();
                        PageStep::Send(submit)
                    }
                    None => PageStep::Failed(PageError::NoForm(url())),
                }
            }
            Stage::Submit if !ok => PageStep::Failed(PageError::PostRefused { url: url(), status }),
            Stage::Submit => PageStep::Done(status),
            Stage::Done => PageStep::Failed(PageError::Failed(format!("{}: already over", url()))),
        }
    }

    /// The request last sent got no reply: `why`, in the driver's words.
    pub fn on_failure(&mut self, why: &str) -> PageError {
        let step = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Get => format!("GET {}: {why}", self.url),
            _ => format!("POST: {why}"),
        };
        PageError::Failed(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::leg::HttpMethod;

    const FORM: &str = r#"<form method="post" action="/done"><input name="code" required></form>"#;

    #[test]
    fn a_page_is_fetched_filled_and_submitted_once() {
        let (mut v, get) = PageVisit::start("http://127.0.0.1:9/flow/1".into(), 7);
        assert_eq!(
            (get.method, get.leg.as_ref()),
            (HttpMethod::Get, "flow page GET")
        );
        let PageStep::Send(post) = v.on_reply(200, FORM.as_bytes()) else {
            panic!("a submission");
        };
        assert_eq!(post.method, HttpMethod::Post);
        assert_eq!(v.leg(), "flow page POST");
        let typed = v.take_typed();
        assert_eq!(typed.len(), 1);
        assert_eq!(typed[0].field, "code");
        assert_eq!(v.on_reply(303, b""), PageStep::Done(303));
        assert!(matches!(v.on_reply(200, b""), PageStep::Failed(_)), "over");
    }

    #[test]
    fn each_way_a_visit_fails_is_named() {
        let url = "http://127.0.0.1:9/flow/1";
        let said = |status, body: &str| {
            PageVisit::start(url.into(), 0)
                .0
                .on_reply(status, body.as_bytes())
        };
        let PageStep::Failed(e) = said(404, FORM) else {
            panic!()
        };
        assert_eq!(
            e.to_string(),
            format!("flow page GET {url} returned HTTP 404")
        );
        let PageStep::Failed(e) = said(200, "<p>no form</p>") else {
            panic!()
        };
        assert_eq!(
            e.to_string(),
            format!("flow page {url} has no <form> to complete")
        );
        let (mut v, _) = PageVisit::start(url.into(), 0);
        v.on_reply(200, FORM.as_bytes());
        let PageStep::Failed(e) = v.on_reply(500, b"") else {
            panic!()
        };
        assert_eq!(
            e.to_string(),
            format!("flow page POST {url} returned HTTP 500")
        );
        let (mut v, _) = PageVisit::start(url.into(), 0);
        let e = v.on_failure("connection refused");
        assert_eq!(
            e.to_string(),
            format!("flow page GET {url}: connection refused")
        );
    }

    #[test]
    fn origins_are_compared_after_resolving_against_the_base() {
        let mcp = "http://127.0.0.1:8080/mcp";
        assert_eq!(
            same_origin(mcp, "/flow/1").unwrap().as_str(),
            "http://127.0.0.1:8080/flow/1"
        );
        assert_eq!(foreign_origin(mcp, "/flow/1"), None);
        assert_eq!(
            foreign_origin(mcp, "https://auth.example/x"),
            Some("https://auth.example".into())
        );
        assert_eq!(foreign_origin("not a url", "/x"), None);
        assert!(matches!(
            same_origin(mcp, "http://[::1"),
            Err(PageError::BadUrl(_))
        ));
    }
}
