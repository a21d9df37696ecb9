//! The Responses API over a gateway of models only (no configured tools): plain and streamed
//! answers, a client function round trip that pauses and resumes the run, continuation with
//! `previous_response_id`, the stored objects (retrieve, input items, delete), tenancy between
//! keys, and the failure of an upstream mid-run — state in SQLite in a temporary folder.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toolbridge_gateway::{Gateway, RunningGateway, ServerConfig};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::{http, server_config, single, KEYS_VAR};

async fn gateway(
    up: &TestUpstream,
    mode: &str,
    keys: Option<&str>,
) -> (RunningGateway, tempfile_dir::Dir) {
    gateway_with(up, mode, keys, server_config()).await
}

async fn gateway_with(
    up: &TestUpstream,
    mode: &str,
    keys: Option<&str>,
    mut config: ServerConfig,
) -> (RunningGateway, tempfile_dir::Dir) {
    let dir = tempfile_dir::Dir::new();
    config.state.path = Some(dir.path().join("state.sqlite3"));
    let mut env = BTreeMap::new();
    if let Some(k) = keys {
        env.insert(KEYS_VAR.to_owned(), k.to_owned());
    }
    let gw = Gateway::new(config, vec![single("m", up, mode)], &env)
        .unwrap()
        .spawn()
        .await
        .unwrap();
    (gw, dir)
}

