//! Unit tests of the parser's rules; the corpus (tests/corpus) holds many more cases.

use super::*;

fn run(text: &str) -> ModelResponse {
    parse(text, &ParserConfig::with_tools(["get_weather", "search"]))
}

fn bytewise(text: &str) -> ModelResponse {
    let mut out = ModelResponse::default();
    let mut p = Parser::new(ParserConfig::with_tools(["get_weather", "search"]));
    for b in text.as_bytes() {
        p.push_bytes(std::slice::from_ref(b), &mut out);
    }
    p.finish(&mut out);
    out
}

fn check(text: &str) -> ModelResponse {
    let whole = run(text);
    assert_eq!(bytewise(text), whole, "bytewise differs for {text:?}");
    whole
}

#[test]
fn plain_text_passes_through() {
    let out = check("Hello <b>world</b> a < b `code` done");
    assert_eq!(out.text, "Hello <b>world</b> a < b `code` done");
    assert!(out.calls.is_empty() && out.errors.is_empty());
}

#[test]
fn a_tagged_call_is_extracted_and_whitespace_kept() {
    let out = check("Let me check.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\nDone");
    assert_eq!(out.text, "Let me check.\n\nDone");
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].name, "get_weather");
    assert_eq!(out.calls[0].arguments, "{\"city\": \"Paris\"}");
    assert_eq!(out.calls[0].id, "call_0");
}

