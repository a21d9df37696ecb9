//! `[server] model_map`: the model names clients send (Claude Code's own ids, say) mapped onto
//! configured models, by exact name or glob (`*` any run of characters, `?` one character).
//!
//! A configured model's own name always wins; then an exact key; then the globs that match,
//! the longest pattern first (the most specific), ties in key order.

use std::collections::BTreeMap;

use crate::error::GatewayError;

#[derive(Debug, Default)]
pub(crate) struct ModelMap {
    exact: BTreeMap<String, String>,
    /// (pattern, target), longest pattern first.
    globs: Vec<(String, String)>,
}

impl ModelMap {
    pub(crate) fn new(map: &BTreeMap<String, String>) -> Result<ModelMap, GatewayError> {
        let mut out = ModelMap::default();
        for (pattern, target) in map {
            if pattern.is_empty() || target.is_empty() {
                return Err(GatewayError::Config(
                    "server.model_map: names and targets must not be empty".into(),
                ));
            }
            if pattern.contains(['*', '?']) {
                out.globs.push((pattern.clone(), target.clone()));
            } else {
                out.exact.insert(pattern.clone(), target.clone());
            }
        }
        // Stable: equal lengths keep key order.
        out.globs.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        Ok(out)
    }

    /// Every target, to check against the configured models.
    pub(crate) fn targets(&self) -> impl Iterator<Item = (&str, &str)> {
        self.exact
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(self.globs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The configured model a requested name maps to, if any.
    pub(crate) fn target(&self, requested: &str) -> Option<&str> {
        if let Some(target) = self.exact.get(requested) {
            return Some(target);
        }
        self.globs
            .iter()
            .find(|(pattern, _)| glob_match(pattern.as_bytes(), requested.as_bytes()))
            .map(|(_, target)| target.as_str())
    }
}

/// `*` matches any run of bytes, `?` one character; everything else itself. Linear in practice:
/// the classic backtrack to the last `*` only.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            if pattern[p] == b'?' {
                // One whole UTF-8 character.
                t += 1;
                while t < text.len() && text[t] & 0xC0 == 0x80 {
                    t += 1;
                }
            } else {
                t += 1;
            }
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn exact_then_the_most_specific_glob() {
        let map: BTreeMap<String, String> = [
            ("claude-*", "general"),
            ("claude-haiku-*", "small"),
            ("claude-sonnet-4-5", "big"),
            ("gpt-?", "one"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
        let m = ModelMap::new(&map).unwrap();
        assert_eq!(m.target("claude-sonnet-4-5"), Some("big"));
        assert_eq!(m.target("claude-sonnet-4-5-20250929"), Some("general"));
        assert_eq!(m.target("claude-haiku-4-5-20251001"), Some("small"));
        assert_eq!(m.target("gpt-4"), Some("one"));
        assert_eq!(m.target("gpt-4o"), None);
        assert_eq!(m.target("other"), None);
        assert!(glob_match(b"a*b*c", b"aXbYbZc"));
        assert!(!glob_match(b"a*b", b"aXbY"));
        assert!(glob_match(b"?", "é".as_bytes()));
    }
}
