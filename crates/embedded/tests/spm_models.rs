//! Phi-3 and Gemma models with a SentencePiece vocabulary, end to end through the provider path
//! (`embedded:PATH.gguf`): tiny random-weight GGUFs written by the test, their chat templates read
//! from the file and rendered, the prompt tokenized, a few tokens generated and decoded, a forced
//! call made in the template's dialect.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Cursor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};
use toolbridge_embedded::engine::{Constraint, Generation, Sampling};
use toolbridge_embedded::template::{unmark, TemplateMessage};
use toolbridge_embedded::Engine;
use toolbridge_protocol::parser::Dialect;
use toolbridge_protocol::types::{ChatRequest, Message, ToolChoice, ToolSpec};
use toolbridge_providers::config::ModelConfig;
use toolbridge_providers::{Upstream, WireEvent};

/// Phi-3-mini-4k-instruct's template (its tokenizer_config.json), as published.
const PHI3_TEMPLATE: &str = "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}";

/// A Phi-4-mini template with tools, abridged from vLLM's
/// `examples/tool_chat_template_phi4_mini.jinja` (its system prompt tells the model to prefix
/// calls with `functools`); Phi-4-mini's turns are Phi-3's without the newlines.
const PHI4_MINI_TEMPLATE: &str = "{%- for message in messages -%}{%- if message['role'] == 'system' -%}{{- '<|system|>' + message['content'] + '\nIf you decide to call functions, prefix them with the functools marker: functools[{\"name\": ..., \"arguments\": ...}]<|end|>' -}}{%- else -%}{{- '<|' + message['role'] + '|>' + message['content'] + '<|end|>' -}}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}";

/// Gemma 2's template (gemma-2-2b-it's tokenizer_config.json, as published): alternating user and
/// model turns, a system message refused with `raise_exception`.
const GEMMA_TEMPLATE: &str = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";

/// The GGUF written to a file of its own, and the provider's upstream for `embedded:PATH`.
/// Each call gets its own directory: tests run in parallel in one process, and two of them use
/// the same architecture with different templates.
fn provider_upstream(name: &str, bytes: &[u8]) -> Arc<dyn Upstream> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tb-spm-{}-{name}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.gguf");
    std::fs::write(&path, bytes).unwrap();
    let cfg: ModelConfig = serde_json::from_value(json!({
        "name": "m",
        "model": format!("embedded:{}", path.display()),
        "threads": 2,
    }))
    .unwrap();
    let arm = cfg.arms.into_iter().next().unwrap();
    toolbridge_embedded::provider::configured_arm(&arm)
        .unwrap()
        .upstream
}

fn request(tools: Vec<ToolSpec>, choice: Option<ToolChoice>, max_tokens: u32) -> ChatRequest {
    let mut r = ChatRequest {
        messages: vec![
            Message::system("Be brief."),
            Message::user("Weather in Paris for two days?"),
        ],
        tools,
        tool_choice: choice,
        temperature: Some(1.0),
        max_tokens: Some(max_tokens),
        ..ChatRequest::default()
    };
    r.extra.insert("seed".into(), json!(3));
    r
}

async fn collect(up: &dyn Upstream, req: ChatRequest) -> Vec<WireEvent> {
    up.send(req).map(|e| e.unwrap()).collect().await
}

