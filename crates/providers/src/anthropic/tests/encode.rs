//! Request encoding: what body each conversation becomes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{ToolCall, ToolChoice, ToolSpec};

use super::*;
use crate::anthropic::encode_request;

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Current weather",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

#[test]
fn system_messages_go_to_the_top_level() {
    let req: ChatRequest = serde_json::from_str(
        r#"{"model":"alias","messages":[
            {"role":"system","content":"You are terse."},
            {"role":"developer","content":[{"type":"text","text":"Answer in French."}]},
            {"role":"user","content":"hi"}],
          "stop":["END","  "],"temperature":1.7,"top_p":0.9,"max_tokens":99,"logit_bias":{"1":2}}"#,
    )
    .unwrap();
    let body = encode_request(&req, &config());
    assert_eq!(
        body,
        json!({
            "model": "claude-test",
            "max_tokens": 99,
            "system": "You are terse.\n\nAnswer in French.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "stop_sequences": ["END"],
            "temperature": 1.0,
            "top_p": 0.9,
            "stream": true
        })
    );
    let body = encode_request(&request(vec![Message::user("x")]), &config());
    assert_eq!(body["max_tokens"], 4096);
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
    assert!(body.get("tool_choice").is_none());
}

#[test]
fn tool_calls_and_results_round_trip_into_one_user_turn() {
    let mut req = request(vec![
        Message::user("Weather in Paris and Rome?"),
        Message::assistant_calls(
            Some("Checking both.".into()),
            vec![
                call("toolu_1", "get_weather", r#"{"city":"Paris"}"#),
                call("toolu_2", "get_weather", r#"{"city":"Rome"}"#),
            ],
        ),
        Message::tool_result("toolu_1", "18C sunny", false),
        Message::tool_result("toolu_2", "timeout", true),
        Message::user("Also, which is warmer?"),
    ]);
    req.tools = vec![weather_tool()];
    let body = encode_request(&req, &config());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "timeout", "is_error": true},
                {"type": "text", "text": "Also, which is warmer?"}
            ]}
        ])
    );
}

#[test]
fn missing_tool_results_are_answered_as_failures() {
    let mut req = request(vec![
        Message::user("go"),
        Message::assistant_calls(None, vec![call("a", "f", "{}"), call("b", "f", "not json")]),
        // Results out of order, one missing, a user message in between.
        Message::user("hurry"),
        Message::tool_result("b", "done b", false),
        Message::assistant_calls(None, vec![call("c", "f", "{}")]),
    ]);
    req.tools = vec![ToolSpec::new("f", "", json!({"type": "object"}))];
    let body = encode_request(&req, &config());
    let failed = json!({"type": "tool_result", "tool_use_id": "a", "content": texts::ERROR_FAILED, "is_error": true});
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "b", "name": "f", "input": {}})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            failed,
            {"type": "tool_result", "tool_use_id": "b", "content": "done b"},
            {"type": "text", "text": "hurry"}
        ]})
    );
    // The trailing call gets an answer turn of its own.
    assert_eq!(body["messages"].as_array().unwrap().len(), 5);
    assert_eq!(
        body["messages"][4],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": texts::ERROR_FAILED, "is_error": true}]})
    );
}

#[test]
fn orphan_tool_results_are_dropped_and_roles_merged() {
    let req = request(vec![
        Message::user("one"),
        Message::tool_result("ghost", "boo", false),
        Message::user("two"),
        Message::assistant("A"),
        Message::tool_result("ghost2", "boo", false),
        Message::assistant("B  \n"),
    ]);
    let body = encode_request(&req, &config());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
            // The prefill's trailing whitespace is trimmed.
            {"role": "assistant", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}
        ])
    );
    assert!(body.get("tools").is_none());
}

