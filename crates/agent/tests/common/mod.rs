//! What the agent's integration tests share: the echo tool most of them call, a skill that fails
//! to load once, running an agent to the end, and reading the calls' statuses and the tool
//! messages back out of a run.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use toolbridge_agent::skills::Skill;
use toolbridge_agent::{Agent, CallStatus, FnTool, RunEvent, RunState, ToolContext};
use toolbridge_protocol::types::Message;

/// `echo`: answers `echo: <text>`.
pub fn echo_tool() -> FnTool {
    FnTool::new(
        "echo",
        "Echo the text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args, _| async move {
            Ok(format!(
                "echo: {}",
                args["text"].as_str().unwrap_or_default()
            ))
        },
    )
}

/// `flaky`: a skill whose first load fails ("database down") and whose later loads give
/// `FLAKY BODY`; the counter counts the loads tried.
pub fn flaky_skill() -> (Skill, Arc<AtomicUsize>) {
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&attempts);
    let flaky = Skill::loader("flaky", "Loads on the second try.", move || {
        let a = Arc::clone(&a);
        async move {
            if a.fetch_add(1, Ordering::SeqCst) == 0 {
                Err("database down".to_owned())
            } else {
                Ok("FLAKY BODY".to_owned())
            }
        }
    });
    (flaky, attempts)
}

/// Runs `agent` on one user message to the end: its final state and every event it sent.
pub async fn run_to_end(agent: &Agent, prompt: &str) -> (RunState, Vec<RunEvent>) {
    let mut run = agent.run(vec![Message::user(prompt)], ToolContext::default());
    let mut events = Vec::new();
    while let Some(e) = run.next().await {
        events.push(e);
    }
    (run.state(), events)
}

/// How each call finished, in the order they finished.
pub fn statuses(events: &[RunEvent]) -> Vec<CallStatus> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::CallFinished { status, .. } => Some(*status),
            _ => None,
        })
        .collect()
}

/// The tool messages of a run's conversation: call id, content, whether it reports an error.
pub fn tool_messages(state: &RunState) -> Vec<(String, String, bool)> {
    state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => Some((tool_call_id.clone(), content.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}
