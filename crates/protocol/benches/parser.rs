//! Throughput of the streaming tool-call parser on ~1 MB of realistic model output holding 1,000
//! tool calls, fed whole, in 16-byte chunks and one character / one byte at a time.
//!
//! Run with `cargo bench -p toolbridge-protocol --bench parser`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use toolbridge_protocol::parser::{ModelResponse, ParseError, Parser, ParserConfig, Sink};

/// Size of the generated input, in bytes.
const TARGET_LEN: usize = 1_000_000;
/// Number of `<tool_call>` blocks in it.
const CALLS: usize = 1_000;
const TOOLS: [&str; 6] = [
    "get_weather",
    "web_search",
    "read_file",
    "run_shell",
    "translate",
    "create_event",
];

/// A small deterministic PRNG (SplitMix64), so the input is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "the",
    "model",
    "request",
    "result",
    "weather",
    "file",
    "should",
    "we",
    "check",
    "first",
    "then",
    "answer",
    "because",
    "user",
    "asked",
    "about",
    "data",
    "value",
    "config",
    "server",
    "latency",
    "is",
    "a",
    "an",
    "of",
    "to",
    "and",
    "in",
    "with",
    "for",
    "this",
    "that",
    "it",
    "returns",
    "error",
    "handler",
    "stream",
    "token",
    "café",
    "naïve",
    "Zürich",
    "über",
    "日本語",
    "données",
    "résumé",
    "👍",
    "—",
    "São",
    "Paulo",
];

const CITIES: &[&str] = &[
    "Paris",
    "Berlin",
    "São Paulo",
    "Zürich",
    "東京",
    "Reykjavík",
    "New York",
    "Kraków",
    "Αθήνα",
];

