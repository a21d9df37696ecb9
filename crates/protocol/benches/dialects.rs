//! Throughput of every dialect on ~1 MB of prose holding 1,000 calls written in that dialect's
//! format (the same prose for all), fed whole and one byte at a time.
//!
//! Run with `cargo bench -p toolbridge-protocol --bench dialects`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use toolbridge_protocol::parser::{Dialect, ModelResponse, ParseError, Parser, ParserConfig, Sink};

#[path = "support/dialect_text.rs"]
mod dialect_text;

use dialect_text::{generate, CALLS, TOOLS};

#[derive(Default)]
struct Counter {
    text_bytes: usize,
    calls: usize,
    errors: usize,
}

impl Sink for Counter {
    fn text(&mut self, text: &str) {
        self.text_bytes += text.len();
    }
    fn reasoning(&mut self, _text: &str) {}
    fn call_start(&mut self, _index: usize, _id: &str, _name: &str) {
        self.calls += 1;
    }
    fn call_args(&mut self, _index: usize, _fragment: &str) {}
    fn call_end(&mut self, _index: usize) {}
    fn error(&mut self, _error: ParseError) {
        self.errors += 1;
    }
}

fn config(dialect: Dialect) -> ParserConfig {
    let mut config = ParserConfig::with_tools(TOOLS);
    config.dialect = dialect;
    config
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("dialects");
    for dialect in Dialect::ALL {
        let text = generate(dialect);
        let mut out = ModelResponse::default();
        let mut p = Parser::new(config(dialect));
        p.push(&text, &mut out);
        p.finish(&mut out);
        assert_eq!(
            (out.calls.len(), out.errors.len()),
            (CALLS, 0),
            "{dialect}: calls, errors"
        );
        let mut by_byte = ModelResponse::default();
        let mut p = Parser::new(config(dialect));
        for b in text.as_bytes().chunks(1) {
            p.push_bytes(b, &mut by_byte);
        }
        p.finish(&mut by_byte);
        assert_eq!(by_byte, out, "{dialect}: byte-at-a-time differs");

        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("{dialect}/whole"), |b| {
            b.iter(|| {
                let mut s = Counter::default();
                let mut p = Parser::new(config(dialect));
                p.push(black_box(&text), &mut s);
                p.finish(&mut s);
                black_box(s.calls + s.text_bytes + s.errors)
            })
        });
        g.bench_function(format!("{dialect}/bytes1"), |b| {
            b.iter(|| {
                let mut s = Counter::default();
                let mut p = Parser::new(config(dialect));
                for byte in black_box(text.as_bytes()).chunks(1) {
                    p.push_bytes(byte, &mut s);
                }
                p.finish(&mut s);
                black_box(s.calls + s.text_bytes + s.errors)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
