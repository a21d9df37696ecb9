//! Chunking invariance: the parser's result must not depend on how the bytes are split.
//!
//! Input layout: byte 0 picks the configuration (declared tools, fences/think switches, a small
//! block limit, the largest piece size), bytes 1..5 seed the split positions, the rest is the text.
//! The text is parsed whole with `push_bytes`, again in pseudo-random byte pieces with
//! `push_bytes`, and (when it is valid UTF-8) whole and in char-boundary pieces with `push`; all
//! results must be equal.

#![no_main]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use toolbridge_protocol::parser::{ModelResponse, Parser, ParserConfig};

/// SplitMix64: split positions are a pure function of the input.
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

fn config(byte: u8) -> ParserConfig {
    let mut config = match byte & 3 {
        0 => ParserConfig::default(),
        1 => ParserConfig::with_tools(["f", "g"]),
        2 => ParserConfig::with_tools(["get_weather", "search"]),
        _ => ParserConfig::with_tools(Vec::<String>::new()),
    };
    config.fences = byte & 4 == 0;
    config.think = byte & 8 == 0;
    if byte & 16 != 0 {
        // Exercise the "block too large" path on small inputs.
        config.max_block_bytes = 48;
    }
    config
}

/// The largest piece, from the top three bits.
fn max_piece(byte: u8) -> usize {
    [1, 2, 3, 5, 8, 16, 64, 1024][(byte >> 5) as usize]
}

/// Pseudo-random piece lengths (0 allowed: an empty push must change nothing).
fn pieces(len: usize, max: usize, rng: &mut Rng) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < len {
        let n = (rng.next() % (max as u64 + 1)) as usize;
        let n = n.min(len - at);
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
    let max = max_piece(data[0]);

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
    assert_eq!(whole, split, "push_bytes: whole and split results differ");

    if let Ok(s) = std::str::from_utf8(text) {
        let mut by_str = ModelResponse::default();
        let mut p = Parser::new(config.clone());
        let mut at = 0;
        for n in pieces(s.len(), max, &mut rng) {
            let mut end = (at + n).min(s.len());
            while !s.is_char_boundary(end) {
                end += 1;
            }
            if end > at {
                p.push(&s[at..end], &mut by_str);
            }
            at = end;
            if at >= s.len() {
                break;
            }
        }
        p.finish(&mut by_str);
        assert_eq!(
            whole, by_str,
            "push(&str) in pieces differs from push_bytes whole"
        );
    }

    // Every accepted call's arguments are a JSON object.
    for call in &whole.calls {
        let ok = call.arguments.starts_with('{')
            && serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_ok();
        assert!(
            ok,
            "call arguments are not a JSON object: {:?}",
            call.arguments
        );
    }
});
