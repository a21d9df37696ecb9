//! The call block's JSON handling against `serde_json`: the input is a block body. When serde_json
//! reads it as one JSON object with unique top-level keys, the parser must give exactly one call
//! (with the arguments text byte for byte) or exactly one malformed error, as docs/src/parser.md says;
//! either way the result must not depend on the chunking (one byte at a time here).

#![no_main]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt;

use libfuzzer_sys::fuzz_target;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use toolbridge_protocol::parser::{ErrorKind, ModelResponse, Parser, ParserConfig};

/// A top-level object's entries, values as raw text.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// What the policy says the block gives: `Ok((name, arguments))` or `Err(())` for malformed.
fn expected(entries: &Entries) -> Result<(String, String), ()> {
    let get = |k: &str| {
        entries
            .0
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.get())
    };
    let name: String = serde_json::from_str(get("name").ok_or(())?).map_err(|_| ())?;
    let raw = ["arguments", "parameters", "input"]
        .iter()
        .filter_map(|k| get(k))
        .find(|v| *v != "null");
    let arguments = match raw {
        None => "{}".to_owned(),
        Some(v) if v.starts_with('{') => v.to_owned(),
        Some(v) if v.starts_with('"') => {
            let inner: String = serde_json::from_str(v).map_err(|_| ())?;
            let trimmed = inner.trim();
            match serde_json::from_str::<&RawValue>(trimmed) {
                Ok(r) if r.get().starts_with('{') => trimmed.to_owned(),
                _ => return Err(()),
            }
        }
        Some(_) => return Err(()),
    };
    Ok((name, arguments))
}

/// Maximum nesting depth, string-aware.
fn depth(s: &str) -> usize {
    let (mut d, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for b in s.bytes() {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                d += 1;
                max = max.max(d);
            }
            b'}' | b']' => d = d.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn is_json_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let text = format!("<tool_call>{body}</tool_call>");

    let mut whole = ModelResponse::default();
    let mut p = Parser::new(ParserConfig::default());
    p.push(&text, &mut whole);
    p.finish(&mut whole);

    let mut bytewise = ModelResponse::default();
    let mut p = Parser::new(ParserConfig::default());
    for b in text.as_bytes() {
        p.push_bytes(std::slice::from_ref(b), &mut bytewise);
    }
    p.finish(&mut bytewise);
    assert_eq!(whole, bytewise, "bytewise result differs");

    let Ok(entries) = serde_json::from_str::<Entries>(body) else {
        return;
    };
    let leading = body.len() - body.trim_start_matches(is_json_ws).len();
    if leading > 4000 || depth(body) > 100 {
        return;
    }
    let mut keys: Vec<&str> = entries.0.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        return;
    }
    match expected(&entries) {
        Ok((name, arguments)) => {
            assert!(
                whole.errors.is_empty(),
                "unexpected errors: {:?}",
                whole.errors
            );
            assert_eq!(whole.calls.len(), 1, "expected one call");
            assert_eq!(whole.calls[0].name, name);
            assert_eq!(whole.calls[0].arguments, arguments);
            assert_eq!(whole.text, "", "a block that gave a call is not visible");
        }
        Err(()) => {
            assert!(
                whole.calls.is_empty(),
                "unexpected calls: {:?}",
                whole.calls
            );
            assert_eq!(
                whole.errors.len(),
                1,
                "expected one error: {:?}",
                whole.errors
            );
            assert_eq!(whole.errors[0].kind, ErrorKind::Malformed);
            assert_eq!(whole.errors[0].raw, body.trim_matches(is_json_ws));
            assert_eq!(whole.text, text, "a block without a call stays visible");
        }
    }
});
