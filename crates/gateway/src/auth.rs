//! Bearer keys. Keys are kept only as SHA-256 digests and a presented key is digested and
//! compared with every configured digest in constant time (`subtle`), so neither the time taken
//! nor an early exit tells an attacker how much of a key matched; digesting first also hides the
//! keys' lengths. Keys are never logged and never echoed.

use std::net::IpAddr;

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::error::{ApiError, GatewayError};

/// Who a request is, for rate limiting: the index of the key it presented, or, when the
/// gateway runs without keys, the client's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Identity {
    Key(usize),
    Peer(IpAddr),
}

/// The accepted keys, as digests.
#[derive(Default)]
pub(crate) struct Keys {
    digests: Vec<[u8; 32]>,
}

impl Keys {
    /// Keys from the value of the keys variable: comma-separated, blanks around them ignored.
    /// An unset or empty variable means no keys (no auth); a set variable that holds no key is
    /// a mistake worth stopping for.
    pub(crate) fn from_env_value(var: &str, value: Option<String>) -> Result<Keys, GatewayError> {
        let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
            return Ok(Keys::default());
        };
        let digests: Vec<[u8; 32]> = value
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| Sha256::digest(k.as_bytes()).into())
            .collect();
        if digests.is_empty() {
            return Err(GatewayError::Config(format!(
                "{var} is set but holds no key (expected comma-separated keys)"
            )));
        }
        Ok(Keys { digests })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// The index of the matching key. Every digest is compared, whatever matched.
    fn find(&self, presented: &[u8]) -> Option<usize> {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        let mut found = subtle::Choice::from(0);
        let mut index = 0u64;
        for (i, key) in self.digests.iter().enumerate() {
            let equal = key.ct_eq(&digest);
            index = u64::conditional_select(&index, &(i as u64), equal);
            found |= equal;
        }
        bool::from(found).then_some(index as usize)
    }

    /// Checks a request's `Authorization: Bearer KEY`. Without configured keys everyone is let
    /// in and known by address.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Identity, ApiError> {
        if self.is_empty() {
            return Ok(Identity::Peer(peer.unwrap_or(IpAddr::from([127, 0, 0, 1]))));
        }
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(ApiError::missing_key)?
            .as_bytes();
        let token = bearer_token(value).ok_or_else(ApiError::missing_key)?;
        self.find(token)
            .map(Identity::Key)
            .ok_or_else(ApiError::wrong_key)
    }
}

/// The token of `Bearer TOKEN` (the scheme in any letter case, blanks around the token ignored).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    if value.len() <= SCHEME.len() || !value[..SCHEME.len()].eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let token = value[SCHEME.len()..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(auth).unwrap());
        h
    }

    #[test]
    fn keys_match_by_digest() {
        let keys = Keys::from_env_value("K", Some(" sk-one , sk-two,".into())).unwrap();
        assert_eq!(
            keys.authenticate(&headers("Bearer sk-two"), None),
            Ok(Identity::Key(1))
        );
        assert_eq!(
            keys.authenticate(&headers("bearer  sk-one "), None),
            Ok(Identity::Key(0))
        );
        assert_eq!(
            keys.authenticate(&headers("Bearer sk-on"), None),
            Err(ApiError::wrong_key())
        );
        assert_eq!(
            keys.authenticate(&headers("Basic c2stb25l"), None),
            Err(ApiError::missing_key())
        );
        assert_eq!(
            keys.authenticate(&HeaderMap::new(), None),
            Err(ApiError::missing_key())
        );
    }

    #[test]
    fn no_keys_means_identity_by_address() {
        let keys = Keys::from_env_value("K", None).unwrap();
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(
            keys.authenticate(&HeaderMap::new(), Some(ip)),
            Ok(Identity::Peer(ip))
        );
        assert!(Keys::from_env_value("K", Some(" , ".into())).is_err());
        assert!(Keys::from_env_value("K", Some(String::new()))
            .unwrap()
            .is_empty());
    }
}
