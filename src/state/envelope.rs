//! The envelope: header layout and base64url framing.
//!
//! Binary form, then base64url without padding:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | version (`1`) |
//! | 1 | 4 | key id, u32 big-endian |
//! | 5 | 1 | algorithm ([`CodecName::id`]) |
//! | 6 | 0/12/24 | AEAD nonce (none for MAC codecs) |
//! | … | n | claims record: plaintext for MAC codecs, ciphertext for AEADs |
//! | end−t | 32/16 | tag: HMAC-SHA256 / BLAKE3 (32) or AEAD tag (16) |
//!
//! The header is covered by the tag (MAC prefix or AEAD associated data).

use super::codec::CodecName;
use super::error::StateError;

/// The only envelope version this build reads and writes.
pub const VERSION: u8 = 1;

/// Length of the header.
pub const HEADER_LEN: usize = 6;

/// The parsed envelope header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Envelope version.
    pub version: u8,
    /// Key id the state was sealed with.
    pub kid: u32,
    /// Codec that sealed it.
    pub codec: CodecName,
}

impl Header {
    /// The six header bytes.
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let k = self.kid.to_be_bytes();
        [self.version, k[0], k[1], k[2], k[3], self.codec.id()]
    }

    /// Parses the header at the start of a decoded envelope: version first
    /// (`UnsupportedVersion`), then the algorithm byte (`Malformed`).
    #[inline]
    pub fn parse(env: &[u8]) -> Result<Header, StateError> {
        let Some(h) = env.get(..HEADER_LEN) else {
            return Err(StateError::Malformed("shorter than envelope header"));
        };
        if h[0] != VERSION {
            return Err(StateError::UnsupportedVersion(h[0]));
        }
        let codec =
            CodecName::from_id(h[5]).ok_or(StateError::Malformed("unknown algorithm byte"))?;
        Ok(Header {
            version: h[0],
            kid: u32::from_be_bytes([h[1], h[2], h[3], h[4]]),
            codec,
        })
    }
}

/// Decodes canonical unpadded base64url into `buf` (cleared first), after
/// checking `token.len() <= max_len`.
#[inline]
pub fn decode_into(token: &[u8], max_len: usize, buf: &mut Vec<u8>) -> Result<(), StateError> {
    if token.len() > max_len {
        return Err(StateError::TooLarge);
    }
    super::base64url::decode_into(token, buf)
        .map_err(|_| StateError::Malformed("not canonical unpadded base64url"))
}

/// Encodes a binary envelope as unpadded base64url.
pub fn encode(env: &[u8]) -> String {
    super::base64url::encode(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_errors() {
        let h = Header {
            version: VERSION,
            kid: 0x01020304,
            codec: CodecName::Aes256GcmSiv,
        };
        assert_eq!(Header::parse(&h.to_bytes()), Ok(h));
        assert_eq!(
            Header::parse(&[2, 0, 0, 0, 0, 1]),
            Err(StateError::UnsupportedVersion(2))
        );
        assert!(matches!(
            Header::parse(&[1, 0, 0, 0, 0, 99]),
            Err(StateError::Malformed(_))
        ));
        assert!(matches!(
            Header::parse(&[1, 0]),
            Err(StateError::Malformed(_))
        ));
    }

    #[test]
    fn decode_is_strict() {
        let mut buf = Vec::new();
        assert_eq!(decode_into(b"AAAA", 3, &mut buf), Err(StateError::TooLarge));
        assert!(decode_into(b"AQ==", 100, &mut buf).is_err());
        assert!(decode_into(b"AR", 100, &mut buf).is_err()); // non-zero trailing bits
        assert!(decode_into(b"a+b/", 100, &mut buf).is_err());
        decode_into(b"AQ", 100, &mut buf).unwrap();
        assert_eq!(buf, [1]);
    }
}
