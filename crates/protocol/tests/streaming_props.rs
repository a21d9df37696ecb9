//! Property tests of the parser's streaming guarantees (docs/src/parser.md, "Streaming guarantees"):
//! the result does not depend on the chunking, visible deltas are never retracted, and call events
//! are well formed.

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::value::RawValue;
use toolbridge_protocol::parser::{
    EventLog, ModelEvent, ModelResponse, Parser, ParserConfig, Sink,
};

/// Cases per property; `PROPTEST_CASES` overrides it.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Text biased toward the parser's markers, JSON punctuation and multi-byte characters.
fn fragment() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "<tool_call>",
        "</tool_call>",
        "<tool_use>",
        "</tool_use>",
        "<think>",
        "</think>",
        "<function=f>",
        "</function>",
        "<function=",
        "<",
        "<tool_",
        "```json\n",
        "```\n",
        "{\"name\":\"f\",\"arguments\":{\"a\":\"x\"}}",
        "{\"name\":\"g\",\"parameters\":{}}",
        "{\"name\":\"h\",\"arguments\":{}}",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\\",
        "\\u00e9",
        "\n",
        " ",
        "\t",
        "é",
        "日本",
        "🎉",
    ]);
    prop_oneof![
        6 => fixed.prop_map(str::to_owned),
        1 => (1usize..=4).prop_map(|n| "`".repeat(n)),
        2 => "[a-zA-Z0-9]{1,6}",
    ]
}

/// Something close to a call: an open tag, maybe whitespace, a JSON-ish body, maybe a close tag;
/// or a JSON fence holding such a body; or a reasoning block; or a fence around a tagged call.
fn call_like() -> impl Strategy<Value = String> {
    let open = prop::sample::select(vec!["<tool_call>", "<tool_use>", "<function=g>"]);
    let space = prop::sample::select(vec!["", "", " ", "\n", "\r\n\t"]);
    let piece = prop::sample::select(vec![
        "{\"name\":\"f\",\"arguments\":{\"a\":\"x\"}}",
        "{\"name\": \"g\", \"input\": {\"q\": \"</tool_call> \\u00e9 \\\" 日本\"}}",
        "{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}",
        "{\"name\":\"h\",\"arguments\":{}}",
        "{\"name\":\"f\",\"arguments\":[1]}",
        "{\"name\":",
        "\"f\"",
        ",\"arguments\":",
        "{\"a\":",
        "\"é🎉\"",
        "\"\\u00e9",
        "null",
        "}",
        "]",
        "[",
        ",",
        " ",
        "\n",
        "x",
    ]);
    let body = prop::collection::vec(piece, 1..6).prop_map(|p| p.concat());
    let close = prop::sample::select(vec!["</tool_call>", "</tool_use>", "</function>", "", "\n"]);
    prop_oneof![
        4 => (open, space, body.clone(), close).prop_map(|(o, s, b, c)| format!("{o}{s}{b}{c}")),
        1 => body.clone().prop_map(|b| format!("\n```json\n{b}\n```\n")),
        1 => body.clone().prop_map(|b| format!("<think>{b}</think>")),
        1 => body.prop_map(|b| format!("```\n<tool_call>{b}</tool_call>\n```\n")),
    ]
}

fn text() -> impl Strategy<Value = String> {
    let part = prop_oneof![4 => fragment(), 1 => call_like()];
    prop::collection::vec(part, 0..40).prop_map(|parts| parts.concat())
}

fn tools() -> impl Strategy<Value = Option<Vec<String>>> {
    prop_oneof![Just(None), Just(Some(vec!["f".to_owned(), "g".to_owned()]))]
}

fn config(tools: &Option<Vec<String>>) -> ParserConfig {
    ParserConfig {
        tools: tools.clone(),
        ..ParserConfig::default()
    }
}

/// Split points: sorted, deduplicated byte offsets in `0..=len`.
fn byte_cuts(len: usize, picks: &[Index]) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(len + 1)).collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// Split points moved down to char boundaries.
fn char_cuts(text: &str, picks: &[Index]) -> Vec<usize> {
    let mut cuts = byte_cuts(text.len(), picks);
    for c in &mut cuts {
        while !text.is_char_boundary(*c) {
            *c -= 1;
        }
    }
    cuts.dedup();
    cuts
}

fn whole(text: &str, config: &ParserConfig) -> ModelResponse {
    let mut out = ModelResponse::default();
    let mut p = Parser::new(config.clone());
    p.push(text, &mut out);
    p.finish(&mut out);
    out
}

fn by_bytes<S: Sink>(text: &str, cuts: &[usize], config: &ParserConfig, sink: &mut S) {
    let mut p = Parser::new(config.clone());
    for w in cuts.windows(2) {
        p.push_bytes(&text.as_bytes()[w[0]..w[1]], sink);
    }
    p.finish(sink);
}

fn by_str<S: Sink>(text: &str, cuts: &[usize], config: &ParserConfig, sink: &mut S) {
    let mut p = Parser::new(config.clone());
    for w in cuts.windows(2) {
        p.push(&text[w[0]..w[1]], sink);
    }
    p.finish(sink);
}

fn each_byte(text: &str) -> Vec<usize> {
    (0..=text.len()).collect()
}

fn each_char(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect()
}

fn collect(f: impl FnOnce(&mut ModelResponse)) -> ModelResponse {
    let mut out = ModelResponse::default();
    f(&mut out);
    out
}

