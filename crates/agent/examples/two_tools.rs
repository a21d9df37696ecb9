//! A program that defines two tools with closures and runs the agent loop.
//!
//! ```sh
//! cargo run -p toolbridge-agent --example two_tools                       # offline, scripted model
//! cargo run -p toolbridge-agent --example two_tools -- openai:gpt-4o-mini # any provider:model
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Agent, AgentConfig, FnTool, RunEvent, ToolContext, ToolError, Toolbox, ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::Message;
use toolbridge_providers::config::{model_from_spec, ProcessEnv};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // Tool 1: a pure function.
    let add = FnTool::new(
        "add",
        "Add two integers.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
        |args, _ctx| async move {
            let a = args["a"].as_i64().ok_or("a must be an integer")?;
            let b = args["b"].as_i64().ok_or("b must be an integer")?;
            Ok::<_, ToolError>((a + b).to_string())
        },
    );
    // Tool 2: state captured by the closure (a tiny key-value store).
    let store = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        String,
    >::new()));
    let remember = FnTool::new(
        "remember",
        "Remember a value under a key; returns what was stored before.",
        json!({"type": "object", "properties": {"key": {"type": "string"}, "value": {"type": "string"}}, "required": ["key", "value"]}),
        move |args, _ctx| {
            let store = Arc::clone(&store);
            async move {
                let key = args["key"].as_str().unwrap_or_default().to_owned();
                let value = args["value"].as_str().unwrap_or_default().to_owned();
                let mut map = store
                    .lock()
                    .map_err(|_| ToolError::new("store unavailable"))?;
                let old = map.insert(key, value);
                Ok(format!(
                    "previous value: {}",
                    old.unwrap_or_else(|| "(none)".into())
                ))
            }
        },
    );
    let toolbox = match Toolbox::new(ToolboxConfig::default())
        .with(add)
        .and_then(|t| t.with(remember))
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };

    let model = match std::env::args().nth(1) {
        Some(spec) => match model_from_spec(&spec, None, &ProcessEnv) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        },
        // Offline: a scripted model that calls `add` natively, then answers.
        None => {
            let upstream = ScriptedUpstream::new(vec![
                ScriptedReply::calls([("add", json!({"a": 19, "b": 23}))]),
                ScriptedReply::text("19 + 23 = 42."),
            ]);
            Model::new(
                "scripted",
                vec![Arm::new(Arc::new(upstream), ToolMode::Native)],
            )
        }
    };

    let agent = match Agent::new(model, toolbox, SkillSet::default(), AgentConfig::default()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut run = agent.run(
        vec![Message::user("What is 19 + 23? Use the add tool.")],
        ToolContext::default(),
    );
    while let Some(event) = run.next().await {
        match event {
            RunEvent::Text { text } => print!("{text}"),
            RunEvent::CallFinished { name, preview, .. } => eprintln!("[{name} → {preview}]"),
            RunEvent::Outcome { outcome, .. } => println!("\n({})", outcome.as_str()),
            _ => {}
        }
    }
    ExitCode::SUCCESS
}
