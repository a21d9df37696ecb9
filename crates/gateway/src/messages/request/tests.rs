//! The Messages request decoder's unit tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::config::ServerConfig;

fn limits() -> Limits {
    ServerConfig::default().limits().unwrap()
}

fn err(body: &str) -> ApiError {
    parse(body.as_bytes(), &limits()).err().unwrap()
}

#[test]
fn a_tool_conversation_maps_onto_the_internal_request() {
    let body = br#"{"model":"claude-x","max_tokens":100,"stream":true,
        "system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Really."}],
        "messages":[
          {"role":"user","content":"Weather?"},
          {"role":"system","content":"Context."},
          {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}],"is_error":true},{"type":"text","text":"And?"}]}],
        "tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"}}],
        "tool_choice":{"type":"any","disable_parallel_tool_use":true},
        "stop_sequences":["END"],"top_k":5,"metadata":{"user_id":"u1"},
        "thinking":{"type":"enabled","budget_tokens":2000}}"#;
    let m = parse(body, &limits()).unwrap();
    let r = m.request;
    assert!(m.stream && !r.stream);
    assert_eq!(r.max_tokens, Some(100));
    assert_eq!(
        r.messages[0],
        Message::system("Be brief.\n\nReally.\n\nContext.")
    );
    assert_eq!(r.messages[1], Message::user("Weather?"));
    let Message::Assistant {
        content,
        tool_calls,
        thinking_blocks,
    } = &r.messages[2]
    else {
        panic!()
    };
    assert_eq!(content.as_ref().unwrap().text(), "Checking.");
    // Signed thinking is kept for the upstream that signed it.
    assert_eq!(
        thinking_blocks,
        &[ThinkingBlock::Thinking {
            thinking: "hm".into(),
            signature: "s".into()
        }]
    );
    assert_eq!(tool_calls[0].arguments, r#"{"city":"Paris"}"#);
    assert_eq!(
        r.messages[3],
        Message::tool_result("toolu_1", "sunny", true)
    );
    assert_eq!(r.messages[4], Message::user("And?"));
    assert_eq!(r.tool_choice, Some(ToolChoice::Required));
    assert_eq!(r.parallel_tool_calls, Some(false));
    assert_eq!(r.stop, ["END"]);
    assert_eq!(r.extra["top_k"], 5);
    assert_eq!(r.extra["user"], "u1");
    assert_eq!(r.extra[CLIENT_THINKING_FIELD]["budget_tokens"], 2000);
}

#[test]
fn server_tools_are_listed_apart_and_their_history_blocks_become_calls_and_results() {
    let body = br#"{"model":"m","max_tokens":100,
        "tools":[{"type":"code_execution_20250825","name":"code_execution"},
                 {"name":"get_weather","input_schema":{"type":"object"}}],
        "messages":[
          {"role":"user","content":"Compute, then the weather."},
          {"role":"assistant","content":[
            {"type":"text","text":"Let me run it."},
            {"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{"code":"print(6*7)"}},
            {"type":"code_execution_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"code_execution_result","stdout":"42","stderr":"","return_code":0,"content":[]}},
            {"type":"text","text":"It is 42."},
            {"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Paris"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"sunny"}]}]}"#;
    let m = parse(body, &limits()).unwrap();
    assert_eq!(m.server_tools.len(), 1);
    assert_eq!(m.server_tools[0].index, 0);
    assert_eq!(m.server_tools[0].tool, ServerTool::CodeExecution);
    assert_eq!(m.request.tools.len(), 1);
    assert_eq!(m.request.tools[0].name, "get_weather");
    let r = m.request.messages;
    assert_eq!(r.len(), 5, "{r:?}");
    assert_eq!(
        r[1],
        Message::assistant_calls(
            Some("Let me run it.".into()),
            vec![ToolCall {
                id: "srvtoolu_1".into(),
                name: "python_execute".into(),
                arguments: r#"{"code":"print(6*7)"}"#.into(),
            }]
        )
    );
    assert_eq!(r[2], Message::tool_result("srvtoolu_1", "42", false));
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = &r[3]
    else {
        panic!()
    };
    assert_eq!(content.as_ref().unwrap().text(), "It is 42.");
    assert_eq!(tool_calls[0].id, "toolu_2");
    assert_eq!(r[4], Message::tool_result("toolu_2", "sunny", false));

    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_9","content":[]}]}]}"#,
    );
    assert_eq!(e.param.as_deref(), Some("messages.0.content.0"));
    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"bash_code_execution","input":{}}]}]}"#,
    );
    assert_eq!(e.param.as_deref(), Some("messages.0.content.0"));
}

#[test]
fn base64_images_become_data_urls() {
    let m = parse(
        br#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
            {"type":"text","text":"what?"}]}]}"#,
        &limits(),
    )
    .unwrap();
    let Message::User {
        content: Content::Parts(parts),
        ..
    } = &m.request.messages[0]
    else {
        panic!()
    };
    assert!(
        matches!(&parts[0], ContentPart::ImageUrl { image_url } if image_url.url == "data:image/png;base64,AAAA")
    );
}

#[test]
fn what_the_gateway_cannot_serve_is_refused_by_name() {
    let e = err(r#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#);
    assert_eq!(e.param.as_deref(), Some("max_tokens"));
    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"file:///etc/passwd"}}]}]}"#,
    );
    assert_eq!(e.param.as_deref(), Some("messages.0.content.0"));
    assert!(e.message.contains("http:// or https://"));
    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"bash_20250124","name":"bash"}]}"#,
    );
    assert_eq!(e.param.as_deref(), Some("tools.0.type"));
    assert!(e.message.contains("bash_20250124"));
    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"a b","input_schema":{"type":"object"}}]}"#,
    );
    assert_eq!(e.param.as_deref(), Some("tools[0].name"));
    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool","name":"nope"}}"#,
    );
    assert_eq!(e.param.as_deref(), Some("tool_choice"));
    let e = err(
        r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}]}"#,
    );
    assert!(e.message.contains("text documents"));
    assert_eq!(err("{").status, 400);
}
