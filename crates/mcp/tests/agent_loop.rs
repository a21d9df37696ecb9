//! The agent loop with the scripted provider calling an MCP tool (the Python SDK server), in
//! native mode and in prompt mode.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use serde_json::json;
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Agent, AgentConfig, DynamicTools, Outcome, ToolContext, Toolbox, ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::Message;
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

use common::{py_server, start};

fn call(mode: ToolMode, name: &str, args: serde_json::Value) -> ScriptedReply {
    match mode {
        ToolMode::Native => ScriptedReply::calls([(name, args)]),
        _ => ScriptedReply::text(format!(
            "Let me add.\n<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>"
        )),
    }
}

#[tokio::test]
async fn the_agent_calls_an_mcp_tool_in_native_and_prompt_mode() {
    let manager = start(&[py_server("py")]).await;
    for mode in [ToolMode::Native, ToolMode::Prompt] {
        let upstream = ScriptedUpstream::new(vec![
            call(mode, "mcp__py__add", json!({"a": 19, "b": 23})),
            call(mode, "mcp__py__fail", json!({})),
            ScriptedReply::text("The sum is 42."),
        ]);
        let model = Model::new("m", vec![Arm::new(Arc::new(upstream.clone()), mode)]);
        let mut toolbox = Toolbox::new(ToolboxConfig::default());
        toolbox.add_dynamic(Arc::clone(&manager) as Arc<dyn DynamicTools>);
        let agent =
            Agent::new(model, toolbox, SkillSet::default(), AgentConfig::default()).unwrap();
        let state = agent
            .run(
                vec![Message::user("What is 19 + 23?")],
                ToolContext::default(),
            )
            .finish()
            .await;
        assert_eq!(state.outcome, Some(Outcome::Answered), "{mode}");
        assert_eq!(state.answer, "The sum is 42.");
        let reqs = upstream.requests();
        assert_eq!(reqs.len(), 3);
        match mode {
            ToolMode::Native => {
                assert!(reqs[0].tools.iter().any(|t| t.name == "mcp__py__add"));
            }
            _ => {
                let system = serde_json::to_string(&reqs[0].messages[0]).unwrap();
                assert!(system.contains("### mcp__py__add"), "{system}");
            }
        }
        // The tool array is byte-identical round to round while the list does not change.
        let shown = |i: usize| match mode {
            ToolMode::Native => serde_json::to_string(&reqs[i].tools).unwrap(),
            _ => serde_json::to_string(&reqs[i].messages[0]).unwrap(),
        };
        assert_eq!(shown(0), shown(1));
        assert_eq!(shown(1), shown(2));
        let last = serde_json::to_string(&reqs[2].messages).unwrap();
        assert!(last.contains("42"), "{mode}: the result reached the model");
        assert!(
            last.contains("the fail tool failed on purpose"),
            "{mode}: the tool error reached the model"
        );
    }
    manager.shutdown().await;
}
