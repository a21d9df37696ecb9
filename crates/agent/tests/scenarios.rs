//! The tool loop as data: each `scenarios/NAME.json` scripts the model's replies for a run (in
//! native and prompt mode), and `scenarios/NAME.expected.json` holds what the run must report —
//! its events, its transcript, the outcome and answer, and the last message of every request the
//! model received (`[tools]` when the request offers tools: the tools field, a stop sequence or
//! the prompt-mode preamble; `[no tools]` otherwise); a scenario with a `dialect` runs its arm in
//! that call format and also holds its whole last request. Call ids are numbered in order of appearance and durations are zeroed, so the
//! files are stable. `TOOLBRIDGE_BLESS=1` rewrites the expected files after a deliberate change;
//! review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Agent, AgentConfig, FnTool, RunEvent, ToolContext, ToolError, Toolbox, ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::parser::Dialect;
use toolbridge_protocol::types::Message;
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// What the scenario checks (documentation only).
    #[allow(dead_code)]
    about: String,
    #[serde(default = "both_modes")]
    modes: Vec<ToolMode>,
    /// The arm's dialect (default hermes). A scenario in another dialect also records the whole
    /// last request (`last_request`), to show the history as the dialect writes it.
    #[serde(default)]
    dialect: Dialect,
    #[serde(default)]
    config: Limits,
    /// Tools from the catalogue in [`tool`].
    #[serde(default = "just_echo")]
    tools: Vec<String>,
    user: String,
    replies: Vec<Step>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Limits {
    max_rounds: Option<usize>,
    max_tool_calls: Option<usize>,
    parallel_calls: Option<usize>,
    max_malformed_retries: Option<usize>,
    tool_timeout_ms: Option<u64>,
    max_output_chars: Option<usize>,
}

/// One model reply, written once for both modes.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Step {
    /// Plain text (in prompt mode it may hold `<tool_call>` markup of its own).
    Text(String),
    /// One call: native in native mode, a `<tool_call>` block after `text` in prompt mode.
    Call {
        name: String,
        #[serde(default)]
        arguments: Value,
        #[serde(default)]
        text: String,
    },
    /// Several calls in one reply (prompt mode: one array block).
    Calls(Vec<(String, Value)>),
    /// A reply given as is, whatever the mode.
    Raw(ScriptedReply),
}

fn both_modes() -> Vec<ToolMode> {
    vec![ToolMode::Native, ToolMode::Prompt]
}

fn just_echo() -> Vec<String> {
    vec!["echo".into()]
}

fn reply(step: &Step, mode: ToolMode) -> ScriptedReply {
    let block =
        |name: &str, args: &Value| format!("{{\"name\": \"{name}\", \"arguments\": {args}}}");
    match (step, mode) {
        (Step::Text(t), _) => ScriptedReply::text(t.clone()),
        (Step::Raw(r), _) => r.clone(),
        (
            Step::Call {
                name,
                arguments,
                text,
            },
            ToolMode::Native,
        ) => ScriptedReply::Full {
            text: text.clone(),
            reasoning: String::new(),
            tool_calls: vec![toolbridge_providers::scripted::ScriptedCall {
                name: name.clone(),
                arguments: arguments.clone(),
            }],
            finish_reason: None,
        },
        (
            Step::Call {
                name,
                arguments,
                text,
            },
            _,
        ) => ScriptedReply::text(format!(
            "{text}<tool_call>{}</tool_call>",
            block(name, arguments)
        )),
        (Step::Calls(list), ToolMode::Native) => {
            ScriptedReply::calls(list.iter().map(|(n, a)| (n.clone(), a.clone())))
        }
        (Step::Calls(list), _) => {
            let items: Vec<String> = list.iter().map(|(n, a)| block(n, a)).collect();
            ScriptedReply::text(format!("<tool_call>[{}]</tool_call>", items.join(", ")))
        }
    }
}

/// The test tools a scenario may name.
fn tool(name: &str) -> FnTool {
    let object =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    match name {
        "echo" => FnTool::new("echo", "Echo the text.", object, |args, _| async move {
            Ok(format!(
                "echo: {}",
                args["text"].as_str().unwrap_or_default()
            ))
        }),
        "fail" => FnTool::new("fail", "Always fails.", object, |_, _| async move {
            Err::<String, _>(ToolError::new("repository not found"))
        }),
        "crash" => FnTool::new("crash", "Fails inside.", object, |_, _| async move {
            Err::<String, _>(ToolError::internal("connection reset by the backend"))
        }),
        "slow" => FnTool::new("slow", "Takes long.", object, |_, _| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok("late".to_owned())
        }),
        "big" => FnTool::new("big", "Writes a lot.", object, |_, _| async move {
            Ok("0123456789".repeat(100))
        }),
        other => panic!("no test tool `{other}` (scenarios.rs: fn tool)"),
    }
}