/// One sentence of prose: words, sometimes inline code, a comparison with `<`, HTML-ish tags.
fn sentence(rng: &mut Rng, out: &mut String) {
    let n = 6 + rng.below(14);
    for k in 0..n {
        if k > 0 {
            out.push(' ');
        }
        let word = rng.pick(WORDS);
        if k == 0 {
            let mut chars = word.chars();
            if let Some(c) = chars.next() {
                out.extend(c.to_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            match rng.below(40) {
                0 => {
                    out.push('`');
                    out.push_str(word);
                    out.push_str("()`");
                }
                1 => out.push_str("x < 10"),
                2 => {
                    out.push_str("<b>");
                    out.push_str(word);
                    out.push_str("</b>");
                }
                3 => {
                    out.push_str("**");
                    out.push_str(word);
                    out.push_str("**");
                }
                4 => out.push_str("``a`b``"),
                _ => out.push_str(word),
            }
        }
    }
    out.push_str(rng.pick(&[". ", ". ", ". ", "! ", "? ", ".\n", ":\n"]));
}

/// A paragraph, a list, a heading or a code fence.
fn prose_piece(rng: &mut Rng, out: &mut String) {
    match rng.below(20) {
        0 => {
            out.push_str("## ");
            sentence(rng, out);
            out.push('\n');
        }
        1 => {
            for _ in 0..1 + rng.below(4) {
                out.push_str("- ");
                sentence(rng, out);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        2 => out.push_str(
            "```rust\nfn main() {\n    let v: Vec<u8> = vec![1, 2];\n    println!(\"{:?}\", v);\n}\n```\n",
        ),
        3 => out.push_str(
            "```json\n{\"status\": \"ok\", \"count\": 3, \"items\": [\"a\", \"b\"]}\n```\n",
        ),
        4 => out.push_str("Use `<tool_call>` tags only when needed; `a < b` holds.\n"),
        _ => {
            for _ in 0..1 + rng.below(4) {
                sentence(rng, out);
            }
            out.push('\n');
        }
    }
}

/// Appends a JSON string literal with escapes for `s`.
fn json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            'é' => out.push_str("\\u00e9"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One call's JSON object, ~100-300 bytes.
fn call_json(rng: &mut Rng, out: &mut String) {
    let tool = TOOLS[rng.below(TOOLS.len())];
    out.push_str("{\"name\": ");
    json_str(tool, out);
    out.push_str(", \"arguments\": {");
    match tool {
        "get_weather" => {
            out.push_str("\"city\": ");
            json_str(rng.pick(CITIES), out);
            out.push_str(", \"unit\": ");
            json_str(rng.pick(&["celsius", "fahrenheit"]), out);
            out.push_str(", \"days\": ");
            out.push_str(&(1 + rng.below(7)).to_string());
            out.push_str(", \"include_hourly\": ");
            out.push_str(if rng.below(2) == 0 { "true" } else { "false" });
        }
        "web_search" => {
            out.push_str("\"query\": ");
            let q = rng.pick(&[
                "how to escape \"quotes\" in a shell",
                "what does </tool_call> mean in XML",
                "café near the Eiffel tower, open now",
                "rust borrow checker error E0502 explanation",
                "日本語 のニュース 今日",
            ]);
            json_str(q, out);
            out.push_str(", \"max_results\": ");
            out.push_str(&(3 + rng.below(20)).to_string());
            out.push_str(", \"safe\": true");
        }
        "read_file" => {
            out.push_str("\"path\": ");
            let p = rng.pick(&[
                "C:\\Users\\renée\\Documents\\notes.txt",
                "/home/user/projects/toolbridge/src/main.rs",
                "./docs/résumé (final).md",
            ]);
            json_str(p, out);
            out.push_str(", \"offset\": ");
            out.push_str(&rng.below(10_000).to_string());
            out.push_str(", \"limit\": 200");
        }
        "run_shell" => {
            out.push_str("\"command\": ");
            let c = rng.pick(&[
                "grep -rn \"fn main\" src/ | head -n 20\n",
                "echo 'a\tb' | awk -F'\\t' '{print $2}'",
                "cargo test -- --nocapture 2>&1 | tail",
            ]);
            json_str(c, out);
            out.push_str(", \"timeout_secs\": 30, \"cwd\": \"/tmp\"");
        }
        "translate" => {
            out.push_str("\"text\": ");
            let t = rng.pick(&[
                "Grüße aus München — wie geht's?",
                "Où est la bibliothèque? Je suis désolé.",
                "The quick brown fox 🦊 jumps over the lazy dog",
            ]);
            json_str(t, out);
            out.push_str(", \"source\": \"auto\", \"target\": ");
            json_str(rng.pick(&["ja", "en", "fr", "de"]), out);
        }
        _ => {
            out.push_str("\"title\": ");
            json_str(
                rng.pick(&["Stand-up \"daily\"", "Réunion d'équipe", "1:1 with Zoë"]),
                out,
            );
            out.push_str(", \"start\": \"2024-06-");
            out.push_str(&format!("{:02}", 1 + rng.below(28)));
            out.push_str(
                "T09:30:00Z\", \"attendees\": [\"ana@example.com\", \"bo@example.com\"], ",
            );
            out.push_str(
                "\"reminders\": [{\"minutes\": 10}, {\"minutes\": 60}], \"all_day\": false",
            );
        }
    }
    out.push_str("}}");
}

/// ~1 MB of model text with exactly [`CALLS`] tool-call blocks.
fn generate() -> String {
    let mut rng = Rng(0x7001_b41d_6e00_0001);
    let mut calls = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let mut c = String::new();
        call_json(&mut rng, &mut c);
        calls.push(c);
    }
    let call_bytes: usize = calls
        .iter()
        .map(|c| c.len() + "<tool_call>\n\n</tool_call>\n".len())
        .sum();
    // Leave some slack for the overshoot of each gap; the tail fills the rest exactly.
    let gap = (TARGET_LEN - call_bytes) / (CALLS + 1) - 120;
    let mut out = String::with_capacity(TARGET_LEN + 1024);
    for call in &calls {
        let start = out.len();
        while out.len() - start < gap {
            prose_piece(&mut rng, &mut out);
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("<tool_call>\n");
        out.push_str(call);
        out.push_str("\n</tool_call>\n");
    }
    // Tail: prose, then ASCII filler up to exactly TARGET_LEN bytes.
    while out.len() + 300 < TARGET_LEN {
        prose_piece(&mut rng, &mut out);
    }
    assert!(
        out.len() <= TARGET_LEN,
        "generated text too long: {}",
        out.len()
    );
    let filler = "All done. Let me know if you need anything else. ";
    while out.len() < TARGET_LEN {
        let take = (TARGET_LEN - out.len()).min(filler.len());
        out.push_str(&filler[..take]);
    }
    out
}

/// The zero-copy consumer: counts what it is handed and keeps nothing.
#[derive(Default)]
struct Counter {
    text_bytes: usize,
    reasoning_bytes: usize,
    calls: usize,
    arg_bytes: usize,
    errors: usize,
}

impl Sink for Counter {
    fn text(&mut self, text: &str) {
        self.text_bytes += text.len();
    }
    fn reasoning(&mut self, text: &str) {
        self.reasoning_bytes += text.len();
    }
    fn call_start(&mut self, _index: usize, _id: &str, _name: &str) {
        self.calls += 1;
    }
    fn call_args(&mut self, _index: usize, fragment: &str) {
        self.arg_bytes += fragment.len();
    }
    fn call_end(&mut self, _index: usize) {}
    fn error(&mut self, _error: ParseError) {
        self.errors += 1;
    }
}

fn config() -> ParserConfig {
    ParserConfig::with_tools(TOOLS)
}

fn run_chunks<S: Sink>(chunks: &[&str], sink: &mut S) {
    let mut p = Parser::new(config());
    for c in chunks {
        p.push(c, sink);
    }
    p.finish(sink);
}

/// Splits `text` into pieces of `n` bytes, moved back to char boundaries (never empty).
fn chunks(text: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / n + 1);
    let mut i = 0;
    while i < text.len() {
        let mut j = (i + n).min(text.len());
        while !text.is_char_boundary(j) {
            j -= 1;
        }
        if j == i {
            j = i + text[i..].chars().next().map_or(1, char::len_utf8);
        }
        out.push(&text[i..j]);
        i = j;
    }
    out
}

fn bench(c: &mut Criterion) {
    // `TOOLBRIDGE_BENCH_DUMP=FILE` writes the input out, for profiling with the parse_file example.
    if let Some(path) = std::env::var_os("TOOLBRIDGE_BENCH_DUMP") {
        std::fs::write(path, generate()).unwrap();
    }
    let text = generate();
    assert_eq!(text.len(), TARGET_LEN);

    // Checked once, outside the timing loops.
    let mut out = ModelResponse::default();
    run_chunks(&[&text], &mut out);
    assert_eq!(out.calls.len(), CALLS, "calls found");
    assert!(
        out.errors.is_empty(),
        "errors: {:?}",
        &out.errors[..out.errors.len().min(3)]
    );
    for call in &out.calls {
        let v: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        assert!(v.is_object());
    }
    let whole = vec![text.as_str()];
    let by16 = chunks(&text, 16);
    let by_char: Vec<&str> = text
        .char_indices()
        .map(|(i, ch)| &text[i..i + ch.len_utf8()])
        .collect();
    for pieces in [&by16, &by_char] {
        let mut o = ModelResponse::default();
        run_chunks(pieces, &mut o);
        assert_eq!(o, out, "chunked parse differs");
    }
    let mut counter = Counter::default();
    run_chunks(&whole, &mut counter);
    assert_eq!(
        (counter.calls, counter.errors, counter.reasoning_bytes),
        (CALLS, 0, 0)
    );
    assert_eq!(counter.text_bytes, out.text.len());

    let mut g = c.benchmark_group("parser");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("whole/count", |b| {
        b.iter(|| {
            let mut s = Counter::default();
            run_chunks(black_box(&whole), &mut s);
            black_box(s.calls + s.text_bytes)
        })
    });
    g.bench_function("chunks16/count", |b| {
        b.iter(|| {
            let mut s = Counter::default();
            run_chunks(black_box(&by16), &mut s);
            black_box(s.calls + s.text_bytes)
        })
    });
    g.bench_function("chars1/count", |b| {
        b.iter(|| {
            let mut s = Counter::default();
            run_chunks(black_box(&by_char), &mut s);
            black_box(s.calls + s.text_bytes)
        })
    });
    g.bench_function("bytes1/count", |b| {
        b.iter(|| {
            let mut s = Counter::default();
            let mut p = Parser::new(config());
            for byte in black_box(text.as_bytes()).chunks(1) {
                p.push_bytes(byte, &mut s);
            }
            p.finish(&mut s);
            black_box(s.calls + s.text_bytes)
        })
    });
    g.bench_function("whole/collect", |b| {
        b.iter(|| {
            let mut s = ModelResponse::default();
            run_chunks(black_box(&whole), &mut s);
            black_box(s)
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