#[test]
fn history_with_calls_but_no_tools_declares_them() {
    let req = request(vec![
        Message::user("go"),
        Message::assistant_calls(None, vec![call("call:1", "lookup", r#"{"q":1}"#)]),
        Message::tool_result("call:1", "found", false),
    ]);
    let body = encode_request(&req, &config());
    assert_eq!(
        body["tools"],
        json!([{"name": "lookup", "input_schema": {"type": "object", "properties": {}}}])
    );
    assert_eq!(body["tool_choice"], json!({"type": "none"}));
    // Ids are made valid the same way on both sides.
    assert_eq!(body["messages"][1]["content"][0]["id"], "call_1");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call_1");
}

#[test]
fn tool_choice_mapping() {
    let choice = |c: Option<ToolChoice>, parallel: Option<bool>| {
        let mut req = request(vec![Message::user("x")]);
        req.tools = vec![weather_tool()];
        req.tool_choice = c;
        req.parallel_tool_calls = parallel;
        encode_request(&req, &config()).get("tool_choice").cloned()
    };
    assert_eq!(choice(None, None), None);
    assert_eq!(
        choice(Some(ToolChoice::Auto), None),
        Some(json!({"type": "auto"}))
    );
    assert_eq!(
        choice(Some(ToolChoice::Required), Some(true)),
        Some(json!({"type": "any"}))
    );
    assert_eq!(
        choice(Some(ToolChoice::Named("get_weather".into())), None),
        Some(json!({"type": "tool", "name": "get_weather"}))
    );
    assert_eq!(
        choice(Some(ToolChoice::None), Some(false)),
        Some(json!({"type": "none"}))
    );
    assert_eq!(
        choice(None, Some(false)),
        Some(json!({"type": "auto", "disable_parallel_tool_use": true}))
    );
    assert_eq!(
        choice(Some(ToolChoice::Required), Some(false)),
        Some(json!({"type": "any", "disable_parallel_tool_use": true}))
    );
    assert_eq!(
        choice(Some(ToolChoice::Named("get_weather".into())), Some(false)),
        Some(json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}))
    );
    // No tools, no tool_choice.
    let mut req = request(vec![Message::user("x")]);
    req.tool_choice = Some(ToolChoice::Required);
    assert!(encode_request(&req, &config()).get("tool_choice").is_none());
}

#[test]
fn images_become_image_blocks() {
    let req: ChatRequest = serde_json::from_str(
        r#"{"messages":[{"role":"user","content":[
            {"type":"text","text":"What is in these?"},
            {"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
            {"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"high"}},
            {"type":"image_url","image_url":{"url":"ftp://example.com/x.png"}},
            {"type":"image_url","image_url":{"url":"data:image/png,rawbytes"}}]}]}"#,
    )
    .unwrap();
    let body = encode_request(&req, &config());
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "What is in these?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
        ])
    );
}

#[test]
fn tool_schemas_keep_their_key_order() {
    let tools = toolbridge_protocol::types::tools_from_json(
        r#"[{"type":"function","function":{"name":"search","description":"Search the web","parameters":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}},"required":["zeta"]}}},
            {"type":"function","function":{"name":"noargs"}},
            {"type":"function","function":{"name":"untyped","parameters":{"properties":{"b":{},"a":{}}}}}]"#,
    )
    .unwrap();
    let mut req = request(vec![Message::user("x")]);
    req.tools = tools;
    let body = serde_json::to_string(&encode_request(&req, &config())["tools"]).unwrap();
    assert_eq!(
        body,
        r#"[{"name":"search","description":"Search the web","input_schema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}},"required":["zeta"]}},{"name":"noargs","input_schema":{"type":"object","properties":{}}},{"name":"untyped","input_schema":{"type":"object","properties":{"b":{},"a":{}}}}]"#
    );
}

#[test]
fn tool_results_with_images_are_blocks() {
    let mut req: ChatRequest = serde_json::from_str(
        r#"{"messages":[{"role":"user","content":"look"},
           {"role":"assistant","tool_calls":[{"id":"s1","type":"function","function":{"name":"shot","arguments":"{}"}}]},
           {"role":"tool","tool_call_id":"s1","content":[{"type":"text","text":"screen:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]}]}"#,
    )
    .unwrap();
    req.tools = vec![ToolSpec::new("shot", "", json!({"type": "object"}))];
    let body = encode_request(&req, &config());
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        json!([
            {"type": "text", "text": "screen:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
        ])
    );
}

#[test]
fn passthrough_fields_and_max_completion_tokens() {
    let req: ChatRequest = serde_json::from_str(
        r#"{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":123,"top_k":5,
            "thinking":{"type":"enabled","budget_tokens":1024},"user":"u-42","seed":1}"#,
    )
    .unwrap();
    let body = encode_request(&req, &config());
    assert_eq!(body["max_tokens"], 123);
    assert_eq!(body["top_k"], 5);
    assert_eq!(body["thinking"]["budget_tokens"], 1024);
    assert_eq!(body["metadata"], json!({"user_id": "u-42"}));
    assert!(body.get("seed").is_none());
}

#[test]
fn signed_thinking_goes_back_first_in_its_turn() {
    use toolbridge_protocol::types::{Content, ThinkingBlock};
    let req = request(vec![
        Message::user("Weather in Paris?"),
        Message::Assistant {
            content: Some(Content::Text("Checking.".into())),
            tool_calls: vec![call("toolu_1", "get_weather", r#"{"city":"Paris"}"#)],
            thinking_blocks: vec![
                ThinkingBlock::Thinking {
                    thinking: "The user wants weather.".into(),
                    signature: "SIG".into(),
                },
                ThinkingBlock::RedactedThinking {
                    data: "ENCRYPTED".into(),
                },
            ],
        },
        Message::tool_result("toolu_1", "sunny", false),
    ]);
    let body = encode_request(&req, &config());
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants weather.", "signature": "SIG"},
            {"type": "redacted_thinking", "data": "ENCRYPTED"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
        ])
    );
}