/// Checks the call events of one stream; returns the calls' names and arguments.
fn check_calls(events: &[ModelEvent]) -> Result<Vec<(String, String)>, TestCaseError> {
    let mut calls = Vec::new();
    let mut it = events.iter().peekable();
    while let Some(ev) = it.next() {
        match ev {
            ModelEvent::CallStart { index, id, name } => {
                prop_assert_eq!(*index, calls.len(), "call indexes count from 0");
                prop_assert_eq!(id, &format!("call_{index}"));
                let mut args = String::new();
                let mut fragments = 0;
                while let Some(ModelEvent::CallArgs { index: i, fragment }) = it.peek() {
                    prop_assert_eq!(*i, *index, "call_args for another index");
                    args.push_str(fragment);
                    fragments += 1;
                    it.next();
                }
                prop_assert!(fragments > 0, "call {} has no call_args", index);
                match it.next() {
                    Some(ModelEvent::CallEnd { index: i }) => {
                        prop_assert_eq!(*i, *index, "call_end for another index")
                    }
                    other => prop_assert!(false, "call {} not ended: {:?}", index, other),
                }
                let raw = serde_json::from_str::<&RawValue>(&args);
                prop_assert!(
                    matches!(raw, Ok(v) if v.get().starts_with('{')),
                    "arguments are not a JSON object: {:?}",
                    args
                );
                calls.push((name.clone(), args));
            }
            ModelEvent::CallArgs { .. } | ModelEvent::CallEnd { .. } => {
                prop_assert!(false, "call event outside a call: {:?}", ev)
            }
            _ => {}
        }
    }
    Ok(calls)
}

fn names_and_args(out: &ModelResponse) -> Vec<(String, String)> {
    out.calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Every chunking gives exactly the whole-text result.
    #[test]
    fn chunking_does_not_change_the_result(
        text in text(),
        tools in tools(),
        picks in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let config = config(&tools);
        let expected = whole(&text, &config);

        let cuts = byte_cuts(text.len(), &picks);
        let got = collect(|o| by_bytes(&text, &cuts, &config, o));
        prop_assert_eq!(&got, &expected, "push_bytes at {:?}", cuts);

        let cuts = char_cuts(&text, &picks);
        let got = collect(|o| by_str(&text, &cuts, &config, o));
        prop_assert_eq!(&got, &expected, "push at {:?}", cuts);

        let got = collect(|o| by_str(&text, &each_char(&text), &config, o));
        prop_assert_eq!(&got, &expected, "push one char at a time");

        let got = collect(|o| by_bytes(&text, &each_byte(&text), &config, o));
        prop_assert_eq!(&got, &expected, "push_bytes one byte at a time");
    }

    /// Fed one byte at a time, what has been emitted as visible text (and as reasoning) is at every
    /// moment a prefix of the whole-text result, and in the end all of it.
    #[test]
    fn visible_deltas_are_never_retracted(text in text(), tools in tools()) {
        let config = config(&tools);
        let expected = whole(&text, &config);
        let mut p = Parser::new(config);
        let mut rec = EventLog::default();
        let (mut visible, mut reasoning) = (String::new(), String::new());
        let mut seen = 0;
        let mut absorb = |rec: &EventLog, visible: &mut String, reasoning: &mut String| {
            for ev in &rec.0[seen..] {
                match ev {
                    ModelEvent::Text { text } => visible.push_str(text),
                    ModelEvent::Reasoning { text } => reasoning.push_str(text),
                    _ => {}
                }
            }
            seen = rec.0.len();
        };
        for (i, b) in text.bytes().enumerate() {
            p.push_bytes(&[b], &mut rec);
            absorb(&rec, &mut visible, &mut reasoning);
            prop_assert!(
                expected.text.starts_with(&visible),
                "after byte {}: emitted visible {:?} is not a prefix of the final {:?}",
                i, visible, expected.text
            );
            prop_assert!(
                expected.reasoning.starts_with(&reasoning),
                "after byte {}: emitted reasoning {:?} is not a prefix of the final {:?}",
                i, reasoning, expected.reasoning
            );
        }
        p.finish(&mut rec);
        absorb(&rec, &mut visible, &mut reasoning);
        prop_assert_eq!(&visible, &expected.text, "concatenated text deltas");
        prop_assert_eq!(&reasoning, &expected.reasoning, "concatenated reasoning deltas");
    }

    /// Call events come as start, one or more argument fragments, end, with indexes from 0, and the
    /// fragments make a JSON object; whole and byte-at-a-time streams agree.
    #[test]
    fn call_events_are_well_formed(text in text(), tools in tools()) {
        let config = config(&tools);
        let expected = whole(&text, &config);

        let mut rec = EventLog::default();
        let mut p = Parser::new(config.clone());
        p.push(&text, &mut rec);
        p.finish(&mut rec);
        prop_assert_eq!(check_calls(&rec.0)?, names_and_args(&expected));

        let mut rec = EventLog::default();
        by_bytes(&text, &each_byte(&text), &config, &mut rec);
        prop_assert_eq!(check_calls(&rec.0)?, names_and_args(&expected));
    }
}

/// The generator does produce calls, errors, reasoning and text (so the properties are not vacuous).
#[test]
fn generator_covers_the_interesting_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let config = ParserConfig::default();
    let (mut calls, mut errors, mut reasoning, mut visible) = (0, 0, 0, 0);
    for _ in 0..256 {
        let text = text().new_tree(&mut runner).unwrap().current();
        let out = whole(&text, &config);
        calls += usize::from(!out.calls.is_empty());
        errors += usize::from(!out.errors.is_empty());
        reasoning += usize::from(!out.reasoning.is_empty());
        visible += usize::from(!out.text.is_empty());
    }
    eprintln!(
        "cases with calls {calls}, errors {errors}, reasoning {reasoning}, visible {visible}"
    );
    assert!(
        calls > 50 && errors > 50 && reasoning > 20 && visible > 50,
        "cases with calls {calls}, errors {errors}, reasoning {reasoning}, visible {visible}"
    );
}
