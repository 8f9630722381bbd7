//! [`Sealer`]: seal claims with the current key, open with any listed key,
//! and check expiry and binding.

use std::time::Duration;

use rand::RngCore;

use super::claims::{self, Claims, ClaimsRef};
use super::codec::{CodecName, SealError, StateCodec};
use super::envelope::{self, HEADER_LEN, Header, VERSION};
use super::error::{ConfigError, StateError};
use super::keyring::KeyRing;
use super::opened::{Layout, OpenedClaims};
use super::replay::ReplayGuard;
use std::ops::Range;

/// What an opened state must be bound to.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The authenticated principal making the retry.
    pub principal: &'a str,
    /// [`crate::state::request_digest`] of the retried request.
    pub request_digest: &'a [u8; 32],
}

/// Limits and lifetimes of a [`Sealer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealerConfig {
    /// Longest token accepted or produced, in characters (checked before
    /// any decoding). Default 8 KiB.
    pub max_token_len: usize,
    /// How far in the future an `issued_at` may lie (another instance's
    /// clock running ahead) before the state is `NotYetValid`. Default 5 s.
    /// It never extends a lifetime: a state is `Expired` from `expires_at`
    /// on, exactly.
    pub clock_skew: Duration,
    /// Lifetime given to new claims by [`Sealer::claims`]. Default 10 min.
    pub ttl: Duration,
}

impl Default for SealerConfig {
    fn default() -> Self {
        SealerConfig {
            max_token_len: 8 * 1024,
            clock_skew: Duration::from_secs(5),
            ttl: Duration::from_secs(600),
        }
    }
}

/// Seals and opens `requestState` tokens with one codec and a key ring.
pub struct Sealer {
    codec: CodecName,
    config: SealerConfig,
    skew_ms: u64,
    current: u32,
    keys: Vec<(u32, Box<dyn StateCodec>)>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("codec", &self.codec)
            .field("config", &self.config)
            .field("current_kid", &self.current)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// Builds per-key codec instances (key schedules computed once).
    pub fn new(
        ring: &KeyRing,
        codec: CodecName,
        config: SealerConfig,
    ) -> Result<Self, ConfigError> {
        if config.max_token_len < 128 {
            return Err(ConfigError::CapTooSmall(config.max_token_len));
        }
        let keys: Vec<_> = ring
            .iter()
            .map(|(kid, key)| (kid, codec.instantiate(key)))
            .collect();
        if keys.is_empty() {
            return Err(ConfigError::NoKeys);
        }
        Ok(Sealer {
            codec,
            config,
            skew_ms: u64::try_from(config.clock_skew.as_millis()).unwrap_or(u64::MAX),
            current: ring.current_kid(),
            keys,
        })
    }

    /// The codec in use.
    pub fn codec(&self) -> CodecName {
        self.codec
    }

    /// The configuration in use.
    pub fn config(&self) -> &SealerConfig {
        &self.config
    }

    /// Fresh claims issued at `now_ms`, expiring after the configured TTL,
    /// with a random nonce.
    pub fn claims(
        &self,
        principal: &str,
        client_id: Option<&str>,
        request_digest: [u8; 32],
        round: u32,
        payload: Vec<u8>,
        now_ms: u64,
    ) -> Claims {
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        let ttl = u64::try_from(self.config.ttl.as_millis()).unwrap_or(u64::MAX);
        Claims {
            principal: principal.to_owned(),
            client_id: client_id.map(str::to_owned),
            request_digest,
            issued_at: now_ms,
            expires_at: now_ms.saturating_add(ttl),
            nonce,
            round,
            payload,
        }
    }

    /// Predicted token length for claims of this size.
    pub fn token_len(&self, claims: &Claims) -> usize {
        let bin = HEADER_LEN + self.codec.nonce_len() + claims.encoded_len() + self.codec.tag_len();
        (bin * 4).div_ceil(3)
    }

