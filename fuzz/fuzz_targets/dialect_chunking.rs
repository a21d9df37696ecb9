//! Chunking invariance for every dialect: byte 0 picks the dialect (low nibble, over the ten
//! non-hermes dialects) and switches (declared tools, reasoning-open, a small section limit),
//! bytes 1..5 seed the split positions, the rest is the text. The text is parsed whole with
//! `push_bytes`, again in pseudo-random byte pieces, and (when it is UTF-8) in char-boundary pieces
//! with `push`; the results must be equal and every call's arguments a JSON object.

#![no_main]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use toolbridge_protocol::parser::{Dialect, ModelResponse, Parser, ParserConfig};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `TB_FUZZ_DIALECT=NAME` pins the dialect for a run (byte 0's low nibble then picks nothing), so
/// each dialect can be given its own number of executions.
fn pinned() -> Option<Dialect> {
    static PINNED: std::sync::OnceLock<Option<Dialect>> = std::sync::OnceLock::new();
    *PINNED.get_or_init(|| {
        let name = std::env::var("TB_FUZZ_DIALECT").ok()?;
        Some(name.parse().unwrap_or_else(|e| panic!("TB_FUZZ_DIALECT: {e}")))
    })
}

fn config(byte: u8) -> ParserConfig {
    let dialects = &Dialect::ALL[1..];
    let mut config = if byte & 0x10 != 0 {
        ParserConfig::with_tools(["f", "g"])
    } else {
        ParserConfig::default()
    };
    config.dialect =
        pinned().unwrap_or_else(|| dialects[usize::from(byte & 0x0f) % dialects.len()]);
    config.reasoning_open = byte & 0x20 != 0;
    if byte & 0x40 != 0 {
        config.max_block_bytes = 40;
    }
    config.schemas.insert(
        "g".to_owned(),
        serde_json::json!({"properties": {"n": {"type": "integer"}, "o": {"type": "object"}}}),
    );
    config
}

fn pieces(len: usize, max: usize, rng: &mut Rng) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < len {
        let n = ((rng.next() % (max as u64 + 1)) as usize).min(len - at);
        out.push(n);
        at += n;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let config = config(data[0]);
    let seed = u32::from_le_bytes([data[1], data[2], data[3], data[4]]);
    let text = &data[5..];
    let mut rng = Rng(u64::from(seed) | (u64::from(data[0]) << 32));
    let max = [1, 2, 3, 7, 16, 64][(seed % 6) as usize];

    let mut whole = ModelResponse::default();
    let mut p = Parser::new(config.clone());
    p.push_bytes(text, &mut whole);
    p.finish(&mut whole);

    let mut split = ModelResponse::default();
    let mut p = Parser::new(config.clone());
    let mut at = 0;
    for n in pieces(text.len(), max, &mut rng) {
        p.push_bytes(&text[at..at + n], &mut split);
        at += n;
    }
    p.finish(&mut split);
    assert_eq!(whole, split, "{}: whole and split results differ", config.dialect);

    if let Ok(s) = std::str::from_utf8(text) {
        let mut by_str = ModelResponse::default();
        let mut p = Parser::new(config.clone());
        let mut at = 0;
        for n in pieces(s.len(), max, &mut rng) {
            let mut end = (at + n).min(s.len());
            while !s.is_char_boundary(end) {
                end += 1;
            }
            p.push(&s[at..end], &mut by_str);
            at = end;
            if at >= s.len() {
                break;
            }
        }
        p.finish(&mut by_str);
        assert_eq!(whole, by_str, "{}: push(&str) in pieces differs", config.dialect);
    }
    for call in &whole.calls {
        let ok = call.arguments.starts_with('{')
            && serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_ok();
        assert!(ok, "{}: arguments are not a JSON object: {:?}", config.dialect, call.arguments);
    }
});