/// A temporary folder removed on drop (std only).
mod tempfile_dir {
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Self {
            let p = std::env::temp_dir().join(format!(
                "tb-responses-{}-{}",
                std::process::id(),
                rand_suffix()
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn rand_suffix() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        N.fetch_add(1, Ordering::Relaxed)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
    }
}

async fn create(gw: &RunningGateway, key: Option<&str>, body: Value) -> (u16, Value) {
    let mut req = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

async fn get(gw: &RunningGateway, key: Option<&str>, path: &str) -> (u16, Value) {
    let mut req = http().get(format!("{}{path}", gw.base_url()));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn weather() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

/// `event:` / `data:` frames of an SSE body.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let mut kind = String::new();
            let mut data = Value::Null;
            for line in f.lines() {
                if let Some(k) = line.strip_prefix("event: ") {
                    kind = k.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap();
                }
            }
            assert_eq!(data["type"], kind.as_str(), "{f}");
            (kind, data)
        })
        .collect()
}

#[tokio::test]
async fn a_plain_answer_is_a_completed_response_with_one_message_and_usage() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("Paris.").with_usage(11, 2)));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let (status, body) = create(
        &gw,
        None,
        json!({"model": "m", "input": "Capital of France?"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["output"].as_array().unwrap().len(), 1);
    assert_eq!(body["output"][0]["type"], "message");
    assert_eq!(body["output"][0]["role"], "assistant");
    assert_eq!(body["output"][0]["content"][0]["type"], "output_text");
    assert_eq!(body["output"][0]["content"][0]["text"], "Paris.");
    assert_eq!(body["usage"]["input_tokens"], 11);
    assert_eq!(body["usage"]["output_tokens"], 2);
    // Stored by default: retrieve gives the same object.
    let (status, again) = get(
        &gw,
        None,
        &format!("/responses/{}", body["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(again, body);
}

#[tokio::test]
async fn a_streamed_answer_sends_openais_events_in_order_with_sequence_numbers() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(
        Reply::text("Hello there.").with_chunk_size(3),
    ));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&json!({"model": "m", "input": "hi", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let evs = events(&resp.text().await.unwrap());
    let kinds: Vec<&str> = evs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added"
        ]
    );
    assert_eq!(
        kinds[kinds.len() - 4..],
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    for (i, (_, data)) in evs.iter().enumerate() {
        assert_eq!(data["sequence_number"], i as u64);
    }
    let text: String = evs
        .iter()
        .filter(|(k, _)| k == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there.");
    let done = &evs.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Hello there.");
}

#[tokio::test]
async fn a_function_call_pauses_the_run_and_its_output_resumes_it() {
    for mode in ["native", "prompt"] {
        let up = TestUpstream::start().await.unwrap();
        let call = match mode {
            "native" => Reply::tool_call("get_weather", r#"{"city":"Paris"}"#),
            _ => Reply::text(common::call_text("get_weather", r#"{"city": "Paris"}"#)),
        };
        up.push(Behavior::Reply(call));
        up.push(Behavior::Reply(Reply::text("It is sunny in Paris.")));
        let (gw, _dir) = gateway(&up, mode, None).await;
        let (status, first) = create(
            &gw,
            None,
            json!({"model": "m", "input": "Weather in Paris?", "tools": [weather()]}),
        )
        .await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["status"], "completed", "{mode}");
        let items = first["output"].as_array().unwrap();
        let fc = items
            .iter()
            .find(|i| i["type"] == "function_call")
            .unwrap_or_else(|| panic!("{mode}: {first}"));
        assert_eq!(fc["name"], "get_weather");
        let args: Value = serde_json::from_str(fc["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"city": "Paris"}));
        let call_id = fc["call_id"].as_str().unwrap();
        // Only one model request so far: the run paused instead of running the client's tool.
        assert_eq!(up.requests().len(), 1);

        let (status, second) = create(&gw, None, json!({
            "model": "m", "previous_response_id": first["id"], "tools": [weather()],
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "sunny, 24 C"}],
        }))
        .await;
        assert_eq!(status, 200, "{second}");
        assert_eq!(second["status"], "completed");
        assert_eq!(second["output_text"], "It is sunny in Paris.");
        assert_eq!(second["previous_response_id"], first["id"]);
        // The model saw the user's question, its call and the client's output.
        let seen = up.requests()[1].body.to_string();
        assert!(seen.contains("Weather in Paris?"), "{mode}: {seen}");
        assert!(seen.contains("sunny, 24 C"), "{mode}: {seen}");

        // A resume without the output is refused, naming the call.
        let (status, err) = create(
            &gw,
            None,
            json!({
                "model": "m", "previous_response_id": first["id"], "tools": [weather()],
                "input": [{"type": "function_call_output", "call_id": "call_other", "output": "x"}],
            }),
        )
        .await;
        assert_eq!(status, 400, "{err}");
        assert!(
            err["error"]["message"].as_str().unwrap().contains(call_id),
            "{err}"
        );
    }
}

/// Regression (openai npm's round trip): a resumed run's state still held the paused
/// response's usage, so the response that resumed it reported both requests' tokens.
#[tokio::test]
async fn a_resumed_run_reports_only_its_own_usage() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(
        Reply::tool_call("get_weather", r#"{"city":"Paris"}"#).with_usage(30, 7),
    ));
    up.push(Behavior::Reply(
        Reply::text("It is sunny in Paris.").with_usage(41, 5),
    ));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let (_, first) = create(
        &gw,
        None,
        json!({"model": "m", "input": "Weather in Paris?", "tools": [weather()]}),
    )
    .await;
    assert_eq!(first["usage"]["input_tokens"], 30, "{first}");
    assert_eq!(first["usage"]["output_tokens"], 7, "{first}");
    let call_id = first["output"][0]["call_id"].as_str().unwrap();
    let (status, second) = create(
        &gw,
        None,
        json!({
            "model": "m", "previous_response_id": first["id"], "tools": [weather()],
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "sunny"}],
        }),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["usage"]["input_tokens"], 41, "{second}");
    assert_eq!(second["usage"]["output_tokens"], 5, "{second}");
    assert_eq!(second["usage"]["total_tokens"], 46, "{second}");
}

#[tokio::test]
async fn previous_response_id_continues_the_conversation_with_new_instructions() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("Nice to meet you, Ada.")));
    up.push(Behavior::Reply(Reply::text("Your name is Ada.")));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let (_, first) = create(
        &gw,
        None,
        json!({"model": "m", "input": "I am Ada.", "instructions": "Be brief."}),
    )
    .await;
    let (status, second) = create(&gw, None, json!({"model": "m", "input": "What is my name?", "previous_response_id": first["id"], "instructions": "Be kind."})).await;
    assert_eq!(status, 200, "{second}");
    let sent = &up.requests()[1].body;
    let text = sent.to_string();
    assert!(text.contains("I am Ada."), "{text}");
    assert!(text.contains("Nice to meet you, Ada."), "{text}");
    assert!(text.contains("Be kind."), "{text}");
    assert!(
        !text.contains("Be brief."),
        "instructions are not carried over: {text}"
    );
    // An unknown previous response is a 404 naming the parameter.
    let (status, err) = create(
        &gw,
        None,
        json!({"model": "m", "input": "x", "previous_response_id": "resp_nope"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(err["error"]["param"], "previous_response_id");
}

#[tokio::test]
async fn input_items_are_listed_and_a_deleted_response_is_gone() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("ok")));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let (_, r) = create(
        &gw,
        None,
        json!({"model": "m", "input": [
            {"role": "developer", "content": "Answer in one word."},
            {"role": "user", "content": [{"type": "input_text", "text": "Ready?"}]},
        ]}),
    )
    .await;
    let id = r["id"].as_str().unwrap();
    let (status, list) = get(&gw, None, &format!("/responses/{id}/input_items?order=asc")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["object"], "list");
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["role"], "developer");
    assert_eq!(data[1]["content"][0]["text"], "Ready?");
    assert!(data.iter().all(|i| i["id"].is_string()));
    let resp = http()
        .delete(format!("{}/responses/{id}", gw.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let deleted: Value = resp.json().await.unwrap();
    assert_eq!(
        deleted,
        json!({"id": id, "object": "response", "deleted": true})
    );
    let (status, _) = get(&gw, None, &format!("/responses/{id}")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn one_key_cannot_see_or_continue_another_keys_responses() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Behavior::Reply(Reply::text("mine"))));
    let (gw, _dir) = gateway(&up, "native", Some("sk-a,sk-b")).await;
    let (status, a) = create(&gw, Some("sk-a"), json!({"model": "m", "input": "hello"})).await;
    assert_eq!(status, 200, "{a}");
    let id = a["id"].as_str().unwrap();
    let (status, _) = get(&gw, Some("sk-a"), &format!("/responses/{id}")).await;
    assert_eq!(status, 200);
    for path in [
        format!("/responses/{id}"),
        format!("/responses/{id}/input_items"),
    ] {
        let (status, err) = get(&gw, Some("sk-b"), &path).await;
        assert_eq!(status, 404, "{path}: {err}");
    }
    let (status, _) = create(
        &gw,
        Some("sk-b"),
        json!({"model": "m", "input": "x", "previous_response_id": id}),
    )
    .await;
    assert_eq!(status, 404);
    let resp = http()
        .delete(format!("{}/responses/{id}", gw.base_url()))
        .bearer_auth("sk-b")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let (status, _) = get(&gw, Some("sk-a"), &format!("/responses/{id}")).await;
    assert_eq!(status, 200, "still there for its owner");
}