    /// Seals `claims` with the current key.
    pub fn seal(&self, claims: &Claims) -> Result<String, SealError> {
        if self.token_len(claims) > self.config.max_token_len {
            return Err(SealError::TooLarge);
        }
        let mut body = Vec::with_capacity(claims.encoded_len());
        claims
            .encode_into(&mut body)
            .map_err(|_| SealError::TooLarge)?;
        let header = Header {
            version: VERSION,
            kid: self.current,
            codec: self.codec,
        };
        let mut env = Vec::with_capacity(
            HEADER_LEN + self.codec.nonce_len() + body.len() + self.codec.tag_len(),
        );
        env.extend_from_slice(&header.to_bytes());
        let codec = self
            .codec_for(self.current)
            .map_err(|_| SealError::TooLarge)?;
        codec.seal(&mut env, &body)?;
        Ok(envelope::encode(&env))
    }

    #[inline]
    fn codec_for(&self, kid: u32) -> Result<&dyn StateCodec, StateError> {
        self.keys
            .iter()
            .find(|(k, _)| *k == kid)
            .map(|(_, c)| c.as_ref())
            .ok_or(StateError::UnknownKey(kid))
    }

    /// Decodes `token` into `buf`, checks header and tag, and returns where
    /// the claims record sits in `buf` (a small return value: the callers
    /// inline, this does not).
    fn verify_tag_range(
        &self,
        token: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<Range<usize>, StateError> {
        envelope::decode_into(token, self.config.max_token_len, buf)?;
        let header = Header::parse(buf)?;
        if header.codec != self.codec {
            return Err(StateError::Malformed(
                "algorithm differs from the configured codec",
            ));
        }
        let codec = self.codec_for(header.kid)?;
        let base = buf.as_ptr() as usize;
        let body = codec.open(buf.as_mut_slice(), HEADER_LEN)?;
        let start = (body.as_ptr() as usize).wrapping_sub(base);
        Ok(start..start + body.len())
    }

    /// Time window: `issued_at ≤ now + skew`, then `now < expires_at` (no
    /// skew: a state is refused once its lifetime has passed).
    #[inline]
    fn check_time(&self, c: &ClaimsRef<'_>, now_ms: u64) -> Result<(), StateError> {
        if c.issued_at > now_ms.saturating_add(self.skew_ms) {
            return Err(StateError::NotYetValid);
        }
        if now_ms >= c.expires_at {
            return Err(StateError::Expired);
        }
        Ok(())
    }

    /// Refuses (`ExpiryBeyondTtl`) a state that would stay valid longer
    /// than this sealer could have made it: `expires_at` past `now` + TTL +
    /// clock skew. Not part of [`Sealer::open`]; a server that shares keys
    /// across instances with different TTLs calls it, so that no instance
    /// honours a lifetime it would not have sealed (its one-time records
    /// only cover lifetimes it knows of).
    pub fn check_lifetime(&self, expires_at: u64, now_ms: u64) -> Result<(), StateError> {
        let ttl = u64::try_from(self.config.ttl.as_millis()).unwrap_or(u64::MAX);
        if expires_at > now_ms.saturating_add(ttl).saturating_add(self.skew_ms) {
            return Err(StateError::ExpiryBeyondTtl);
        }
        Ok(())
    }

    /// Binding: principal first, then request digest.
    #[inline]
    fn check_binding(c: &ClaimsRef<'_>, binding: &Binding<'_>) -> Result<(), StateError> {
        if c.principal != binding.principal {
            return Err(StateError::WrongPrincipal);
        }
        if &c.request_digest != binding.request_digest {
            return Err(StateError::WrongRequest);
        }
        Ok(())
    }

    /// Decodes `token` into `buf` and verifies its tag, without checking
    /// time or binding. For diagnostics (`state inspect`): an expired state
    /// still shows its claims.
    #[inline]
    pub fn verify_tag_in<'b>(
        &self,
        token: &[u8],
        buf: &'b mut Vec<u8>,
    ) -> Result<ClaimsRef<'b>, StateError> {
        let body = self.verify_tag_range(token, buf)?;
        let buf: &'b Vec<u8> = buf;
        claims::decode(buf.get(body).unwrap_or_default())
    }

    /// Decodes and verifies `token` into `buf` and checks its time window,
    /// without checking the binding.
    #[inline]
    pub fn verify_in<'b>(
        &self,
        token: &[u8],
        now_ms: u64,
        buf: &'b mut Vec<u8>,
    ) -> Result<ClaimsRef<'b>, StateError> {
        let body = self.verify_tag_range(token, buf)?;
        let buf: &'b Vec<u8> = buf;
        let c = claims::decode(buf.get(body).unwrap_or_default())?;
        self.check_time(&c, now_ms)?;
        Ok(c)
    }

    /// Zero-copy open: claims borrow `buf`. Checks, in order: size, base64,
    /// version, algorithm, key id, tag, layout, time window, principal,
    /// request.
    // One body, no nested calls returning `ClaimsRef`: each level moved the
    // 128-byte result through the stack again.
    #[inline]
    pub fn open_in<'b>(
        &self,
        token: &[u8],
        binding: &Binding<'_>,
        now_ms: u64,
        buf: &'b mut Vec<u8>,
    ) -> Result<ClaimsRef<'b>, StateError> {
        let body = self.verify_tag_range(token, buf)?;
        let buf: &'b Vec<u8> = buf;
        let c = claims::decode(buf.get(body).unwrap_or_default())?;
        self.check_time(&c, now_ms)?;
        Self::check_binding(&c, binding)?;
        Ok(c)
    }

    /// Opens `token` with the checks of [`Sealer::open_in`] and returns
    /// owned claims that keep the one decode buffer (no further copies).
    pub fn open(
        &self,
        token: &str,
        binding: &Binding<'_>,
        now_ms: u64,
    ) -> Result<OpenedClaims, StateError> {
        self.open_bytes(token.as_bytes(), binding, now_ms)
    }

    /// Like [`Sealer::open`] for a token that may not be UTF-8.
    pub fn open_bytes(
        &self,
        token: &[u8],
        binding: &Binding<'_>,
        now_ms: u64,
    ) -> Result<OpenedClaims, StateError> {
        // Exact capacity up front (no growth path inside the decoder); a
        // token over the cap allocates nothing and fails `TooLarge` next.
        let cap = if token.len() <= self.config.max_token_len {
            token.len() / 4 * 3 + 2
        } else {
            0
        };
        let mut buf = Vec::with_capacity(cap);
        let body = self.verify_tag_range(token, &mut buf)?;
        let layout = {
            let at = body.start;
            let c = claims::decode(buf.get(body).unwrap_or_default())?;
            self.check_time(&c, now_ms)?;
            Self::check_binding(&c, binding)?;
            Layout::of(at, &c)
        };
        Ok(OpenedClaims::new(buf, layout))
    }

    /// Opens `token`, then consumes its nonce in `guard`: a second
    /// successful open of the same state yields `Replayed`.
    pub fn open_once(
        &self,
        token: &str,
        binding: &Binding<'_>,
        now_ms: u64,
        guard: &dyn ReplayGuard,
    ) -> Result<OpenedClaims, StateError> {
        let c = self.open(token, binding, now_ms)?;
        guard.consume(&c.nonce(), c.expires_at(), now_ms)?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetime_is_bounded_by_ttl_plus_skew() {
        let cfg = SealerConfig {
            ttl: Duration::from_secs(2),
            clock_skew: Duration::from_secs(5),
            ..SealerConfig::default()
        };
        let s = Sealer::new(&KeyRing::generate(), CodecName::HmacSha256, cfg).unwrap();
        let now = 1_000_000;
        assert_eq!(s.check_lifetime(now + 7_000, now), Ok(()));
        assert_eq!(
            s.check_lifetime(now + 7_001, now),
            Err(StateError::ExpiryBeyondTtl)
        );
        assert_eq!(
            s.check_lifetime(u64::MAX, now),
            Err(StateError::ExpiryBeyondTtl)
        );
        // What this sealer issues always passes.
        let c = s.claims("a", None, [0; 32], 1, Vec::new(), now);
        assert_eq!(s.check_lifetime(c.expires_at, now), Ok(()));
    }
}
