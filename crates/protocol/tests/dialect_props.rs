//! Property tests of the dialects' streaming guarantees (docs/src/parser.md, "Dialects"): for every
//! dialect the result does not depend on the chunking, visible text and reasoning are never
//! retracted, and calls carry a JSON object. Text is built from each dialect's own markers and
//! call pieces, so calls, errors and near-misses all occur (checked by the last test).

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::value::RawValue;
use toolbridge_protocol::parser::{
    Dialect, EventLog, ModelEvent, ModelResponse, Parser, ParserConfig,
};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Every dialect but hermes (streaming_props.rs covers hermes).
const DIALECTS: [Dialect; 10] = [
    Dialect::Llama3Json,
    Dialect::Pythonic,
    Dialect::Mistral,
    Dialect::Qwen3Coder,
    Dialect::DeepseekV3,
    Dialect::Glm45,
    Dialect::KimiK2,
    Dialect::GptOss,
    Dialect::Granite,
    Dialect::Phi4Mini,
];

/// Pieces a reply in `dialect` is made of: its markers, whole calls, and parts of calls.
fn pieces(dialect: Dialect) -> Vec<&'static str> {
    let own: &[&str] = match dialect {
        Dialect::Hermes => &[],
        Dialect::Llama3Json => &[
            "<|python_tag|>",
            "<|eom_id|>",
            "<|eot_id|>",
            "{\"name\": \"f\", \"parameters\": {\"a\": 1}}",
            "{\"name\": \"g\", \"arguments\": {}}",
            ";",
            "{\"name\": \"f\"",
        ],
        Dialect::Pythonic => &[
            "<|python_start|>",
            "<|python_end|>",
            "[f(a=1, b='x')]",
            "[g()]",
            "f(a=None)",
            "(",
            ")",
            "'",
            "=",
            "True",
        ],
        Dialect::Mistral => &[
            "[TOOL_CALLS]",
            "[ARGS]",
            "[CALL_ID]",
            "f{\"a\": 1}",
            "g[ARGS]{}",
            "[{\"name\": \"f\", \"arguments\": {\"x\": \"y\"}}]",
            "[TOOL",
            // What the section's end is found by (strings, escapes, brackets, separators).
            "{\"s\": \"}]\\\"[\"}",
            "\"",
            "\\",
            "}",
            "]",
            ", ",
        ],
        Dialect::Qwen3Coder => &[
            "<tool_call>",
            "</tool_call>",
            "<function=f>",
            "</function>",
            "<parameter=a>",
            "</parameter>",
            "<tool_call>\n<function=g>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>",
            "<function=",
        ],
        Dialect::DeepseekV3 => &[
            "<｜tool▁calls▁begin｜>",
            "<｜tool▁calls▁end｜>",
            "<｜tool▁call▁begin｜>",
            "<｜tool▁call▁end｜>",
            "<｜tool▁sep｜>",
            "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": 1}<｜tool▁call▁end｜>",
            "function<｜tool▁sep｜>g\n```json\n{}\n```",
            "<｜end▁of▁sentence｜>",
            "<｜tool",
        ],
        Dialect::Glm45 => &[
            "<tool_call>",
            "</tool_call>",
            "<arg_key>",
            "</arg_key>",
            "<arg_value>",
            "</arg_value>",
            "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
            "g\n",
        ],
        Dialect::KimiK2 => &[
            "<|tool_calls_section_begin|>",
            "<|tool_calls_section_end|>",
            "<|tool_call_begin|>",
            "<|tool_call_end|>",
            "<|tool_call_argument_begin|>",
            "functions.f:0",
            "<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{}<|tool_call_end|>",
            "<|tool_",
        ],
        Dialect::GptOss => &[
            "<|channel|>",
            "<|start|>",
            "<|message|>",
            "<|end|>",
            "<|call|>",
            "<|return|>",
            "analysis",
            "final",
            "assistant",
            "commentary to=functions.f <|constrain|>json",
            "<|channel|>commentary to=functions.g<|message|>{\"a\": 1}<|call|>",
            "<|",
        ],
        Dialect::Granite => &[
            "<|tool_call|>",
            "<tool_call>",
            "</tool_call>",
            "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]",
            "<|tool_call|>[{\"name\": \"g\", \"arguments\": {}}]",
            "<tool_call>[{\"name\": \"f\", \"arguments\": {}}]</tool_call>",
            "<|tool_",
        ],
        Dialect::Phi4Mini => &[
            "functools[",
            "functools[{\"name\": \"g\", \"arguments\": {}}]",
            "functools[{\"name\": \"f\", \"arguments\": {\"a\": [1]}}, {\"name\": \"g\"}]",
            "functools",
            "{\"name\": \"f\", \"arguments\": {\"a\": 1}}]",
            "func",
        ],
    };
    let mut all = vec![
        "<think>", "</think>", "{", "}", "[", "]", "\"", ",", ":", "\\", " ", "\n", "é", "日本",
        "🎉", "x", "f", "g", "<", "|",
    ];
    all.extend_from_slice(own);
    all
}

fn text_for(dialect: Dialect) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces(dialect)), 0..30)
        .prop_map(|parts| parts.concat())
}

fn dialect_and_text() -> impl Strategy<Value = (Dialect, String)> {
    prop::sample::select(DIALECTS.to_vec()).prop_flat_map(|d| (Just(d), text_for(d)))
}

