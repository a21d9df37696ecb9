//! Every dialect through the gateway: a prompt-mode model with `dialect = NAME` in front of a
//! scripted upstream that answers in that family's own call format. The client gets proper
//! `tool_calls`, plain and streamed (in chunks of three bytes, which split every marker); the
//! upstream was taught the dialect (its preamble and stop sequence); and a history with a call and
//! its result reaches the upstream written in the dialect.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{json, Value};
use toolbridge_protocol::parser::Dialect;
use toolbridge_protocol::texts::{CallFormat, ToolResultText};
use toolbridge_protocol::types::{ToolCall, ToolSpec};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

/// What a model of each family writes to call `get_weather` for Paris, and the visible text the
/// client should get with the call.
fn reply(dialect: Dialect) -> (&'static str, &'static str) {
    match dialect {
        Dialect::Hermes => (
            "Checking.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
            "Checking.\n",
        ),
        Dialect::Llama3Json => (
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
            "",
        ),
        Dialect::Pythonic => ("[get_weather(city=\"Paris\")]", ""),
        Dialect::Mistral => (
            "Checking. [TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
            "Checking. ",
        ),
        Dialect::Qwen3Coder => (
            "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
            "Checking.\n",
        ),
        Dialect::DeepseekV3 => (
            "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "Checking.",
        ),
        Dialect::Glm45 => (
            "Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
            "Checking.\n",
        ),
        Dialect::KimiK2 => (
            "Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
            "Checking.",
        ),
        Dialect::GptOss => (
            "<|channel|>analysis<|message|>The user wants the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
            "",
        ),
        Dialect::Granite => (
            "Checking.<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
            "Checking.",
        ),
        Dialect::Phi4Mini => (
            "Checking. functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
            "Checking. ",
        ),
    }
}

fn dialect_model(up: &TestUpstream, dialect: Dialect) -> toolbridge_providers::Model {
    let mut config = arm(up, "prompt");
    config["name"] = json!("m");
    config["dialect"] = json!(dialect.name());
    model(config)
}

fn weather_spec() -> ToolSpec {
    serde_json::from_value(weather_tool()).unwrap()
}

fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// What the upstream must have been sent for the weather tool: the dialect's preamble as the
/// system prompt and its stop sequence (none for the formats that end with the reply).
fn assert_taught(dialect: Dialect, body: &Value) {
    let format = CallFormat::from(dialect);
    assert_eq!(
        body["messages"][0]["content"].as_str(),
        Some(format.preamble(&[weather_spec()]).as_str()),
        "{dialect}"
    );
    assert!(body.get("tools").is_none(), "{dialect}");
    match format.stop_sequence() {
        Some(stop) => assert_eq!(body["stop"], json!([stop]), "{dialect}"),
        None => assert!(body.get("stop").is_none(), "{dialect}: {body}"),
    }
}

#[tokio::test]
async fn every_dialect_comes_back_as_tool_calls_plain_and_streamed() {
    for dialect in Dialect::ALL {
        let (text, visible) = reply(dialect);
        let up = TestUpstream::start().await.unwrap();
        for _ in 0..2 {
            up.push(Behavior::Reply(Reply {
                text: text.into(),
                chunk_size: 3,
                ..Reply::default()
            }));
        }
        let gw = start(server_config(), vec![dialect_model(&up, dialect)]).await;
        let client = http();

        let resp = post(&client, &gw, &tool_request("m", false)).await;
        assert_eq!(resp.status(), 200, "{dialect}");
        let body: Value = resp.json().await.unwrap();
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls", "{dialect}: {body}");
        let calls = choice["message"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{dialect}: {body}");
        assert_eq!(calls[0]["type"], "function");
        assert_eq!(calls[0]["function"]["name"], "get_weather", "{dialect}");
        assert_eq!(
            arguments(calls[0]["function"]["arguments"].as_str().unwrap()),
            json!({"city": "Paris"}),
            "{dialect}"
        );
        let content = choice["message"]["content"].as_str().unwrap_or_default();
        assert_eq!(content, visible, "{dialect}: {body}");

        let resp = post(&client, &gw, &tool_request("m", true)).await;
        assert_eq!(resp.status(), 200, "{dialect}");
        let streamed = assemble(&chunks(&resp.text().await.unwrap()));
        assert_eq!(streamed.finish.as_deref(), Some("tool_calls"), "{dialect}");
        assert_eq!(streamed.text, visible, "{dialect}");
        assert_eq!(streamed.calls.len(), 1, "{dialect}: {streamed:?}");
        assert_eq!(streamed.calls[0].1, "get_weather", "{dialect}");
        assert_eq!(
            arguments(&streamed.calls[0].2),
            json!({"city": "Paris"}),
            "{dialect}"
        );

        let requests = up.requests();
        assert_eq!(requests.len(), 2, "{dialect}");
        for request in &requests {
            assert_taught(dialect, &request.body);
        }
        gw.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_history_reaches_the_upstream_in_the_arms_dialect() {
    let call = ToolCall {
        id: "call_abc".into(),
        name: "get_weather".into(),
        arguments: "{\"city\":\"Paris\"}".into(),
    };
    for dialect in Dialect::ALL {
        let up = TestUpstream::start().await.unwrap();
        up.push(Behavior::Reply(Reply::text("It is sunny in Paris.")));
        let gw = start(server_config(), vec![dialect_model(&up, dialect)]).await;
        let request = json!({
            "model": "m",
            "tools": [weather_tool()],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments}
                }]},
                {"role": "tool", "tool_call_id": "call_abc", "content": "sunny, 24 C"}
            ]
        });
        let resp = post(&http(), &gw, &request).await;
        assert_eq!(resp.status(), 200, "{dialect}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body["choices"][0]["message"]["content"], "It is sunny in Paris.",
            "{dialect}"
        );
        let sent = &up.requests()[0].body;
        assert_taught(dialect, sent);
        let format = CallFormat::from(dialect);
        let messages = sent["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"], "{dialect}");
        assert_eq!(
            messages[2]["content"].as_str(),
            Some(
                format
                    .assistant_text("", std::slice::from_ref(&call))
                    .as_str()
            ),
            "{dialect}"
        );
        assert!(messages[2].get("tool_calls").is_none(), "{dialect}");
        let result = format.results_message(&[ToolResultText {
            name: "get_weather",
            output: "sunny, 24 C",
            is_error: false,
        }]);
        assert_eq!(
            messages[3]["content"].as_str(),
            Some(result.as_str()),
            "{dialect}"
        );
        gw.shutdown().await.unwrap();
    }
}
