//! The claims sealed into every `requestState`, and their fixed binary
//! layout (see the module docs of [`crate::state`] for the table).

use super::error::StateError;

/// Length of the fixed part of the claims layout, before the variable fields.
pub const FIXED_LEN: usize = 77;

// Offsets of the fixed fields (shared by `decode` and `OpenedClaims`).
pub(super) const AT_ISSUED: usize = 0;
pub(super) const AT_EXPIRES: usize = 8;
pub(super) const AT_NONCE: usize = 16;
pub(super) const AT_ROUND: usize = 32;
pub(super) const AT_DIGEST: usize = 36;
const AT_FLAGS: usize = 68;
const AT_LENGTHS: usize = 69;

const FLAG_CLIENT_ID: u8 = 0x01;

/// Everything a state carries. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// Authenticated principal the state was issued to.
    pub principal: String,
    /// OAuth client id of the caller, when known.
    pub client_id: Option<String>,
    /// [`crate::state::request_digest`] of the originating request.
    pub request_digest: [u8; 32],
    /// When the state was sealed (Unix ms).
    pub issued_at: u64,
    /// When the state stops being accepted (Unix ms).
    pub expires_at: u64,
    /// Random value identifying this state for single use.
    pub nonce: [u8; 16],
    /// MRTR round number (1 for the first `input_required`).
    pub round: u32,
    /// Application bytes, e.g. answers gathered in earlier rounds.
    pub payload: Vec<u8>,
}

/// Borrowed view of [`Claims`], as parsed in place from an opened token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimsRef<'a> {
    /// See [`Claims::principal`].
    pub principal: &'a str,
    /// See [`Claims::client_id`].
    pub client_id: Option<&'a str>,
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
    /// See [`Claims::payload`].
    pub payload: &'a [u8],
}

impl ClaimsRef<'_> {
    /// Copies the borrowed claims into an owned [`Claims`].
    pub fn to_claims(&self) -> Claims {
        Claims {
            principal: self.principal.to_owned(),
            client_id: self.client_id.map(str::to_owned),
            request_digest: self.request_digest,
            issued_at: self.issued_at,
            expires_at: self.expires_at,
            nonce: self.nonce,
            round: self.round,
            payload: self.payload.to_vec(),
        }
    }
}

impl Claims {
    /// Borrowed view of these claims.
    pub fn as_ref(&self) -> ClaimsRef<'_> {
        ClaimsRef {
            principal: &self.principal,
            client_id: self.client_id.as_deref(),
            request_digest: self.request_digest,
            issued_at: self.issued_at,
            expires_at: self.expires_at,
            nonce: self.nonce,
            round: self.round,
            payload: &self.payload,
        }
    }

    /// Length of the encoded layout.
    pub fn encoded_len(&self) -> usize {
        FIXED_LEN
            + self.principal.len()
            + self.client_id.as_ref().map_or(0, String::len)
            + self.payload.len()
    }

    /// Appends the binary layout to `out`. Fails with `TooLarge` when a
    /// field does not fit its length prefix.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let p_len = u16::try_from(self.principal.len()).map_err(|_| StateError::TooLarge)?;
        let c_len = u16::try_from(self.client_id.as_ref().map_or(0, String::len))
            .map_err(|_| StateError::TooLarge)?;
        let pl_len = u32::try_from(self.payload.len()).map_err(|_| StateError::TooLarge)?;
        out.reserve(self.encoded_len());
        out.extend_from_slice(&self.issued_at.to_be_bytes());
        out.extend_from_slice(&self.expires_at.to_be_bytes());
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.round.to_be_bytes());
        out.extend_from_slice(&self.request_digest);
        out.push(if self.client_id.is_some() {
            FLAG_CLIENT_ID
        } else {
            0
        });
        out.extend_from_slice(&p_len.to_be_bytes());
        out.extend_from_slice(&c_len.to_be_bytes());
        out.extend_from_slice(&pl_len.to_be_bytes());
        out.extend_from_slice(self.principal.as_bytes());
        if let Some(c) = &self.client_id {
            out.extend_from_slice(c.as_bytes());
        }
        out.extend_from_slice(&self.payload);
        Ok(())
    }
}

/// `N` bytes of `b` at `at`, zeros where `b` is too short.
#[inline]
pub(super) fn arr<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = b.get(at..at + N) {
        a.copy_from_slice(s);
    }
    a
}