#[tokio::test]
async fn an_upstream_failure_ends_the_response_failed_with_a_sanitized_error() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::status(500, "secret upstream detail /etc/passwd"));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let (status, body) = create(&gw, None, json!({"model": "m", "input": "hi"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "failed");
    assert_eq!(body["error"]["code"], "server_error");
    assert!(!body.to_string().contains("secret"), "{body}");
    let (_, stored) = get(
        &gw,
        None,
        &format!("/responses/{}", body["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(stored["status"], "failed");
}

#[tokio::test]
async fn bad_requests_get_openai_shaped_400s() {
    let up = TestUpstream::start().await.unwrap();
    let (gw, _dir) = gateway(&up, "native", None).await;
    let (status, err) = create(&gw, None, json!({"input": "x"})).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert_eq!(err["error"]["param"], "model");
    let (status, _) = create(&gw, None, json!({"model": "nope", "input": "x"})).await;
    assert_eq!(status, 404);
    assert!(up.requests().is_empty());
}

#[tokio::test]
async fn invalid_requests_get_a_400_naming_the_field() {
    let up = TestUpstream::start().await.unwrap();
    let (gw, _dir) = gateway(&up, "native", None).await;
    let user = |parts: Value| json!([{"role": "user", "content": parts}]);
    let cases = [
        (json!({"input": [{"type": "banana"}]}), "input[0].type"),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "call_nowhere", "output": "1"}]}),
            "input[0].call_id",
        ),
        (
            json!({"input": [{"role": "user", "content": "x"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]}),
            "input[1].arguments",
        ),
        (
            json!({"input": user(json!([{"type": "input_text", "text": "x"},
                {"type": "input_image", "image_url": "data:image/png;base64,!!not base64!!"}]))}),
            "input[0].content[1].image_url",
        ),
        (
            json!({"input": user(json!([{"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="}]))}),
            "input[0].content[0].image_url",
        ),
        (json!({"input": "x", "temperature": 99}), "temperature"),
        (json!({"input": "x", "top_p": 1.5}), "top_p"),
        (
            json!({"input": [{"type": "mcp_approval_response", "approval_request_id": "mcpr_nowhere", "approve": true}]}),
            "input[0].approval_request_id",
        ),
        (
            json!({"input": "x", "tools": [{"type": "function", "name": "get weather!"}]}),
            "tools[0].name",
        ),
    ];
    for (mut body, param) in cases {
        body["model"] = json!("m");
        let (status, err) = create(&gw, None, body.clone()).await;
        assert_eq!(status, 400, "{body}: {err}");
        assert_eq!(err["error"]["param"], param, "{body}: {err}");
        assert_eq!(err["error"]["type"], "invalid_request_error");
    }
    // The function name's error says what is wrong with it, not "see the server log".
    let (_, err) = create(
        &gw,
        None,
        json!({"model": "m", "input": "x",
        "tools": [{"type": "function", "name": "get weather!"}]}),
    )
    .await;
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("^[a-zA-Z0-9_-]{1,64}$"), "{message}");

    // A key given twice is refused by the decoder, naming it.
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .header("content-type", "application/json")
        .body(r#"{"model": "m", "input": "x", "input": "y"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["param"], "input", "{err}");
    assert!(up.requests().is_empty(), "nothing reached the model");
}

