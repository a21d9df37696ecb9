//! The parser corpus: model outputs with their expected result (tests/corpus/*.json, see
//! docs/src/parser.md). Every case runs whole, with its own split (if any), one char at a time, one byte
//! at a time (splitting UTF-8 characters), in short chunks of alternating sizes and with
//! pseudo-random byte splits; all must agree with the expectation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use toolbridge_protocol::parser::{Dialect, ErrorKind, ModelResponse, Parser, ParserConfig};

#[derive(Deserialize)]
struct Case {
    name: String,
    #[allow(dead_code)]
    rule: String,
    text: String,
    #[serde(default)]
    chunks: Option<Vec<String>>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    /// The dialect to parse with (default `hermes`).
    #[serde(default)]
    dialect: Dialect,
    /// The reply starts inside reasoning.
    #[serde(default)]
    reasoning_open: bool,
    /// Parameter schemas of the declared tools (name → JSON Schema).
    #[serde(default)]
    schemas: HashMap<String, serde_json::Value>,
    /// Where a case taken from a peer comes from: repository, path and test name.
    #[serde(default)]
    #[allow(dead_code)]
    source: Option<String>,
    expect: Expect,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Expect {
    calls: Vec<Call>,
    visible: String,
    #[serde(default)]
    reasoning: String,
    #[serde(default)]
    errors: Vec<Error>,
    #[serde(default)]
    truncated: bool,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Call {
    name: String,
    arguments: String,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Error {
    kind: String,
    raw: String,
}

fn actual(out: &ModelResponse) -> Expect {
    Expect {
        calls: out
            .calls
            .iter()
            .map(|c| Call {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect(),
        visible: out.text.clone(),
        reasoning: out.reasoning.clone(),
        errors: out
            .errors
            .iter()
            .map(|e| Error {
                kind: match e.kind {
                    ErrorKind::Malformed => "malformed".into(),
                    ErrorKind::Truncated => "truncated".into(),
                },
                raw: e.raw.clone(),
            })
            .collect(),
        truncated: out.truncated(),
    }
}

fn run_str(cfg: &ParserConfig, chunks: &[&str]) -> ModelResponse {
    let mut out = ModelResponse::default();
    let mut p = Parser::new(cfg.clone());
    for c in chunks {
        p.push(c, &mut out);
    }
    p.finish(&mut out);
    out
}

fn run_bytes(cfg: &ParserConfig, chunks: &[&[u8]]) -> ModelResponse {
    let mut out = ModelResponse::default();
    let mut p = Parser::new(cfg.clone());
    for c in chunks {
        p.push_bytes(c, &mut out);
    }
    p.finish(&mut out);
    out
}

/// A small deterministic generator, so failures reproduce.
fn splits(len: usize, seed: u64) -> Vec<usize> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        at += 1 + (x % 9) as usize;
        cuts.push(at.min(len));
    }
    cuts
}

fn load_cases() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let list: Vec<Case> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        cases.extend(list.into_iter().map(|c| (file.clone(), c)));
    }
    cases
}

#[test]
fn corpus() {
    let cases = load_cases();
    assert!(cases.len() >= 60, "the corpus must hold at least 60 cases");
    let mut failures = Vec::new();
    for (file, case) in &cases {
        let cfg = ParserConfig {
            tools: case.tools.clone(),
            dialect: case.dialect,
            reasoning_open: case.reasoning_open,
            schemas: case.schemas.clone(),
            ..ParserConfig::default()
        };
        let text = case.text.as_str();
        let mut runs: Vec<(String, ModelResponse)> = vec![("whole".into(), run_str(&cfg, &[text]))];
        if let Some(chunks) = &case.chunks {
            assert_eq!(
                chunks.concat(),
                case.text,
                "{}: chunks do not join to text",
                case.name
            );
            let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
            runs.push(("given chunks".into(), run_str(&cfg, &refs)));
        }
        let chars: Vec<&str> = text
            .char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect();
        runs.push(("char at a time".into(), run_str(&cfg, &chars)));
        let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        runs.push(("byte at a time".into(), run_bytes(&cfg, &bytes)));
        // Short chunks of alternating sizes: a marker or a character arriving partly in a
        // chunk of several bytes and partly a byte at a time (the parser's per-push fast paths).
        for pattern in [&[1usize, 2][..], &[2, 1, 1], &[3, 1], &[1, 1, 4]] {
            let mut pieces = Vec::new();
            let mut at = 0;
            for &n in pattern.iter().cycle() {
                if at >= text.len() {
                    break;
                }
                let end = (at + n).min(text.len());
                pieces.push(&text.as_bytes()[at..end]);
                at = end;
            }
            runs.push((format!("chunks of {pattern:?}"), run_bytes(&cfg, &pieces)));
        }
        for seed in 0..8u64 {
            let mut pieces = Vec::new();
            let mut last = 0;
            for cut in splits(text.len(), seed) {
                pieces.push(&text.as_bytes()[last..cut]);
                last = cut;
            }
            runs.push((format!("random split {seed}"), run_bytes(&cfg, &pieces)));
        }
        for (how, out) in &runs {
            let got = actual(out);
            if got != case.expect {
                failures.push(format!(
                    "{file} :: {} ({how})\n  text:     {:?}\n  expected: {:?}\n  got:      {:?}",
                    case.name, case.text, case.expect, got
                ));
                break;
            }
        }
    }
    let mut per_dialect: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (_, case) in &cases {
        let entry = per_dialect.entry(case.dialect.name()).or_default();
        entry.0 += 1;
        entry.1 += usize::from(case.source.is_some());
    }
    // Shown with `--nocapture`: cases per dialect, and how many of them come from peers' tests.
    for (dialect, (n, sourced)) in &per_dialect {
        println!("corpus: {dialect}: {n} cases ({sourced} from peers' tests)");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    for dialect in Dialect::ALL {
        let n = per_dialect.get(dialect.name()).map_or(0, |e| e.0);
        assert!(n >= 10, "the corpus holds only {n} cases for {dialect}");
    }
}