/// The checks every SentencePiece model passes: the prompt its template renders is tokenized with
/// the turn markers as single tokens and the content as text (BOS once), a few tokens are
/// generated and decoded, free text and a forced call come back through the provider path.
async fn runs_end_to_end(arch: &str, template: &str, dialect: Dialect) -> Engine {
    let bytes = common::tiny_spm_gguf(arch, template);
    let engine = Engine::from_reader(&mut Cursor::new(bytes.clone())).unwrap();
    assert_eq!(engine.weights().hparams.architecture, arch);
    assert!(engine.template().is_native(), "{arch}");
    assert_eq!(engine.template().dialect(), dialect, "{arch}");
    let tok = engine.tokenizer();
    // Round trips on content, byte fallback included.
    for text in [
        "hello the Paris",
        "  two spaces\nnew line\ttab",
        "é à ü — 漢字 🦀",
    ] {
        let ids = tok.encode(text).unwrap();
        assert_eq!(tok.decode(&ids), text, "{arch}");
    }
    // The rendered prompt: BOS once, the markers as tokens, content that spells a marker as text.
    let prompt = engine.render(&[
        TemplateMessage::new("system", "Be brief."),
        TemplateMessage::new("user", "hello <end_of_turn><|end|>"),
    ]);
    let ids = tok.encode_prompt(&prompt).unwrap();
    let bos = tok.bos.unwrap();
    assert_eq!(ids[0], bos, "{arch}");
    assert_eq!(ids.iter().filter(|&&t| t == bos).count(), 1, "{arch}");
    let marker = match arch {
        "phi3" => "<|end|>",
        _ => "<end_of_turn>",
    };
    let marker = tok.token_id(marker).unwrap();
    // One marker after the system prompt (Phi-3) or none (Gemma folds it into the user turn),
    // one after the user turn; the ones the user wrote are text.
    let expected = if arch == "phi3" { 2 } else { 1 };
    assert_eq!(
        ids.iter().filter(|&&t| t == marker).count(),
        expected,
        "{arch}: {}",
        unmark(&prompt)
    );
    assert!(
        tok.decode(&ids).contains("hello <end_of_turn><|end|>"),
        "{arch}"
    );
    // A few tokens generated from the prompt and decoded, as the engine streams them.
    let mut streamed = String::new();
    let report = engine
        .generate(
            &Generation {
                prompt: prompt.clone(),
                constraint: Constraint::Free,
                stop: Vec::new(),
                max_tokens: 6,
                sampling: Sampling::default(),
            },
            &mut |t| {
                streamed.push_str(t);
                true
            },
        )
        .unwrap();
    assert_eq!(report.fed_tokens, ids.len(), "{arch}");
    assert!(report.generated_tokens >= 1, "{arch}");
    // Through the provider path: free text, then a forced call that parses and fits the schema.
    let up = provider_upstream(arch, &bytes);
    let events = collect(&*up, request(Vec::new(), None, 5)).await;
    assert!(
        events.iter().any(|e| matches!(e, WireEvent::Finish(_))),
        "{arch}: {events:?}"
    );
    let events = collect(
        &*up,
        request(
            vec![common::weather_tool()],
            Some(ToolChoice::Required),
            200,
        ),
    )
    .await;
    let args: String = events
        .iter()
        .filter_map(|e| match e {
            WireEvent::ToolCall(d) => d.function.as_ref()?.arguments.clone(),
            _ => None,
        })
        .collect();
    let value: Value =
        serde_json::from_str(&args).unwrap_or_else(|e| panic!("{arch}: {e}: {events:?}"));
    let validator =
        jsonschema::validator_for(common::weather_tool().parameters.as_ref().unwrap()).unwrap();
    assert!(validator.is_valid(&value), "{arch}: {value}");
    engine
}

#[tokio::test]
async fn a_tiny_phi3_model_runs_end_to_end() {
    let engine = runs_end_to_end("phi3", PHI3_TEMPLATE, Dialect::Hermes).await;
    let text = unmark(&engine.render(&[
        TemplateMessage::new("system", "Be brief."),
        TemplateMessage::new("user", "hi"),
    ]));
    assert_eq!(
        text,
        "<|system|>\nBe brief.<|end|>\n<|user|>\nhi<|end|>\n<|assistant|>\n"
    );
    // Phi-3's end of turn ends generation.
    let tok = engine.tokenizer();
    assert!(tok.end_of_turn.contains(&tok.token_id("<|end|>").unwrap()));
}

#[tokio::test]
async fn a_tiny_phi4_mini_template_is_read_in_its_dialect() {
    runs_end_to_end("phi3", PHI4_MINI_TEMPLATE, Dialect::Phi4Mini).await;
}

#[tokio::test]
async fn tiny_gemma_models_run_end_to_end_and_fold_the_system_prompt() {
    for arch in ["gemma", "gemma2", "gemma3"] {
        let engine = runs_end_to_end(arch, GEMMA_TEMPLATE, Dialect::Hermes).await;
        // The template refuses a system role: the system prompt joins the first user turn, and
        // a tool result becomes a user turn, so roles alternate as the template demands.
        let text = unmark(&engine.render(&[
            TemplateMessage::new("system", "Be brief."),
            TemplateMessage::new("user", "hi"),
            TemplateMessage::new("assistant", "calling"),
            TemplateMessage::new("tool", "42"),
        ]));
        assert_eq!(
            text,
            "<bos><start_of_turn>user\nBe brief.\n\nhi<end_of_turn>\n<start_of_turn>model\n\
             calling<end_of_turn>\n<start_of_turn>user\n42<end_of_turn>\n<start_of_turn>model\n",
            "{arch}"
        );
        let tok = engine.tokenizer();
        assert!(tok
            .end_of_turn
            .contains(&tok.token_id("<end_of_turn>").unwrap()));
        // Gemma files have no space prefix: "hello" is the piece without `▁`.
        assert_eq!(
            tok.encode("hello").unwrap(),
            [tok.token_id("hello").unwrap()]
        );
    }
}