/// Parses the binary layout; the input must be exactly one claims record.
// Always inlined: returned through memory, the 120-byte `ClaimsRef` cost a
// store-forwarding stall in every caller on the open path.
#[inline(always)]
pub fn decode(b: &[u8]) -> Result<ClaimsRef<'_>, StateError> {
    if b.len() < FIXED_LEN {
        return Err(StateError::Malformed("claims shorter than fixed layout"));
    }
    let flags = b[AT_FLAGS];
    if flags & !FLAG_CLIENT_ID != 0 {
        return Err(StateError::Malformed("unknown claims flag bits"));
    }
    let p_len = u16::from_be_bytes(arr(b, AT_LENGTHS)) as usize;
    let c_len = u16::from_be_bytes(arr(b, AT_LENGTHS + 2)) as usize;
    let pl_len = u32::from_be_bytes(arr(b, AT_LENGTHS + 4)) as usize;
    if flags & FLAG_CLIENT_ID == 0 && c_len != 0 {
        return Err(StateError::Malformed("client id length without flag"));
    }
    let total = FIXED_LEN
        .checked_add(p_len)
        .and_then(|t| t.checked_add(c_len))
        .and_then(|t| t.checked_add(pl_len))
        .ok_or(StateError::Malformed("claims length overflow"))?;
    if total != b.len() {
        return Err(StateError::Malformed("claims length mismatch"));
    }
    let rest = &b[FIXED_LEN..];
    let (texts, payload) = rest.split_at(p_len + c_len);
    let (p, c) = texts.split_at(p_len);
    let (principal, client) = if texts.is_ascii() {
        // Both strings are ASCII (checked together, they are adjacent),
        // hence UTF-8: one short scan instead of two validator calls.
        // SAFETY: ASCII bytes are valid UTF-8.
        unsafe {
            (
                std::str::from_utf8_unchecked(p),
                std::str::from_utf8_unchecked(c),
            )
        }
    } else {
        (
            std::str::from_utf8(p).map_err(|_| StateError::Malformed("principal not UTF-8"))?,
            std::str::from_utf8(c).map_err(|_| StateError::Malformed("client id not UTF-8"))?,
        )
    };
    let client_id = (flags & FLAG_CLIENT_ID != 0).then_some(client);
    Ok(ClaimsRef {
        principal,
        client_id,
        request_digest: arr(b, AT_DIGEST),
        issued_at: u64::from_be_bytes(arr(b, AT_ISSUED)),
        expires_at: u64::from_be_bytes(arr(b, AT_EXPIRES)),
        nonce: arr(b, AT_NONCE),
        round: u32::from_be_bytes(arr(b, AT_ROUND)),
        payload,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Sample claims, also used by the `opened` tests.
    pub(in crate::state) fn sample(client: Option<&str>) -> Claims {
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

    #[test]
    fn round_trip_with_and_without_client_id() {
        for c in [None, Some(""), Some("cli")] {
            let claims = sample(c);
            let mut buf = Vec::new();
            claims.encode_into(&mut buf).unwrap();
            assert_eq!(buf.len(), claims.encoded_len());
            assert_eq!(decode(&buf).unwrap().to_claims(), claims);
        }
    }

    #[test]
    fn trailing_or_missing_bytes_are_malformed() {
        let mut buf = Vec::new();
        sample(None).encode_into(&mut buf).unwrap();
        let mut longer = buf.clone();
        longer.push(0);
        assert!(matches!(decode(&longer), Err(StateError::Malformed(_))));
        assert!(matches!(
            decode(&buf[..buf.len() - 1]),
            Err(StateError::Malformed(_))
        ));
        let mut flags = buf.clone();
        flags[68] = 0x80;
        assert!(matches!(decode(&flags), Err(StateError::Malformed(_))));
    }

    #[test]
    fn non_ascii_text_is_validated_per_field() {
        let mut c = sample(Some("clé"));
        c.principal = "zoë".into();
        let mut buf = Vec::new();
        c.encode_into(&mut buf).unwrap();
        assert_eq!(decode(&buf).unwrap().to_claims(), c);
        // Principal "zo\xc3" + client "\xabcl": the concatenation is
        // valid UTF-8, each field is not.
        let mut split = sample(Some("\u{eb}cl"));
        split.principal = "zo".into();
        let mut buf = Vec::new();
        split.encode_into(&mut buf).unwrap();
        buf[70] += 1; // principal length 2 -> 3
        buf[72] -= 1; // client id length 4 -> 3
        assert_eq!(
            decode(&buf),
            Err(StateError::Malformed("principal not UTF-8"))
        );
        buf[FIXED_LEN] = 0xff;
        assert_eq!(
            decode(&buf),
            Err(StateError::Malformed("principal not UTF-8"))
        );
    }

    #[test]
    fn oversized_principal_is_refused() {
        let mut c = sample(None);
        c.principal = "x".repeat(70_000);
        assert_eq!(c.encode_into(&mut Vec::new()), Err(StateError::TooLarge));
    }
}
