use serde_json::json;

use super::*;
use crate::texts;
use crate::types::{Message, ToolCall};

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "a",
            "Tool A.",
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        ),
        ToolSpec::new("b", "Tool B.", json!({"type": "object"})),
    ]
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages,
        tools: tools(),
        ..ChatRequest::default()
    }
}

#[test]
fn native_is_identity() {
    let req = request(vec![Message::user("hi")]);
    assert_eq!(
        encode(&req, ToolMode::Native, &EncodeOptions::default()),
        req
    );
}

#[test]
fn prompt_mode_creates_a_system_message_and_strips_tools() {
    let mut req = request(vec![Message::user("hi")]);
    req.tool_choice = Some(ToolChoice::Auto);
    req.parallel_tool_calls = Some(true);
    req.stop = vec!["X".into(), "</tool_call>".into()];
    let out = encode_prompt(&req, &EncodeOptions::default());
    assert!(out.tools.is_empty() && out.tool_choice.is_none() && out.parallel_tool_calls.is_none());
    assert_eq!(out.stop, vec!["</tool_call>".to_string(), "X".to_string()]);
    let Message::System { content, .. } = &out.messages[0] else {
        panic!("no system message")
    };
    assert_eq!(content.text(), texts::preamble(&tools(), CallTag::ToolCall));
}

#[test]
fn prompt_mode_appends_to_the_existing_system_prompt() {
    let req = request(vec![Message::system("Be brief."), Message::user("hi")]);
    let out = encode_prompt(
        &req,
        &EncodeOptions {
            tag: CallTag::ToolUse,
            ..EncodeOptions::default()
        },
    );
    let Message::System { content, .. } = &out.messages[0] else {
        panic!()
    };
    assert!(content
        .text()
        .starts_with("Be brief.\n\n## Available tools\n"));
    assert!(content
        .text()
        .contains("<tool_use>{\"name\": \"<tool>\", \"arguments\": <args>}</tool_use>"));
    assert_eq!(out.stop, vec!["</tool_use>".to_string()]);
    assert_eq!(out.messages.len(), 2);
}

#[test]
fn tool_choice_none_offers_nothing_in_prompt_mode() {
    let mut req = request(vec![Message::user("hi")]);
    req.tool_choice = Some(ToolChoice::None);
    let out = encode_prompt(&req, &EncodeOptions::default());
    assert_eq!(out.messages, vec![Message::user("hi")]);
    assert!(out.stop.is_empty());
}

#[test]
fn history_is_reencoded_and_consecutive_results_merged() {
    let req = request(vec![
        Message::user("q"),
        Message::assistant_calls(
            None,
            vec![
                ToolCall {
                    id: "1".into(),
                    name: "a".into(),
                    arguments: r#"{"x":"é"}"#.into(),
                },
                ToolCall {
                    id: "2".into(),
                    name: "b".into(),
                    arguments: "not json".into(),
                },
            ],
        ),
        Message::tool_result("1", "r1", false),
        Message::tool_result("2", "boom", true),
        Message::assistant("done"),
    ]);
    let out = reencode_history(&req.messages, CallTag::ToolCall);
    assert_eq!(out.len(), 4);
    assert_eq!(
        out[1],
        Message::assistant(
            "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\":\"é\"}}</tool_call>\n<tool_call>{\"name\": \"b\", \"arguments\": \"not json\"}</tool_call>"
        )
    );
    assert_eq!(
        out[2],
        Message::user(
            "<tool_result name=\"a\">\nr1\n</tool_result>\n<tool_error name=\"b\">\nboom\n</tool_error>\nContinue from here."
        )
    );
    assert_eq!(out[3], Message::assistant("done"));
}

#[test]
fn reencoded_calls_parse_back_to_the_same_calls() {
    let calls = vec![ToolCall {
        id: "1".into(),
        name: "a".into(),
        arguments: r#"{"x": "</tool_call> 日本"}"#.into(),
    }];
    let out = reencode_history(
        &[Message::assistant_calls(Some("Sure.".into()), calls)],
        CallTag::ToolCall,
    );
    let Message::Assistant {
        content: Some(c), ..
    } = &out[0]
    else {
        panic!()
    };
    let parsed = crate::parse(&c.text(), &crate::ParserConfig::with_tools(["a"]));
    assert_eq!(parsed.calls.len(), 1);
    assert_eq!(parsed.calls[0].arguments, r#"{"x": "</tool_call> 日本"}"#);
    assert_eq!(parsed.text, "Sure.\n");
}

#[test]
fn verbatim_keeps_tools_and_adds_block_and_nudge_behind_one_gate() {
    let req = request(vec![Message::system("S"), Message::user("hi")]);
    let out = encode_verbatim(&req, &EncodeOptions::default());
    assert_eq!(out.tools, req.tools);
    assert_eq!(out.messages.len(), 3);
    let Message::User { content, .. } = &out.messages[1] else {
        panic!()
    };
    assert!(content.text().starts_with(texts::VERBATIM_HEADER));
    assert!(content
        .text()
        .contains("```json\n[\n  {\n    \"type\": \"function\""));
    let Message::User { content, .. } = &out.messages[2] else {
        panic!()
    };
    assert_eq!(content.text(), format!("hi\n\n{}", texts::VERBATIM_NUDGE));

    let mut off = req.clone();
    off.tool_choice = Some(ToolChoice::None);
    assert!(!verbatim_gate(&off));
    assert_eq!(encode_verbatim(&off, &EncodeOptions::default()), off);
}

#[test]
fn encoding_is_byte_stable() {
    let req = request(vec![Message::user("hi")]);
    for mode in [ToolMode::Prompt, ToolMode::Verbatim] {
        let a = serde_json::to_string(&encode(&req, mode, &EncodeOptions::default())).unwrap();
        let b =
            serde_json::to_string(&encode(&req.clone(), mode, &EncodeOptions::default())).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn mode_names() {
    assert_eq!("prompt".parse::<ToolMode>().unwrap(), ToolMode::Prompt);
    assert!("xml"
        .parse::<ToolMode>()
        .unwrap_err()
        .to_string()
        .contains("unknown tool mode `xml`"));
    assert_eq!(ToolMode::Auto.resolve(true), ToolMode::Native);
    assert_eq!(ToolMode::Auto.resolve(false), ToolMode::Prompt);
}