/// Numbers call ids in order of appearance and zeroes durations.
fn normalize(value: Value, ids: &mut Vec<String>) -> Value {
    match value {
        Value::Array(a) => Value::Array(a.into_iter().map(|v| normalize(v, ids)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("duration_ms", _) => json!(0),
                        ("id" | "tool_call_id", Value::String(id)) => {
                            let n = ids.iter().position(|i| *i == id).unwrap_or_else(|| {
                                ids.push(id);
                                ids.len() - 1
                            });
                            Value::String(format!("call_{}", n + 1))
                        }
                        (_, v) => normalize(v, ids),
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

fn last_message_text(messages: &[Message]) -> String {
    match messages.last() {
        Some(Message::User { content, .. }) | Some(Message::System { content, .. }) => {
            content.text().into_owned()
        }
        Some(Message::Tool { content, .. }) => format!("(tool) {}", content.text()),
        Some(Message::Assistant { content, .. }) => {
            format!(
                "(assistant) {}",
                content
                    .as_ref()
                    .map(|c| c.text().into_owned())
                    .unwrap_or_default()
            )
        }
        None => String::new(),
    }
}

async fn play(scenario: &Scenario, mode: ToolMode) -> Value {
    let replies = scenario.replies.iter().map(|s| reply(s, mode)).collect();
    let upstream = ScriptedUpstream::new(replies).with_chunk_size(7);
    let arm = Arm::new(Arc::new(upstream.clone()), mode).with_dialect(scenario.dialect);
    let model = Model::new("m", vec![arm]);
    let defaults = ToolboxConfig::default();
    let mut toolbox = Toolbox::new(ToolboxConfig {
        timeout: scenario
            .config
            .tool_timeout_ms
            .map_or(defaults.timeout, Duration::from_millis),
        max_output_chars: scenario
            .config
            .max_output_chars
            .unwrap_or(defaults.max_output_chars),
    });
    for name in &scenario.tools {
        toolbox.add(Arc::new(tool(name))).unwrap();
    }
    let d = AgentConfig::default();
    let c = &scenario.config;
    let config = AgentConfig {
        max_rounds: c.max_rounds.unwrap_or(d.max_rounds),
        max_tool_calls: c.max_tool_calls.unwrap_or(d.max_tool_calls),
        parallel_calls: c.parallel_calls.unwrap_or(d.parallel_calls),
        max_malformed_retries: c.max_malformed_retries.unwrap_or(d.max_malformed_retries),
        ..d
    };
    let agent = Agent::new(model, toolbox, SkillSet::default(), config).unwrap();
    let mut run = agent.run(
        vec![Message::user(scenario.user.clone())],
        ToolContext::default(),
    );
    let mut events: Vec<RunEvent> = Vec::new();
    while let Some(e) = run.next().await {
        // Text arrives in chunks of the scripted size: merge neighbours so the file shows text.
        match (events.last_mut(), e) {
            (Some(RunEvent::Text { text }), RunEvent::Text { text: more }) => text.push_str(&more),
            (Some(RunEvent::Reasoning { text }), RunEvent::Reasoning { text: more }) => {
                text.push_str(&more)
            }
            (_, e) => events.push(e),
        }
    }
    let state = run.state();
    let requests: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| {
            // Prompt mode moves the tools into the system prompt and stops at the close tag: a
            // request offers tools when it has the tools field, a stop sequence or the preamble.
            let preamble = r.messages.iter().any(|m| {
                matches!(m, Message::System { content, .. } if content.text().contains("## Available tools"))
            });
            let offered = !r.tools.is_empty() || !r.stop.is_empty() || preamble;
            let tools = if offered { "tools" } else { "no tools" };
            format!("[{tools}] {}", last_message_text(&r.messages))
        })
        .collect();
    let mut ids = Vec::new();
    let mut report = json!({
        "outcome": state.outcome,
        "answer": state.answer,
        "rounds": state.rounds,
        "tool_calls": state.tool_calls,
        "requests": requests,
        "events": events,
        // The system prompt is the same in every scenario; the rest is the run's.
        "transcript": state.transcript.iter().skip(1).collect::<Vec<_>>(),
    });
    if scenario.dialect != Dialect::Hermes {
        let last = upstream.requests().last().cloned().unwrap_or_default();
        report["last_request"] = json!({
            "stop": last.stop,
            "messages": last.messages.iter().map(message_line).collect::<Vec<_>>(),
        });
    }
    normalize(report, &mut ids)
}

/// A message as `(role) text`, as the model reads it (text modes have no native calls left).
fn message_line(message: &Message) -> String {
    let (role, text) = match message {
        Message::System { content, .. } => ("system", content.text().into_owned()),
        Message::User { content, .. } => ("user", content.text().into_owned()),
        Message::Assistant { content, .. } => (
            "assistant",
            content
                .as_ref()
                .map(|c| c.text().into_owned())
                .unwrap_or_default(),
        ),
        Message::Tool { content, .. } => ("tool", content.text().into_owned()),
    };
    format!("({role}) {text}")
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".expected.json")
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn every_scenario_reports_what_its_expected_file_says() {
    let files = scenario_files();
    assert!(files.len() >= 8, "the scenarios folder is missing files");
    let mut failures = Vec::new();
    for path in files {
        let scenario: Scenario = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut got = serde_json::Map::new();
        for &mode in &scenario.modes {
            got.insert(mode.to_string(), play(&scenario, mode).await);
        }
        let got = serde_json::to_string_pretty(&Value::Object(got)).unwrap() + "\n";
        let expected_path = path.with_extension("expected.json");
        failures.extend(toolbridge_testkit::blessed::compare(&expected_path, &got));
    }
    assert!(
        failures.is_empty(),
        "{}\n(TOOLBRIDGE_BLESS=1 rewrites the expected files)",
        failures.join("\n")
    );
}