/// What Codex sends (store off, its whole history with reasoning items and call pairs,
/// `include`, `prompt_cache_key`, a data: image) is accepted as it is.
#[tokio::test]
async fn a_codex_shaped_request_is_accepted() {
    use base64::Engine as _;
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("Done.")));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n0000");
    let shell = json!({"type": "function", "name": "shell", "strict": false,
        "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}}});
    let body = json!({
        "model": "m", "instructions": "You are Codex.", "store": false, "stream": false,
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k-1",
        "reasoning": {"effort": "medium", "summary": "auto"}, "parallel_tool_calls": false,
        "tool_choice": "auto", "tools": [shell],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "env"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"},
                {"type": "input_image", "image_url": format!("data:image/png;base64,{png}")}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
        ],
    });
    let (status, answer) = create(&gw, None, body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["output_text"], "Done.");
}

#[tokio::test]
async fn a_conversation_collects_its_responses_and_belongs_to_one_key() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("Noted: blue.")));
    up.push(Behavior::Reply(Reply::text("Blue.")));
    let (gw, _dir) = gateway(&up, "native", Some("sk-a,sk-b")).await;
    let resp = http()
        .post(format!("{}/conversations", gw.base_url()))
        .bearer_auth("sk-a")
        .json(&json!({"metadata": {"topic": "colours"}, "items": [{"role": "user", "content": "I like blue."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let conv: Value = resp.json().await.unwrap();
    let conv_id = conv["id"].as_str().unwrap();
    assert!(conv_id.starts_with("conv_"));
    assert_eq!(conv["metadata"]["topic"], "colours");
    let (status, first) = create(
        &gw,
        Some("sk-a"),
        json!({"model": "m", "conversation": conv_id, "input": "Remember it."}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let (_, second) = create(
        &gw,
        Some("sk-a"),
        json!({"model": "m", "conversation": conv_id, "input": "What do I like?"}),
    )
    .await;
    assert_eq!(second["output_text"], "Blue.");
    let seen = up.requests()[1].body.to_string();
    assert!(
        seen.contains("I like blue.") && seen.contains("Noted: blue."),
        "{seen}"
    );
    let (status, items) = get(
        &gw,
        Some("sk-a"),
        &format!("/conversations/{conv_id}/items?order=asc&limit=100"),
    )
    .await;
    assert_eq!(status, 200);
    let texts: Vec<String> = items["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        texts,
        [
            "I like blue.",
            "Remember it.",
            "Noted: blue.",
            "What do I like?",
            "Blue."
        ]
    );
    // Another key: 404 for the conversation and for a response in it.
    let (status, _) = get(&gw, Some("sk-b"), &format!("/conversations/{conv_id}")).await;
    assert_eq!(status, 404);
    let (status, _) = create(
        &gw,
        Some("sk-b"),
        json!({"model": "m", "conversation": conv_id, "input": "x"}),
    )
    .await;
    assert_eq!(status, 404);
    let resp = http()
        .delete(format!("{}/conversations/{conv_id}", gw.base_url()))
        .bearer_auth("sk-a")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (status, _) = get(&gw, Some("sk-a"), &format!("/conversations/{conv_id}")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn text_format_json_schema_reaches_the_upstream_as_response_format() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Behavior::Reply(Reply::text(r#"{"city":"Paris"}"#))));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let (status, body) = create(&gw, None, json!({"model": "m", "input": "Capital of France as JSON.",
        "text": {"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": true}}})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    assert_eq!(body["text"]["format"]["name"], "place");
    let sent = &up.requests()[0].body;
    assert_eq!(sent["response_format"]["type"], "json_schema", "{sent}");
    assert_eq!(sent["response_format"]["json_schema"]["schema"], schema);
    // Codex's text options without a format ask for nothing.
    let (status, _) = create(
        &gw,
        None,
        json!({"model": "m", "input": "x", "text": {"verbosity": "low"}}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(up.requests()[1].body.get("response_format").is_none());
    let (status, err) = create(
        &gw,
        None,
        json!({"model": "m", "input": "x", "text": {"format": {"type": "xml"}}}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["param"], "text.format.type");
}

#[tokio::test]
async fn tool_choice_forces_the_first_model_request_and_names_only_declared_tools() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Behavior::Reply(Reply::text("Done."))));
    let (gw, _dir) = gateway(&up, "native", None).await;
    let tool = json!({"type": "function", "name": "lookup", "description": "Looks up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}});
    for (choice, sent) in [
        (json!("required"), json!("required")),
        (
            json!({"type": "function", "name": "lookup"}),
            json!({"type": "function", "function": {"name": "lookup"}}),
        ),
        (
            json!({"type": "allowed_tools", "mode": "required", "tools": []}),
            json!("required"),
        ),
    ] {
        let before = up.requests().len();
        let (status, body) = create(
            &gw,
            None,
            json!({"model": "m", "input": "Look it up.",
            "tools": [tool.clone()], "tool_choice": choice.clone()}),
        )
        .await;
        assert_eq!(status, 200, "{choice}: {body}");
        assert_eq!(body["tool_choice"], choice, "echoed as sent");
        let requests = up.requests();
        assert_eq!(requests[before].body["tool_choice"], sent, "{choice}");
    }
    // `auto` sends nothing of its own.
    let before = up.requests().len();
    let (status, _) = create(
        &gw,
        None,
        json!({"model": "m", "input": "x", "tools": [tool.clone()],
        "tool_choice": "auto"}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(up.requests()[before].body.get("tool_choice").is_none());
    // A function the request does not declare, and shapes that mean nothing, are the client's error.
    let before = up.requests().len();
    for choice in [
        json!({"type": "function", "name": "nope"}),
        json!({"type": "function"}),
        json!("sometimes"),
        json!({"type": "file_search_but_not"}),
    ] {
        let (status, err) = create(
            &gw,
            None,
            json!({"model": "m", "input": "x",
            "tools": [tool.clone()], "tool_choice": choice.clone()}),
        )
        .await;
        assert_eq!(status, 400, "{choice}: {err}");
        assert_eq!(err["error"]["param"], "tool_choice", "{choice}: {err}");
    }
    assert_eq!(up.requests().len(), before, "nothing reached the model");
}

#[tokio::test]
async fn unavailable_tools_error_makes_a_hosted_tool_the_server_lacks_a_400_naming_it() {
    let up = TestUpstream::start().await.unwrap();
    let mut config = server_config();
    config.responses.unavailable_tools = toolbridge_gateway::UnavailableTools::Error;
    let (gw, _dir) = gateway_with(&up, "native", None, config).await;
    let (status, err) = create(&gw, None, json!({"model": "m", "input": "x",
        "tools": [{"type": "web_search"}, {"type": "code_interpreter", "container": {"type": "auto"}}]})).await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["error"]["param"], "tools");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("web_search") && message.contains("code_interpreter"),
        "{message}"
    );
    assert!(up.requests().is_empty(), "nothing reached the model");
}

#[tokio::test]
async fn an_uploaded_name_loses_its_bidi_and_invisible_characters() {
    let up = TestUpstream::start().await.unwrap();
    let (gw, _dir) = gateway(&up, "native", None).await;
    // Raw UTF-8 in the header, as browsers send a file's name.
    let name = "invoice\u{202E}fdp\u{200B}\u{2066}.exe";
    let body = format!(
        "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nuser_data\r\n\
         --b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\r\nhello\r\n--b--\r\n"
    );
    let resp = http()
        .post(format!("{}/files", gw.base_url()))
        .header("content-type", "multipart/form-data; boundary=b")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let file: Value = resp.json().await.unwrap();
    assert_eq!(file["filename"], "invoicefdp.exe", "{file}");
    let (status, list) = get(&gw, None, "/files").await;
    assert_eq!(status, 200);
    assert_eq!(list["data"][0]["filename"], "invoicefdp.exe", "{list}");
    assert!(!list.to_string().contains('\u{202E}'));
}

#[tokio::test]
async fn an_upload_over_max_file_bytes_gets_413_naming_the_file() {
    let up = TestUpstream::start().await.unwrap();
    let mut config = server_config();
    config.state.max_file_bytes = 1024;
    let (gw, _dir) = gateway_with(&up, "native", None, config).await;
    let form = reqwest::multipart::Form::new()
        .text("purpose", "user_data")
        .part(
            "file",
            reqwest::multipart::Part::bytes(vec![b'x'; 4096]).file_name("big.txt"),
        );
    let resp = http()
        .post(format!("{}/files", gw.base_url()))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["param"], "file", "{err}");
    assert_eq!(err["error"]["code"], "request_too_large", "{err}");
}

#[tokio::test]
async fn one_key_cannot_list_read_download_delete_or_attach_another_keys_files() {
    let up = TestUpstream::start().await.unwrap();
    let (gw, _dir) = gateway(&up, "native", Some("sk-a,sk-b")).await;
    let form = reqwest::multipart::Form::new()
        .text("purpose", "user_data")
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"secret,1\n".to_vec()).file_name("a.csv"),
        );
    let resp = http()
        .post(format!("{}/files", gw.base_url()))
        .bearer_auth("sk-a")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let file: Value = resp.json().await.unwrap();
    let id = file["id"].as_str().unwrap();
    let (status, list) = get(&gw, Some("sk-b"), "/files").await;
    assert_eq!(status, 200);
    assert_eq!(list["data"].as_array().unwrap().len(), 0, "{list}");
    for path in [format!("/files/{id}"), format!("/files/{id}/content")] {
        let (status, _) = get(&gw, Some("sk-b"), &path).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, _) = create(
        &gw,
        Some("sk-b"),
        json!({"model": "m", "input": [{"role": "user",
        "content": [{"type": "input_image", "file_id": id}]}]}),
    )
    .await;
    assert_eq!(status, 404);
    let resp = http()
        .delete(format!("{}/files/{id}", gw.base_url()))
        .bearer_auth("sk-b")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let (status, list) = get(&gw, Some("sk-a"), "/files").await;
    assert_eq!(status, 200);
    assert_eq!(list["data"][0]["id"], id, "still there for its owner");
    let content = http()
        .get(format!("{}/files/{id}/content", gw.base_url()))
        .bearer_auth("sk-a")
        .send()
        .await
        .unwrap();
    assert_eq!(content.headers()["x-content-type-options"], "nosniff");
    assert_eq!(content.text().await.unwrap(), "secret,1\n");
}
