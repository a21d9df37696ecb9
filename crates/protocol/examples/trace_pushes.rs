//! An equivalence oracle for changes to the parser's per-push paths: feeds every dialect the
//! dialect benchmark's texts (`benches/dialects.rs`) and every case of the test corpus
//! (`tests/corpus/*.json`) under many chunkings and block limits, and records every sink call, with
//! a marker after each push. The per-push output must not change when only the speed of a path
//! changes, so the traces of two builds must be identical:
//!
//! ```sh
//! cargo run --release -p toolbridge-protocol --example trace_pushes > before.txt
//! # … change the parser …
//! cargo run --release -p toolbridge-protocol --example trace_pushes > after.txt
//! diff before.txt after.txt
//! cargo run --release -p toolbridge-protocol --example trace_pushes -- --dump 'RUN NAME'
//! ```
//!
//! Each run prints one line: its name, how many sink calls and pushes it made and a hash of the
//! whole trace. `--dump NAME` prints the full trace of the runs whose name contains NAME instead.
//! `--quick` leaves out the benchmark texts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../benches/support/dialect_text.rs"]
mod dialect_text;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use toolbridge_protocol::parser::{Dialect, ParseError, Parser, ParserConfig, Sink};

/// Records sink calls: hashed, and printed too when dumping.
struct Tracer {
    hash: DefaultHasher,
    events: usize,
    pushes: usize,
    dump: bool,
    out: Vec<u8>,
}

impl Tracer {
    fn new(dump: bool) -> Self {
        Tracer {
            hash: DefaultHasher::new(),
            events: 0,
            pushes: 0,
            dump,
            out: Vec::new(),
        }
    }

    fn record(&mut self, kind: &str, content: &str) {
        self.events += 1;
        kind.hash(&mut self.hash);
        content.hash(&mut self.hash);
        if self.dump {
            writeln!(self.out, "{kind} {content:?}").unwrap();
        }
    }

    fn pushed(&mut self) {
        self.pushes += 1;
        0xFFu8.hash(&mut self.hash);
        if self.dump {
            writeln!(self.out, "-- push {}", self.pushes).unwrap();
        }
    }
}

impl Sink for Tracer {
    fn text(&mut self, text: &str) {
        self.record("text", text);
    }
    fn reasoning(&mut self, text: &str) {
        self.record("reasoning", text);
    }
    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.record("call_start", &format!("{index} {id} {name}"));
    }
    fn call_args(&mut self, index: usize, fragment: &str) {
        self.record("call_args", &format!("{index} {fragment}"));
    }
    fn call_end(&mut self, index: usize) {
        self.record("call_end", &index.to_string());
    }
    fn error(&mut self, error: ParseError) {
        self.record("error", &format!("{error:?}"));
    }
}

/// How a text is cut into pushes.
#[derive(Clone, Copy, Debug)]
enum Chunking {
    /// `push` of the whole text.
    Whole,
    /// `push` of pieces of `n` characters.
    Chars(usize),
    /// `push_bytes` of pieces of `n` bytes.
    Bytes(usize),
    /// `push_bytes` of pseudo-random pieces of 1 to 9 bytes.
    Random(u64),
}

const CHUNKINGS: [Chunking; 11] = [
    Chunking::Whole,
    Chunking::Chars(1),
    Chunking::Chars(3),
    Chunking::Bytes(1),
    Chunking::Bytes(2),
    Chunking::Bytes(3),
    Chunking::Bytes(7),
    Chunking::Random(1),
    Chunking::Random(2),
    Chunking::Random(3),
    Chunking::Random(4),
];

fn feed(parser: &mut Parser, text: &str, how: Chunking, t: &mut Tracer) {
    match how {
        Chunking::Whole => {
            parser.push(text, t);
            t.pushed();
        }
        Chunking::Chars(n) => {
            let mut starts: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(n).collect();
            starts.push(text.len());
            for w in starts.windows(2) {
                parser.push(&text[w[0]..w[1]], t);
                t.pushed();
            }
        }
        Chunking::Bytes(n) => {
            for piece in text.as_bytes().chunks(n) {
                parser.push_bytes(piece, t);
                t.pushed();
            }
        }
        Chunking::Random(seed) => {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let bytes = text.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let end = (at + 1 + (x % 9) as usize).min(bytes.len());
                parser.push_bytes(&bytes[at..end], t);
                t.pushed();
                at = end;
            }
        }
    }
    parser.finish(t);
    t.pushed();
}

struct Runner {
    dump: Option<String>,
}

impl Runner {
    fn run(&self, name: &str, config: &ParserConfig, text: &str) {
        for how in CHUNKINGS {
            let name = format!("{name} {how:?}");
            let dump = self.dump.as_deref().is_some_and(|d| name.contains(d));
            if self.dump.is_some() && !dump {
                continue;
            }
            let mut t = Tracer::new(dump);
            let mut parser = Parser::new(config.clone());
            feed(&mut parser, text, how, &mut t);
            let mut stdout = std::io::stdout().lock();
            if dump {
                writeln!(stdout, "== {name}").unwrap();
                stdout.write_all(&t.out).unwrap();
            } else {
                writeln!(
                    stdout,
                    "{name}: {} events, {} pushes, {:016x}",
                    t.events,
                    t.pushes,
                    t.hash.finish()
                )
                .unwrap();
            }
        }
    }
}

/// The fields of a corpus case that set the parser up (see tests/corpus.rs).
#[derive(Deserialize)]
struct Case {
    name: String,
    text: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    dialect: Dialect,
    #[serde(default)]
    reasoning_open: bool,
    #[serde(default)]
    schemas: HashMap<String, serde_json::Value>,
}

fn corpus() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            serde_json::from_str::<Vec<Case>>(&text).unwrap()
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dump = args
        .iter()
        .position(|a| a == "--dump")
        .and_then(|i| args.get(i + 1).cloned());
    let quick = args.iter().any(|a| a == "--quick");
    let runner = Runner { dump };
    for case in corpus() {
        // The case's own dialect and every other one, at the default limit and small ones, with
        // and without `<think>` and fences.
        for dialect in Dialect::ALL {
            for limit in [4 << 20, 8, 32] {
                for (think, fences) in [(true, true), (false, false)] {
                    let config = ParserConfig {
                        tools: case.tools.clone(),
                        dialect,
                        reasoning_open: case.reasoning_open,
                        schemas: case.schemas.clone(),
                        max_block_bytes: limit,
                        think,
                        fences,
                        ..ParserConfig::default()
                    };
                    let name = format!(
                        "corpus {:?} ({}) as {dialect} limit {limit} think {think}",
                        case.name, case.dialect
                    );
                    runner.run(&name, &config, &case.text);
                }
            }
        }
    }
    if quick {
        return;
    }
    let texts: Vec<(Dialect, String)> = Dialect::ALL
        .iter()
        .map(|&d| (d, dialect_text::generate(d)))
        .collect();
    for dialect in Dialect::ALL {
        for (of, text) in &texts {
            for limit in [4 << 20, 100] {
                let mut config = ParserConfig::with_tools(dialect_text::TOOLS);
                config.dialect = dialect;
                config.max_block_bytes = limit;
                runner.run(
                    &format!("bench text of {of} as {dialect} limit {limit}"),
                    &config,
                    text,
                );
            }
        }
    }
}
