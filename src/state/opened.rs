//! [`OpenedClaims`]: the owned result of [`crate::state::Sealer::open`].
//!
//! It keeps the one buffer the token was decoded (and, for AEADs, decrypted)
//! into and hands out the principal, client id and payload as views into it,
//! so opening allocates once and copies nothing after the decode.

use std::fmt;
use std::ops::Range;

use super::claims::{Claims, ClaimsRef};

/// Claims of an opened token, owning their decoded envelope.
///
/// The fixed-size claims are public fields, as on [`Claims`]; the
/// variable-length ones are methods. Equality compares the claims, not the
/// envelope bytes. [`OpenedClaims::into_claims`] converts (the payload reuses
/// the buffer).
#[derive(Clone)]
pub struct OpenedClaims {
    buf: Vec<u8>,
    principal: Range<usize>,
    client_id: Option<Range<usize>>,
    payload: Range<usize>,
    /// See [`Claims::request_digest`].
    pub request_digest: [u8; 32],
    /// See [`Claims::issued_at`].
    pub issued_at: u64,
    /// See [`Claims::expires_at`].
    pub expires_at: u64,
    /// See [`Claims::nonce`].
    pub nonce: [u8; 16],
    /// See [`Claims::round`].
    pub round: u32,
}

/// Offset range of `part` inside `buf` (`part` is a subslice of `buf`).
fn range_in(buf: &[u8], part: &[u8]) -> Range<usize> {
    let start = (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    start..start + part.len()
}

/// Where the parsed claims sit in the buffer, taken while `ClaimsRef`
/// still borrows it, so the buffer can then move into [`OpenedClaims`].
pub(super) struct Layout {
    principal: Range<usize>,
    client_id: Option<Range<usize>>,
    payload: Range<usize>,
    request_digest: [u8; 32],
    issued_at: u64,
    expires_at: u64,
    nonce: [u8; 16],
    round: u32,
}

impl Layout {
    /// Records the positions of `c`, which was parsed from `buf`.
    #[inline]
    pub(super) fn of(buf: &[u8], c: &ClaimsRef<'_>) -> Layout {
        Layout {
            principal: range_in(buf, c.principal.as_bytes()),
            client_id: c.client_id.map(|s| range_in(buf, s.as_bytes())),
            payload: range_in(buf, c.payload),
            request_digest: c.request_digest,
            issued_at: c.issued_at,
            expires_at: c.expires_at,
            nonce: c.nonce,
            round: c.round,
        }
    }
}

impl OpenedClaims {
    /// Joins a buffer and the layout parsed from it.
    #[inline]
    pub(super) fn new(buf: Vec<u8>, l: Layout) -> OpenedClaims {
        OpenedClaims {
            buf,
            principal: l.principal,
            client_id: l.client_id,
            payload: l.payload,
            request_digest: l.request_digest,
            issued_at: l.issued_at,
            expires_at: l.expires_at,
            nonce: l.nonce,
            round: l.round,
        }
    }

    fn text(&self, r: &Range<usize>) -> &str {
        let bytes = self.buf.get(r.clone()).unwrap_or_default();
        // SAFETY: the range was validated as UTF-8 by `claims::decode`
        // before this value was built, and `buf` is private and never
        // mutated afterwards.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// See [`Claims::principal`].
    pub fn principal(&self) -> &str {
        self.text(&self.principal)
    }

    /// See [`Claims::client_id`].
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_ref().map(|r| self.text(r))
    }

    /// See [`Claims::payload`].
    pub fn payload(&self) -> &[u8] {
        self.buf.get(self.payload.clone()).unwrap_or_default()
    }

    /// Borrowed view of these claims.
    pub fn as_ref(&self) -> ClaimsRef<'_> {
        ClaimsRef {
            principal: self.principal(),
            client_id: self.client_id(),
            request_digest: self.request_digest,
            issued_at: self.issued_at,
            expires_at: self.expires_at,
            nonce: self.nonce,
            round: self.round,
            payload: self.payload(),
        }
    }

    /// The payload alone, reusing the buffer (no copy of other claims).
    pub fn into_payload(self) -> Vec<u8> {
        let mut buf = self.buf;
        buf.truncate(self.payload.end);
        buf.drain(..self.payload.start.min(buf.len()));
        buf
    }

    /// Converts into owned [`Claims`]; the payload reuses the buffer.
    pub fn into_claims(self) -> Claims {
        let principal = self.principal().to_owned();
        let client_id = self.client_id().map(str::to_owned);
        let (request_digest, issued_at, expires_at, nonce, round) = (
            self.request_digest,
            self.issued_at,
            self.expires_at,
            self.nonce,
            self.round,
        );
        Claims {
            principal,
            client_id,
            request_digest,
            issued_at,
            expires_at,
            nonce,
            round,
            payload: self.into_payload(),
        }
    }
}

impl From<OpenedClaims> for Claims {
    fn from(o: OpenedClaims) -> Claims {
        o.into_claims()
    }
}

impl fmt::Debug for OpenedClaims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedClaims")
            .field("principal", &self.principal())
            .field("client_id", &self.client_id())
            .field("request_digest", &self.request_digest)
            .field("issued_at", &self.issued_at)
            .field("expires_at", &self.expires_at)
            .field("nonce", &self.nonce)
            .field("round", &self.round)
            .field("payload", &self.payload())
            .finish()
    }
}

impl PartialEq for OpenedClaims {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref() == other.as_ref()
    }
}

impl Eq for OpenedClaims {}

impl PartialEq<Claims> for OpenedClaims {
    fn eq(&self, other: &Claims) -> bool {
        self.as_ref() == other.as_ref()
    }
}

impl PartialEq<OpenedClaims> for Claims {
    fn eq(&self, other: &OpenedClaims) -> bool {
        self.as_ref() == other.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::claims;

    fn sample(client: Option<&str>) -> Claims {
        Claims {
            principal: "alice".into(),
            client_id: client.map(Into::into),
            request_digest: [7; 32],
            issued_at: 1_000,
            expires_at: 61_000,
            nonce: [9; 16],
            round: 2,
            payload: b"answers".to_vec(),
        }
    }

    fn opened(c: &Claims, prefix: usize) -> OpenedClaims {
        let mut buf = vec![0xee; prefix];
        c.encode_into(&mut buf).unwrap();
        buf.extend_from_slice(&[0xdd; 16]); // a tag after the record
        let end = buf.len() - 16;
        let layout = {
            let r = claims::decode(&buf[prefix..end]).unwrap();
            Layout::of(&buf, &r)
        };
        OpenedClaims::new(buf, layout)
    }

    #[test]
    fn views_and_conversions_match_the_claims() {
        for client in [None, Some(""), Some("cli")] {
            let c = sample(client);
            let o = opened(&c, 6);
            assert_eq!(o.principal(), "alice");
            assert_eq!(o.client_id(), client);
            assert_eq!(o.payload(), b"answers");
            assert_eq!(o, c);
            assert_eq!(c, o);
            assert_eq!(o.clone(), opened(&c, 18));
            assert_eq!(o.clone().into_payload(), b"answers");
            assert_eq!(o.into_claims(), c);
        }
        let mut other = sample(None);
        other.round = 3;
        assert_ne!(opened(&sample(None), 6), other);
    }
}
