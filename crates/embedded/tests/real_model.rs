//! End to end with the real default model (SmolLM2-135M-Instruct). `scripts/test.sh` pulls it once
//! into its test folder and sets TOOLBRIDGE_EMBEDDED_MODEL; without that variable this test fails.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use toolbridge_embedded::engine::{shared, EngineOptions};
use toolbridge_embedded::{EmbeddedConfig, EmbeddedUpstream};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::{ChatRequest, Content, Message, ToolChoice, ToolSpec};
use toolbridge_providers::{Model, Upstream};

/// Both tests load the same file, so they share one engine (`shared`) and its KV cache: the first
/// test's cache assertions hold only if the other test is not generating at the same time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn model_path() -> PathBuf {
    match std::env::var("TOOLBRIDGE_EMBEDDED_MODEL") {
        Ok(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "TOOLBRIDGE_EMBEDDED_MODEL is not set: run the suite with `bash scripts/test.sh`, which pulls the default model once and sets it"
        ),
    }
}

fn weather() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get the current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string", "description": "The city name"}}, "required": ["city"]}),
    )
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // each test has its own runtime; the lock only orders them
async fn the_real_model_calls_a_tool_and_answers() {
    let _serial = one_at_a_time();
    let engine = shared(
        &model_path(),
        &EngineOptions {
            threads: Some(2),
            q4_0: false,
        },
    )
    .unwrap();
    assert_eq!(engine.tokenizer().vocab_size(), 49152);
    assert_eq!(engine.tokenizer().token_id("<|im_end|>"), Some(2));
    // The tokenizer splits digits one by one and round-trips.
    let ids = engine.tokenizer().encode("In 2024, café").unwrap();
    assert_eq!(engine.tokenizer().decode(&ids), "In 2024, café");
    let up = Arc::new(EmbeddedUpstream::new(
        Arc::clone(&engine),
        EmbeddedConfig::default(),
    ));
    let model = Model::single(up.clone(), ToolMode::Auto);
    let mut request = ChatRequest {
        messages: vec![Message::user("What is the weather in Paris?")],
        tools: vec![weather()],
        tool_choice: Some(ToolChoice::Required),
        ..ChatRequest::default()
    };
    let response = model.complete(request.clone()).await.unwrap();
    assert_eq!(response.calls.len(), 1, "{response:?}");
    assert_eq!(response.calls[0].name, "get_weather");
    let args: Value = serde_json::from_str(&response.calls[0].arguments).unwrap();
    assert!(args["city"].as_str().unwrap().contains("Paris"), "{args}");
    // Round two: the result goes back; auto answers in text, reusing the cached prefix.
    request.tool_choice = None;
    request
        .messages
        .push(Message::assistant_calls(None, response.calls.clone()));
    request.messages.push(Message::Tool {
        tool_call_id: response.calls[0].id.clone(),
        content: Content::Text("Sunny, 21 degrees Celsius.".into()),
        name: None,
        is_error: false,
    });
    request.max_tokens = Some(60);
    let before = engine.cached_tokens();
    // The exact count (`count_tokens`, behind the Messages API's count endpoint) is what the
    // answer's usage reports.
    let counted = up.count_tokens(&request).unwrap();
    let answer = model.complete(request).await.unwrap();
    assert!(answer.calls.is_empty(), "{answer:?}");
    assert!(!answer.text.trim().is_empty());
    assert!(before > 100, "the first round's prompt stays cached");
    let usage = answer.usage.unwrap();
    assert!(usage.prompt_tokens as usize > before);
    assert_eq!(counted, usage.prompt_tokens);
}

/// Forced calls on a sample of real-world function schemas (every 10th of the BFCL v4 corpus in
/// tests/data, whose source it names): every request succeeds, and every call parses and matches
/// its schema as given. `examples/forced_eval.rs` runs the whole corpus.
#[tokio::test]
#[allow(clippy::await_holding_lock)] // each test has its own runtime; the lock only orders them
async fn forced_calls_on_real_world_schemas_always_parse_and_validate() {
    let _serial = one_at_a_time();
    let corpus: Value = serde_json::from_str(include_str!("data/bfcl_v4_schemas.json")).unwrap();
    let schemas = corpus["schemas"].as_array().unwrap();
    let engine = shared(
        &model_path(),
        &EngineOptions {
            threads: Some(2),
            q4_0: false,
        },
    )
    .unwrap();
    let up = Arc::new(EmbeddedUpstream::new(engine, EmbeddedConfig::default()));
    let model = Model::single(up, ToolMode::Auto);
    let sample: Vec<&Value> = schemas.iter().step_by(10).collect();
    assert!(sample.len() >= 50, "{}", sample.len());
    let mut failures = Vec::new();
    for s in &sample {
        let name = s["name"].as_str().unwrap();
        let description = s["description"].as_str().unwrap();
        let request = ChatRequest {
            messages: vec![Message::user(description)],
            tools: vec![ToolSpec::new(name, description, s["parameters"].clone())],
            tool_choice: Some(ToolChoice::Required),
            ..ChatRequest::default()
        };
        let response = match model.complete(request).await {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{name}: the request failed: {e}"));
                continue;
            }
        };
        let Some(call) = response.calls.first() else {
            failures.push(format!("{name}: no call: {:?}", response.text));
            continue;
        };
        let arguments: Value = match serde_json::from_str(&call.arguments) {
            Ok(a) => a,
            Err(e) => {
                failures.push(format!("{name}: {e}: {}", call.arguments));
                continue;
            }
        };
        let validator = jsonschema::validator_for(&s["parameters"]).unwrap();
        if let Err(e) = validator.validate(&arguments) {
            failures.push(format!("{name}: {e}: {arguments}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}: {failures:#?}",
        failures.len(),
        sample.len()
    );
}