fn config(dialect: Dialect, declared: bool, reasoning_open: bool) -> ParserConfig {
    let mut config = if declared {
        ParserConfig::with_tools(["f", "g"])
    } else {
        ParserConfig::default()
    };
    config.dialect = dialect;
    config.reasoning_open = reasoning_open;
    config.schemas.insert(
        "g".to_owned(),
        serde_json::json!({"properties": {"n": {"type": "integer"}, "a": {"type": "number"}}}),
    );
    config
}

fn run(text: &str, cuts: &[usize], config: &ParserConfig, bytes: bool) -> ModelResponse {
    let mut out = ModelResponse::default();
    let mut p = Parser::new(config.clone());
    for w in cuts.windows(2) {
        if bytes {
            p.push_bytes(&text.as_bytes()[w[0]..w[1]], &mut out);
        } else {
            p.push(&text[w[0]..w[1]], &mut out);
        }
    }
    p.finish(&mut out);
    out
}

fn cuts(text: &str, picks: &[Index], on_chars: bool) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(text.len() + 1)).collect();
    cuts.extend([0, text.len()]);
    if on_chars {
        for c in &mut cuts {
            while !text.is_char_boundary(*c) {
                *c -= 1;
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Every chunking gives exactly the whole-text result, in every dialect.
    #[test]
    fn chunking_does_not_change_the_result(
        (dialect, text) in dialect_and_text(),
        declared in any::<bool>(),
        reasoning_open in prop::bool::weighted(0.2),
        picks in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let config = config(dialect, declared, reasoning_open);
        let expected = run(&text, &[0, text.len()], &config, false);
        let got = run(&text, &cuts(&text, &picks, false), &config, true);
        prop_assert_eq!(&got, &expected, "{} push_bytes in pieces", dialect);
        let got = run(&text, &cuts(&text, &picks, true), &config, false);
        prop_assert_eq!(&got, &expected, "{} push in pieces", dialect);
        let every: Vec<usize> = (0..=text.len()).collect();
        let got = run(&text, &every, &config, true);
        prop_assert_eq!(&got, &expected, "{} one byte at a time", dialect);
        for call in &expected.calls {
            let raw = serde_json::from_str::<&RawValue>(&call.arguments);
            prop_assert!(
                matches!(raw, Ok(v) if v.get().starts_with('{')),
                "{}: arguments are not a JSON object: {:?}", dialect, call.arguments
            );
        }
    }

    /// Fed one byte at a time, the visible text and reasoning emitted so far are always a prefix
    /// of the whole-text result, and call events are start, arguments, end.
    #[test]
    fn deltas_are_never_retracted((dialect, text) in dialect_and_text(), declared in any::<bool>()) {
        let config = config(dialect, declared, false);
        let expected = run(&text, &[0, text.len()], &config, false);
        let mut p = Parser::new(config);
        let mut rec = EventLog::default();
        let (mut visible, mut reasoning) = (String::new(), String::new());
        let mut seen = 0;
        for b in text.bytes() {
            p.push_bytes(&[b], &mut rec);
            for ev in &rec.0[seen..] {
                match ev {
                    ModelEvent::Text { text } => visible.push_str(text),
                    ModelEvent::Reasoning { text } => reasoning.push_str(text),
                    _ => {}
                }
            }
            seen = rec.0.len();
            prop_assert!(expected.text.starts_with(&visible), "{}: visible {:?} retracted from {:?}", dialect, visible, expected.text);
            prop_assert!(expected.reasoning.starts_with(&reasoning), "{}: reasoning retracted", dialect);
        }
        p.finish(&mut rec);
        let mut open = None;
        for ev in &rec.0 {
            match ev {
                ModelEvent::CallStart { index, .. } => {
                    prop_assert!(open.is_none());
                    open = Some(*index);
                }
                ModelEvent::CallArgs { index, .. } => prop_assert_eq!(open, Some(*index)),
                ModelEvent::CallEnd { index } => {
                    prop_assert_eq!(open, Some(*index));
                    open = None;
                }
                _ => prop_assert!(open.is_none(), "an event inside a call"),
            }
        }
    }
}

/// For every dialect the generator produces calls, errors and visible text, so the properties
/// above are not vacuous.
#[test]
fn generator_covers_each_dialect() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let mut thin = Vec::new();
    for dialect in DIALECTS {
        let config = config(dialect, false, false);
        let (mut calls, mut errors, mut visible) = (0, 0, 0);
        for _ in 0..300 {
            let text = text_for(dialect)
                .new_tree(&mut runner)
                .unwrap_or_else(|e| panic!("{e}"))
                .current();
            let out = run(&text, &[0, text.len()], &config, false);
            calls += usize::from(!out.calls.is_empty());
            errors += usize::from(!out.errors.is_empty());
            visible += usize::from(!out.text.is_empty());
        }
        eprintln!("{dialect}: cases with calls {calls}, errors {errors}, visible {visible}");
        if calls < 15 || errors < 5 || visible < 100 {
            thin.push(format!(
                "{dialect}: calls {calls}, errors {errors}, visible {visible}"
            ));
        }
    }
    assert!(thin.is_empty(), "too few interesting cases: {thin:?}");
}
