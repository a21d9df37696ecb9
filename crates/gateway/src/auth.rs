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

/// The accepted keys, as digests, with the user each names (`None`: named after its digest).
#[derive(Default)]
pub(crate) struct Keys {
    digests: Vec<[u8; 32]>,
    users: Vec<Option<String>>,
}

/// One `[[server.keys]]` entry: a key of a named user, given by the variable that holds it or by
/// its SHA-256 digest (hex), so the configuration file need not hold the key itself.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    /// The user the key acts for: its responses, files, conversations, memories, workspaces.
    pub user: String,
    /// The environment variable holding the key.
    pub key_env: Option<String>,
    /// The key's SHA-256 digest, 64 hex digits (`printf %s KEY | sha256sum`).
    pub key_sha256: Option<String>,
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
        let users = vec![None; digests.len()];
        Ok(Keys { digests, users })
    }

    /// Adds the `[[server.keys]]` entries (each with exactly one of `key_env`, `key_sha256`);
    /// `var` reads the environment. A key already in the list gets the entry's user.
    pub(crate) fn with_named(
        mut self,
        entries: &[KeyEntry],
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Keys, GatewayError> {
        for entry in entries {
            let user = entry.user.trim();
            if user.is_empty() || user.len() > 128 || user.chars().any(char::is_control) {
                return Err(GatewayError::Config(
                    "server.keys: `user` must be a name of 1 to 128 printable characters".into(),
                ));
            }
            let digest: [u8; 32] = match (&entry.key_env, &entry.key_sha256) {
                (Some(name), None) => match var(name).filter(|k| !k.trim().is_empty()) {
                    Some(key) => Sha256::digest(key.trim().as_bytes()).into(),
                    None => {
                        return Err(GatewayError::Config(format!(
                            "server.keys: the key of `{user}` is in {name}, which is not set"
                        )))
                    }
                },
                (None, Some(hex)) => parse_digest(hex).ok_or_else(|| {
                    GatewayError::Config(format!(
                        "server.keys: the key_sha256 of `{user}` is not 64 hex digits"
                    ))
                })?,
                _ => {
                    return Err(GatewayError::Config(format!(
                        "server.keys: give `{user}` exactly one of key_env and key_sha256"
                    )))
                }
            };
            match self.digests.iter().position(|d| *d == digest) {
                Some(i) => self.users[i] = Some(user.to_owned()),
                None => {
                    self.digests.push(digest);
                    self.users.push(Some(user.to_owned()));
                }
            }
        }
        Ok(self)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// The user a request acts for: every stored object (responses, files, conversations) and
    /// every memory and workspace belongs to one. A key's user is named after a digest of the
    /// key's digest (stable across restarts and reorderings of the key list; the key cannot be
    /// recovered from it); without keys there is one local user.
    /// The name of a client's rate limit in a store shared by instances: the same for one key
    /// on every instance (a digest of the key's digest, as [`Keys::user_of`] names users, but
    /// per key: two keys of one user have a limit each), or the client's address.
    pub(crate) fn limit_key(&self, who: Identity) -> String {
        match who {
            Identity::Key(i) => match self.digests.get(i) {
                Some(digest) => {
                    let d = Sha256::new()
                        .chain_update(b"toolbridge-rate:")
                        .chain_update(digest)
                        .finalize();
                    let mut name = String::from("key:");
                    for b in &d[..16] {
                        name.push_str(&format!("{b:02x}"));
                    }
                    name
                }
                None => format!("key#{i}"),
            },
            Identity::Peer(ip) => format!("ip:{ip}"),
        }
    }

    pub(crate) fn user_of(&self, who: Identity) -> String {
        match who {
            Identity::Key(i) => match (self.users.get(i).cloned().flatten(), self.digests.get(i)) {
                (Some(user), _) => user,
                (None, Some(digest)) => {
                    let mut h = Sha256::new();
                    h.update(b"toolbridge-user:");
                    h.update(digest);
                    let d = h.finalize();
                    let mut name = String::from("key_");
                    for b in &d[..8] {
                        name.push_str(&format!("{b:02x}"));
                    }
                    name
                }
                (None, None) => "local".to_owned(),
            },
            Identity::Peer(_) => "local".to_owned(),
        }
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

    /// Checks a request's `Authorization: Bearer KEY` or `x-api-key: KEY`. Without configured keys everyone is let
    /// in and known by address.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Identity, ApiError> {
        if self.is_empty() {
            return Ok(Identity::Peer(peer.unwrap_or(IpAddr::from([127, 0, 0, 1]))));
        }
        // `Authorization: Bearer KEY` (OpenAI's clients, Claude Code's auth token) or
        // `x-api-key: KEY` (Anthropic's clients).
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer_token(v.as_bytes()))
            .or_else(|| {
                headers
                    .get("x-api-key")
                    .map(|v| v.as_bytes().trim_ascii())
                    .filter(|k| !k.is_empty())
            })
            .ok_or_else(ApiError::missing_key)?;
        self.find(token)
            .map(Identity::Key)
            .ok_or_else(ApiError::wrong_key)
    }
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
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
        let mut anthropic = HeaderMap::new();
        anthropic.insert("x-api-key", HeaderValue::from_static("sk-two"));
        assert_eq!(keys.authenticate(&anthropic, None), Ok(Identity::Key(1)));
        anthropic.insert("x-api-key", HeaderValue::from_static("sk-three"));
        assert_eq!(
            keys.authenticate(&anthropic, None),
            Err(ApiError::wrong_key())
        );
    }

    #[test]
    fn named_keys_act_for_their_user_and_unnamed_ones_for_a_digest_name() {
        let env = |name: &str| (name == "ALICE_KEY").then(|| "sk-alice".to_owned());
        let bob = format!("{:x}", Sha256::digest(b"sk-bob"));
        let keys = Keys::from_env_value("K", Some("sk-anon".into()))
            .unwrap()
            .with_named(
                &[
                    KeyEntry {
                        user: "alice".into(),
                        key_env: Some("ALICE_KEY".into()),
                        key_sha256: None,
                    },
                    KeyEntry {
                        user: "bob".into(),
                        key_env: None,
                        key_sha256: Some(bob),
                    },
                ],
                &env,
            )
            .unwrap();
        let who = |k: &str| {
            keys.user_of(
                keys.authenticate(&headers(&format!("Bearer {k}")), None)
                    .unwrap(),
            )
        };
        assert_eq!(who("sk-alice"), "alice");
        assert_eq!(who("sk-bob"), "bob");
        let anon = who("sk-anon");
        assert!(anon.starts_with("key_") && anon.len() == 20, "{anon}");
        assert!(!anon.contains("anon"));
        let bad = |e: KeyEntry| Keys::default().with_named(&[e], &env).is_err();
        assert!(bad(KeyEntry {
            user: "x".into(),
            key_env: Some("UNSET".into()),
            key_sha256: None
        }));
        assert!(bad(KeyEntry {
            user: "x".into(),
            key_env: None,
            key_sha256: Some("abc".into())
        }));
        assert!(bad(KeyEntry {
            user: "x".into(),
            key_env: None,
            key_sha256: None
        }));
        assert!(bad(KeyEntry {
            user: " ".into(),
            key_env: Some("ALICE_KEY".into()),
            key_sha256: None
        }));
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
