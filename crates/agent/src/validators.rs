//! Compiled JSON-schema validators, shared by schema text.
//!
//! A server-side run builds its toolbox per request, and the same client tools come back with
//! every request of a conversation (Codex and the Agents SDK resend their whole tool list each
//! turn). Compiling a validator costs about 20 µs per tool — more than the rest of decoding a
//! Responses request — while writing the schema out as the cache key costs a few. The cache is
//! bounded (least recently used out), so a client inventing schemas cannot grow it.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use hashlink::LruCache;
use serde_json::Value;

/// Schemas kept compiled; far more than the tools any deployment offers at once.
const CAPACITY: usize = 512;

/// Schemas longer than this (as JSON text) are compiled each time and not kept, so the cache's
/// memory stays bounded by `CAPACITY × MAX_KEY_BYTES` whatever clients send.
const MAX_KEY_BYTES: usize = 64 << 10;

fn cache() -> &'static Mutex<LruCache<String, Arc<jsonschema::Validator>>> {
    static CACHE: OnceLock<Mutex<LruCache<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(LruCache::new(CAPACITY)))
}

/// The validator of `schema`, compiled once per distinct schema text. The error is the
/// compiler's, as `jsonschema::validator_for` gives it.
pub(crate) fn validator(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    let key = serde_json::to_string(schema).map_err(|e| e.to_string())?;
    if key.len() > MAX_KEY_BYTES {
        return compile(schema);
    }
    // A poisoned lock only means a panic elsewhere mid-update; the map is still consistent.
    if let Some(found) = cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Ok(Arc::clone(found));
    }
    // Compiled outside the lock: two requests racing on a new schema both compile it, and the
    // second insert replaces the first with an equal validator.
    let compiled = compile(schema)?;
    cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, Arc::clone(&compiled));
    Ok(compiled)
}

fn compile(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    jsonschema::validator_for(schema)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_schema_text_shares_one_validator() {
        let schema = json!({"type": "object", "properties": {"cache_test_a": {"type": "integer"}}});
        let a = validator(&schema).unwrap();
        let b = validator(&schema.clone()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let other = json!({"type": "object", "properties": {"cache_test_a": {"type": "string"}}});
        let c = validator(&other).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(a.is_valid(&json!({"cache_test_a": 1})));
        assert!(!c.is_valid(&json!({"cache_test_a": 1})));
    }

    #[test]
    fn a_bad_schema_is_an_error_every_time() {
        let bad = json!({"type": "no-such-type"});
        assert!(validator(&bad).is_err());
        assert!(validator(&bad).is_err());
    }
}
