//! Feeds the dialect benchmark's text (`benches/dialects.rs`) to the parser whole or in pieces of
//! a few bytes, for profiling the per-push cost without criterion (`perf record`, or
//! `valgrind --tool=callgrind`, whose instruction counts are deterministic: good for A/B on a noisy
//! machine):
//!
//! ```sh
//! cargo build --release -p toolbridge-protocol --example bytewise
//! valgrind --tool=callgrind --toggle-collect='bytewise::parse*' target/release/examples/bytewise hermes 1
//! target/release/examples/bytewise phi4-mini whole 20   # DIALECT CHUNK|whole [REPEAT]
//! ```
//!
//! `--toggle-collect` counts the parser alone, not the making of the text. `BYTEWISE_FILE=PATH`
//! feeds that file's text instead (to see what one kind of byte costs, say, with it replaced).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../benches/support/dialect_text.rs"]
mod dialect_text;

use std::hint::black_box;
use std::process::ExitCode;

use toolbridge_protocol::parser::{Dialect, ParseError, Parser, ParserConfig, Sink};

#[derive(Default)]
struct Count {
    text_bytes: usize,
    calls: usize,
    errors: usize,
}

impl Sink for Count {
    fn text(&mut self, text: &str) {
        self.text_bytes += text.len();
    }
    fn reasoning(&mut self, _: &str) {}
    fn call_start(&mut self, _: usize, _: &str, _: &str) {
        self.calls += 1;
    }
    fn call_args(&mut self, _: usize, _: &str) {}
    fn call_end(&mut self, _: usize) {}
    fn error(&mut self, _: ParseError) {
        self.errors += 1;
    }
}

/// One run, out of line so that a profiler can count it alone
/// (`valgrind --tool=callgrind --toggle-collect='bytewise::parse*'`).
#[inline(never)]
fn parse(config: &ParserConfig, text: &str, chunk: Option<usize>) -> Count {
    let mut count = Count::default();
    let mut parser = Parser::new(config.clone());
    match chunk {
        None => parser.push(black_box(text), &mut count),
        // A constant chunk size, as the benchmark's byte-at-a-time loop has.
        Some(1) => {
            for piece in black_box(text.as_bytes()).chunks(1) {
                parser.push_bytes(piece, &mut count);
            }
        }
        Some(n) => {
            for piece in black_box(text.as_bytes()).chunks(n) {
                parser.push_bytes(piece, &mut count);
            }
        }
    }
    parser.finish(&mut count);
    count
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(dialect) = args.get(1).and_then(|d| d.parse::<Dialect>().ok()) else {
        eprintln!("usage: bytewise DIALECT [CHUNK_BYTES|whole] [REPEAT]");
        return ExitCode::from(2);
    };
    let text = match std::env::var("BYTEWISE_FILE") {
        Ok(path) => std::fs::read_to_string(path).expect("BYTEWISE_FILE"),
        Err(_) => dialect_text::generate(dialect),
    };
    let chunk = match args.get(2).map(String::as_str) {
        None | Some("whole") => None,
        Some(n) => n.parse::<usize>().ok().map(|n| n.max(1)),
    };
    let repeat: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut config = ParserConfig::with_tools(dialect_text::TOOLS);
    config.dialect = dialect;
    let start = std::time::Instant::now();
    let mut count = parse(&config, &text, chunk);
    for _ in 1..repeat {
        count = parse(&config, &text, chunk);
    }
    let per = start.elapsed() / u32::try_from(repeat.max(1)).unwrap_or(u32::MAX);
    println!(
        "{dialect}: {} bytes, {} visible, {} calls, {} errors; {per:?} per run",
        text.len(),
        count.text_bytes,
        count.calls,
        count.errors
    );
    assert_eq!((count.calls, count.errors), (dialect_text::CALLS, 0));
    ExitCode::SUCCESS
}
