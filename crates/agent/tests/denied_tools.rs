//! A tool the approval policy denies outright is not offered at all (issue 13 item 15): not in
//! the tool array of a native request, not in the prompt-mode preamble, and a call to it is
//! answered like a call to an unknown tool.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolbridge_agent::approval::{AllowAll, ApprovalPolicy, Approvals};
use toolbridge_agent::skills::{Skill, SkillSet};
use toolbridge_agent::{
    Agent, AgentConfig, CallStatus, FnTool, RunEvent, ToolContext, Toolbox, ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{ChatRequest, Message};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

const MODES: [ToolMode; 2] = [ToolMode::Native, ToolMode::Prompt];

fn call(mode: ToolMode, name: &str, args: Value) -> ScriptedReply {
    match mode {
        ToolMode::Native => ScriptedReply::calls([(name, args)]),
        _ => ScriptedReply::text(format!(
            "<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>"
        )),
    }
}

fn tool(name: &str, runs: &Arc<AtomicUsize>) -> FnTool {
    let runs = Arc::clone(runs);
    FnTool::new(
        name,
        format!("The {name} tool: it does {name} things."),
        json!({"type": "object", "properties": {}}),
        move |_, _| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok("ran".to_owned())
            }
        },
    )
}

/// Where a request shows its tools: the tool array (native) or the first system message (prompt).
fn shown(mode: ToolMode, request: &ChatRequest) -> String {
    match mode {
        ToolMode::Native => serde_json::to_string(&request.tools).unwrap(),
        _ => serde_json::to_string(&request.messages[0]).unwrap(),
    }
}

#[tokio::test]
async fn a_denied_tool_is_not_offered_and_not_run() {
    for mode in MODES {
        let runs = Arc::new(AtomicUsize::new(0));
        let toolbox = Toolbox::new(ToolboxConfig::default())
            .with(tool("keep", &runs))
            .unwrap()
            .with(tool("forbidden", &runs))
            .unwrap()
            .with(tool("gated", &runs).requiring_approval())
            .unwrap();
        let mut approvals = Approvals::default();
        approvals
            .per_tool
            .insert("forbidden".into(), ApprovalPolicy::Deny);
        let upstream = ScriptedUpstream::new(vec![
            call(mode, "forbidden", json!({})),
            ScriptedReply::text("Done."),
        ]);
        let model = Model::new("m", vec![Arm::new(Arc::new(upstream.clone()), mode)]);
        let agent = Agent::new(
            model,
            toolbox,
            SkillSet::default(),
            AgentConfig {
                approvals,
                ..AgentConfig::default()
            },
        )
        .unwrap()
        .with_approver(Arc::new(AllowAll));
        let names: Vec<String> = agent.tool_specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, vec!["keep", "gated"], "{mode}");
        let mut run = agent.run(vec![Message::user("Go.")], ToolContext::default());
        let mut statuses = Vec::new();
        use futures::StreamExt;
        while let Some(event) = run.next().await {
            if let RunEvent::CallFinished { status, .. } = event {
                statuses.push(status);
            }
        }
        let state = run.state();
        let requests = upstream.requests();
        for request in &requests {
            let tools = shown(mode, request);
            assert!(tools.contains("keep"), "{mode}: {tools}");
            assert!(tools.contains("gated"), "{mode}");
            assert!(!tools.contains("forbidden"), "{mode}: {tools}");
        }
        // Called anyway, it never runs. Native mode answers it as an unknown tool whose list of
        // names leaves it out (prompt mode's parser already refuses names it was not given).
        assert_eq!(runs.load(Ordering::SeqCst), 0, "{mode}");
        if mode == ToolMode::Native {
            assert_eq!(statuses, vec![CallStatus::UnknownTool]);
            let expected = texts::unknown_tool("forbidden", &["keep", "gated"]);
            let answered = state.messages.iter().any(|m| {
                matches!(m, Message::Tool { content, .. } if content.text() == expected.as_str())
            });
            assert!(answered, "{:?}", state.messages);
        } else {
            assert!(statuses.is_empty(), "{statuses:?}");
        }
    }
}

#[tokio::test]
async fn default_deny_hides_tools_that_require_approval_and_the_denied_skill_tool() {
    for mode in MODES {
        let runs = Arc::new(AtomicUsize::new(0));
        let toolbox = Toolbox::new(ToolboxConfig::default())
            .with(tool("keep", &runs))
            .unwrap()
            .with(tool("gated", &runs).requiring_approval())
            .unwrap();
        let mut approvals = Approvals {
            default: ApprovalPolicy::Deny,
            ..Approvals::default()
        };
        approvals
            .per_tool
            .insert("use_skill".into(), ApprovalPolicy::Deny);
        let upstream = ScriptedUpstream::new(vec![ScriptedReply::text("Done.")]);
        let model = Model::new("m", vec![Arm::new(Arc::new(upstream.clone()), mode)]);
        let agent = Agent::new(
            model,
            toolbox,
            SkillSet::new(vec![Skill::text("style", "The house style.", "BODY")]),
            AgentConfig {
                approvals,
                ..AgentConfig::default()
            },
        )
        .unwrap();
        agent
            .run(vec![Message::user("Go.")], ToolContext::default())
            .finish()
            .await;
        let request = &upstream.requests()[0];
        let tools = shown(mode, request);
        assert!(tools.contains("keep"), "{mode}");
        assert!(!tools.contains("gated"), "{mode}: {tools}");
        assert!(!tools.contains("use_skill"), "{mode}: {tools}");
        // No listing of skills the model could not load.
        let all = serde_json::to_string(&request.messages).unwrap();
        assert!(!all.contains("The house style."), "{mode}: {all}");
    }
}
