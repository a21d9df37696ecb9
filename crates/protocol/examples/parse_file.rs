//! Parses a file with the streaming parser, fed in chunks of a given size, and prints what it
//! found. For profiling (`valgrind --tool=callgrind`) and quick checks:
//!
//! ```sh
//! cargo run --release -p toolbridge-protocol --example parse_file -- FILE [CHUNK] [REPEAT]
//! TB_STR=1 cargo run … # feed &str pieces of CHUNK characters instead of CHUNK bytes
//! ```

use std::process::ExitCode;

use toolbridge_protocol::parser::{ParseError, Parser, ParserConfig, Sink};

#[derive(Default)]
struct Count {
    visible: usize,
    calls: usize,
    errors: usize,
}

impl Sink for Count {
    fn text(&mut self, text: &str) {
        self.visible += text.len();
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: parse_file FILE [CHUNK_BYTES] [REPEAT]");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("parse_file: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let chunk: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX)
        .max(1);
    let repeat: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let text = match std::env::var_os("TB_STR") {
        Some(_) => match String::from_utf8(bytes.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("parse_file: {path} is not UTF-8: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let mut count = Count::default();
    for _ in 0..repeat {
        count = Count::default();
        let mut parser = Parser::new(ParserConfig::default());
        match &text {
            // `TB_STR=1`: feed `&str` pieces of CHUNK characters (as providers do).
            Some(text) => {
                let mut start = 0;
                let mut chars = 0;
                for (i, _) in text.char_indices() {
                    if chars == chunk {
                        parser.push(&text[start..i], &mut count);
                        start = i;
                        chars = 0;
                    }
                    chars += 1;
                }
                parser.push(&text[start..], &mut count);
            }
            None => {
                for piece in bytes.chunks(chunk) {
                    parser.push_bytes(piece, &mut count);
                }
            }
        }
        parser.finish(&mut count);
    }
    println!(
        "{} bytes: {} visible, {} calls, {} errors",
        bytes.len(),
        count.visible,
        count.calls,
        count.errors
    );
    ExitCode::SUCCESS
}
