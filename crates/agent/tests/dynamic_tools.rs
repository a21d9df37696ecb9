//! Dynamic tool sources (MCP servers whose tool list changes): the loop rebuilds the tool array
//! between rounds only when a source's version moved, so the array stays byte-identical otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Agent, AgentConfig, DynamicTools, FnTool, Tool, ToolContext, Toolbox, ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::{ChatRequest, Message};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

/// A source whose list grows by one tool each time a call to `grow` runs.
struct Growing {
    version: AtomicU64,
    tools: Mutex<Vec<Arc<dyn Tool>>>,
}

fn named(name: &str) -> Arc<dyn Tool> {
    Arc::new(FnTool::new(
        name,
        format!("The {name} tool."),
        json!({"type": "object", "properties": {}}),
        |_, _| async { Ok("done".to_owned()) },
    ))
}

impl DynamicTools for Growing {
    fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.lock().unwrap().clone()
    }
}

fn agent(mode: ToolMode, replies: Vec<ScriptedReply>) -> (Agent, ScriptedUpstream) {
    let source = Arc::new(Growing {
        version: AtomicU64::new(1),
        tools: Mutex::new(vec![named("first")]),
    });
    let grower = Arc::clone(&source);
    let mut tb = Toolbox::new(ToolboxConfig::default())
        .with(FnTool::new(
            "grow",
            "Adds a tool.",
            json!({"type": "object", "properties": {"bump": {"type": "boolean"}}}),
            move |args, _| {
                let grower = Arc::clone(&grower);
                async move {
                    if args["bump"].as_bool().unwrap_or(false) {
                        grower.tools.lock().unwrap().push(named("second"));
                        grower.version.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok("grown".to_owned())
                }
            },
        ))
        .unwrap();
    tb.add_dynamic(source);
    let upstream = ScriptedUpstream::new(replies);
    let model = Model::new("m", vec![Arm::new(Arc::new(upstream.clone()), mode)]);
    let agent = Agent::new(model, tb, SkillSet::default(), AgentConfig::default()).unwrap();
    (agent, upstream)
}

fn call(mode: ToolMode, name: &str, args: serde_json::Value) -> ScriptedReply {
    match mode {
        ToolMode::Native => ScriptedReply::calls([(name, args)]),
        _ => ScriptedReply::text(format!(
            "<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>"
        )),
    }
}

/// What the model is shown as tools: the array in native mode, the system prompt in prompt mode.
fn tools_seen(mode: ToolMode, r: &ChatRequest) -> String {
    match mode {
        ToolMode::Native => serde_json::to_string(&r.tools).unwrap(),
        _ => serde_json::to_string(&r.messages[0]).unwrap(),
    }
}

#[tokio::test]
async fn a_changed_version_changes_the_tool_array_and_an_unchanged_one_keeps_it_byte_identical() {
    for mode in [ToolMode::Native, ToolMode::Prompt] {
        let (agent, upstream) = agent(
            mode,
            vec![
                call(mode, "grow", json!({"bump": false})),
                call(mode, "grow", json!({"bump": true})),
                call(mode, "second", json!({})),
                ScriptedReply::text("ok"),
            ],
        );
        assert_eq!(
            agent
                .tool_specs()
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["grow", "first"]
        );
        let state = agent
            .run(vec![Message::user("go")], ToolContext::default())
            .finish()
            .await;
        assert_eq!(state.answer, "ok", "{mode}");
        let reqs = upstream.requests();
        assert_eq!(reqs.len(), 4);
        assert_eq!(
            tools_seen(mode, &reqs[0]),
            tools_seen(mode, &reqs[1]),
            "{mode}: no change, same bytes"
        );
        assert_ne!(
            tools_seen(mode, &reqs[1]),
            tools_seen(mode, &reqs[2]),
            "{mode}"
        );
        assert!(tools_seen(mode, &reqs[2]).contains("second"), "{mode}");
        assert_eq!(
            tools_seen(mode, &reqs[2]),
            tools_seen(mode, &reqs[3]),
            "{mode}"
        );
        // The new tool was callable in the round after the change.
        let ran = state.messages.iter().any(|m| {
            matches!(m, Message::Tool { .. }) && serde_json::to_string(m).unwrap().contains("done")
        });
        assert!(ran, "{mode}");
    }
}