#[test]
fn close_tag_inside_a_string_is_data() {
    let out = check(r#"<tool_use>{"name":"search","arguments":{"q":"</tool_call>"}}</tool_use>"#);
    assert_eq!(out.calls[0].arguments, r#"{"q":"</tool_call>"}"#);
    assert_eq!(out.text, "");
}

#[test]
fn missing_close_tag_at_end_and_between_calls() {
    let out = check(
        r#"<tool_call>{"name":"search","arguments":{"q":"a"}}<tool_call>{"name":"search","arguments":{"q":"b"}}"#,
    );
    assert_eq!(out.calls.len(), 2);
    assert_eq!(out.text, "");
}

#[test]
fn malformed_block_stays_visible_and_later_calls_parse() {
    let text = r#"A <tool_call>{"name":"search","arguments":{"q":1}</tool_call> B <tool_call>{"name":"search"}</tool_call>"#;
    let out = check(text);
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].raw, r#"{"name":"search","arguments":{"q":1}"#);
    assert_eq!(
        out.text,
        r#"A <tool_call>{"name":"search","arguments":{"q":1}</tool_call> B "#
    );
}

#[test]
fn unknown_tool_is_malformed() {
    let out = check(r#"<tool_call>{"name":"rm","arguments":{}}</tool_call>"#);
    assert!(out.calls.is_empty());
    assert_eq!(out.errors[0].kind, ErrorKind::Malformed);
    assert!(out.errors[0]
        .reason
        .to_string()
        .contains("unknown tool \"rm\""));
    assert_eq!(
        out.text,
        r#"<tool_call>{"name":"rm","arguments":{}}</tool_call>"#
    );
}

#[test]
fn truncated_call() {
    let out = check(r#"ok <tool_call>{"name":"search","arguments":{"q":"abc"#);
    assert!(out.truncated());
    assert_eq!(
        out.text,
        r#"ok <tool_call>{"name":"search","arguments":{"q":"abc"#
    );
}

#[test]
fn think_is_reasoning_and_calls_inside_do_not_count() {
    let out = check("<think>maybe <tool_call>{\"name\":\"search\"}</tool_call></think>Answer");
    assert_eq!(
        out.reasoning,
        "maybe <tool_call>{\"name\":\"search\"}</tool_call>"
    );
    assert_eq!(out.text, "Answer");
    assert!(out.calls.is_empty());
}

#[test]
fn open_tag_followed_by_prose_is_text() {
    let out = check("I will use <tool_call> now. </tool_call>");
    assert_eq!(out.text, "I will use <tool_call> now. </tool_call>");
    assert!(out.calls.is_empty());
}

#[test]
fn code_spans_hide_markers() {
    let out = check("Write `<tool_call>{\"name\":\"search\"}</tool_call>` like that");
    assert!(out.calls.is_empty());
    assert_eq!(
        out.text,
        "Write `<tool_call>{\"name\":\"search\"}</tool_call>` like that"
    );
}

#[test]
fn json_fence_call() {
    let text = "Sure.\n```json\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n```\nBye";
    let out = check(text);
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.text, "Sure.\n\nBye");
}

#[test]
fn json_fence_with_data_is_text() {
    let text = "```json\n{\"name\": \"Alice\", \"age\": 3}\n```\n";
    let out = check(text);
    assert!(out.calls.is_empty() && out.errors.is_empty());
    assert_eq!(out.text, text);
}

#[test]
fn text_fence_hides_markers() {
    let text = "Example:\n```\n<tool_call>{\"name\":\"search\"}</tool_call>\n```\nend";
    let out = check(text);
    assert!(out.calls.is_empty());
    assert_eq!(out.text, text);
}

#[test]
fn tagged_fence_that_is_the_whole_message() {
    let text =
        "```xml\n<tool_call>{\"name\":\"search\",\"arguments\":{\"q\":\"1\"}}</tool_call>\n```\n";
    let out = check(text);
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.text, "\n\n");
    let text2 = format!("{text}and more");
    let out2 = check(&text2);
    assert!(out2.calls.is_empty());
    assert_eq!(out2.text, text2);
}

#[test]
fn arrays_and_several_values() {
    let out = check(
        r#"<tool_call>[{"name":"search","arguments":{"q":"a"}},{"name":"get_weather","parameters":{"city":"b"}}] {"name":"search"}</tool_call>"#,
    );
    assert_eq!(out.calls.len(), 3);
    assert_eq!(out.calls[1].arguments, r#"{"city":"b"}"#);
    assert_eq!(out.calls[2].arguments, "{}");
}

#[test]
fn unicode_is_kept_as_written() {
    let out = check("日本 <tool_call>{\"name\":\"search\",\"arguments\":{\"q\":\"café 🎉 \\u00e9\"}}</tool_call> ✓");
    assert_eq!(out.calls[0].arguments, "{\"q\":\"café 🎉 \\u00e9\"}");
    assert_eq!(out.text, "日本  ✓");
}

/// A one-byte `push` while `push_bytes` holds part of a character: the text is read at once, and
/// the character turns out invalid (one U+FFFD) with the next byte, in every state a one-byte
/// step takes (text, a backtick run, a code span, a block after its value, a closing tag).
#[test]
fn a_byte_pushed_as_text_after_a_split_character() {
    let text = "a `b` <tool_call>{\"name\":\"search\",\"arguments\":{}} </tool_call>\n `x ``y";
    for at in 0..=text.len() {
        for b in [b' ', b'<', b'`', b'\n', b'x'] {
            let whole = run(&format!(
                "{}{}\u{FFFD}{}",
                &text[..at],
                ascii(b),
                &text[at..]
            ));
            let mut out = ModelResponse::default();
            let mut p = Parser::new(ParserConfig::with_tools(["get_weather", "search"]));
            for &c in &text.as_bytes()[..at] {
                p.push_bytes(&[c], &mut out);
            }
            p.push_bytes(&[0xC3], &mut out);
            p.push(ascii(b), &mut out);
            for &c in &text.as_bytes()[at..] {
                p.push_bytes(&[c], &mut out);
            }
            p.finish(&mut out);
            assert_eq!(out, whole, "at {at}, byte {b}");
        }
    }
}

fn ascii(b: u8) -> &'static str {
    match b {
        b' ' => " ",
        b'<' => "<",
        b'`' => "`",
        b'\n' => "\n",
        _ => "x",
    }
}

/// Code spans a byte at a time (the lane opens and closes them): runs of several backticks, a
/// shorter or longer run inside, a span ended by a newline, a marker right after a span, and a
/// character right after a run.
#[test]
fn code_spans_byte_by_byte() {
    for text in [
        "a ``b`c`` d `e`f ```g``` h",
        "x `a\nb` `c``d` e``",
        "x `<tool_call>{\"name\":\"search\"}</tool_call>`<tool_call>{\"name\":\"search\",\"arguments\":{}}</tool_call>",
        "x `é` ``日`` `a`é`b`<b> y",
    ] {
        check(text);
    }
}
