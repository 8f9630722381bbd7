//! [`OpenedClaims`]: the owned result of [`crate::state::Sealer::open`].
//!
//! It keeps the one buffer the token was decoded (and, for AEADs, decrypted)
//! into and reads every claim from it, so opening allocates once and copies
//! nothing after the decode.

use super::claims::{self, Claims, ClaimsRef, FIXED_LEN};
use std::fmt;

/// Claims of an opened token, owning their decoded envelope.
///
/// Every claim is a method reading the verified record in place (the value
/// itself is five words, cheap to return). Equality compares the claims,
/// not the envelope bytes. [`OpenedClaims::into_claims`] converts (the
/// payload reuses the buffer).
#[derive(Clone)]
pub struct OpenedClaims {
    buf: Vec<u8>,
    /// Offset of the claims record in `buf`.
    at: usize,
    principal_len: u16,
    client_id_len: u16,
    payload_len: u32,
    has_client_id: bool,
}

/// Where the parsed claims sit in the buffer, taken while `ClaimsRef`
/// still borrows it, so the buffer can then move into [`OpenedClaims`].
pub(super) struct Layout {
    at: usize,
    principal_len: u16,
    client_id_len: u16,
    payload_len: u32,
    has_client_id: bool,
}

impl Layout {
    /// Records the shape of `c`, parsed from the record at offset `at`.
    /// The lengths fit: `claims::decode` read them from u16/u16/u32 fields.
    #[inline]
    pub(super) fn of(at: usize, c: &ClaimsRef<'_>) -> Layout {
        let client = c.client_id.map_or(0, str::len);
        Layout {
            at,
            principal_len: u16::try_from(c.principal.len()).unwrap_or(u16::MAX),
            client_id_len: u16::try_from(client).unwrap_or(u16::MAX),
            payload_len: u32::try_from(c.payload.len()).unwrap_or(u32::MAX),
            has_client_id: c.client_id.is_some(),
        }
    }
}

impl OpenedClaims {
    /// Joins a buffer and the layout parsed from it.
    #[inline]
    pub(super) fn new(buf: Vec<u8>, l: Layout) -> OpenedClaims {
        OpenedClaims {
            buf,
            at: l.at,
            principal_len: l.principal_len,
            client_id_len: l.client_id_len,
            payload_len: l.payload_len,
            has_client_id: l.has_client_id,
        }
    }

    fn fixed<const N: usize>(&self, offset: usize) -> [u8; N] {
        claims::arr(&self.buf, self.at + offset)
    }

    fn bytes(&self, from: usize, len: usize) -> &[u8] {
        let start = self.at + FIXED_LEN + from;
        self.buf.get(start..start + len).unwrap_or_default()
    }

    fn text(&self, from: usize, len: usize) -> &str {
        let bytes = self.bytes(from, len);
        // SAFETY: `claims::decode` validated this range as UTF-8 before the
        // value was built, and `buf` is private and never mutated after.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// See [`Claims::principal`].
    pub fn principal(&self) -> &str {
        self.text(0, self.principal_len.into())
    }

    /// See [`Claims::client_id`].
    pub fn client_id(&self) -> Option<&str> {
        self.has_client_id
            .then(|| self.text(self.principal_len.into(), self.client_id_len.into()))
    }

    /// See [`Claims::payload`].
    pub fn payload(&self) -> &[u8] {
        let from = usize::from(self.principal_len) + usize::from(self.client_id_len);
        self.bytes(from, self.payload_len as usize)
    }

    /// See [`Claims::request_digest`].
    pub fn request_digest(&self) -> [u8; 32] {
        self.fixed(claims::AT_DIGEST)
    }

    /// See [`Claims::issued_at`].
    pub fn issued_at(&self) -> u64 {
        u64::from_be_bytes(self.fixed(claims::AT_ISSUED))
    }

    /// See [`Claims::expires_at`].
    pub fn expires_at(&self) -> u64 {
        u64::from_be_bytes(self.fixed(claims::AT_EXPIRES))
    }

    /// See [`Claims::nonce`].
    pub fn nonce(&self) -> [u8; 16] {
        self.fixed(claims::AT_NONCE)
    }

    /// See [`Claims::round`].
    pub fn round(&self) -> u32 {
        u32::from_be_bytes(self.fixed(claims::AT_ROUND))
    }

    /// Borrowed view of these claims.
    pub fn as_ref(&self) -> ClaimsRef<'_> {
        ClaimsRef {
            principal: self.principal(),
            client_id: self.client_id(),
            request_digest: self.request_digest(),
            issued_at: self.issued_at(),
            expires_at: self.expires_at(),
            nonce: self.nonce(),
            round: self.round(),
            payload: self.payload(),
        }
    }

    /// The payload alone, reusing the buffer (no copy of other claims).
    pub fn into_payload(self) -> Vec<u8> {
        let start = (self.at + FIXED_LEN + usize::from(self.principal_len))
            + usize::from(self.client_id_len);
        let mut buf = self.buf;
        buf.truncate(start + self.payload_len as usize);
        buf.drain(..start.min(buf.len()));
        buf
    }

    /// Converts into owned [`Claims`]; the payload reuses the buffer.
    pub fn into_claims(self) -> Claims {
        let c = self.as_ref();
        let (principal, client_id) = (c.principal.to_owned(), c.client_id.map(str::to_owned));
        let (request_digest, issued_at, expires_at, nonce, round) = (
            c.request_digest,
            c.issued_at,
            c.expires_at,
            c.nonce,
            c.round,
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
            .field("request_digest", &self.request_digest())
            .field("issued_at", &self.issued_at())
            .field("expires_at", &self.expires_at())
            .field("nonce", &self.nonce())
            .field("round", &self.round())
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
    use crate::state::claims::tests::sample;

    fn opened(c: &Claims, prefix: usize) -> OpenedClaims {
        let mut buf = vec![0xee; prefix];
        c.encode_into(&mut buf).unwrap();
        buf.extend_from_slice(&[0xdd; 16]); // a tag after the record
        let end = buf.len() - 16;
        let layout = {
            let r = claims::decode(&buf[prefix..end]).unwrap();
            Layout::of(prefix, &r)
        };
        OpenedClaims::new(buf, layout)
    }

    #[test]
    fn views_and_conversions_match_the_claims() {
        for client in [None, Some(""), Some("cli")] {
            let c = sample(client);
            let o = opened(&c, 6);
            assert_eq!(o.principal(), "alice");
            assert_eq!(o.request_digest(), [7; 32]);
            assert_eq!((o.issued_at(), o.expires_at()), (1_000, 61_000));
            assert_eq!((o.nonce(), o.round()), ([9; 16], 2));
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
