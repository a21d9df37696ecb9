//! Issue 13, items 8, 11 and 13 at the agent level: the malformed-call retry names the arm's tag,
//! a call that failed transiently runs again when repeated (a lasting failure is still skipped),
//! and the user is shown only the visible text — never call markup — while the transcript keeps
//! the raw text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Agent, AgentConfig, CallStatus, FinalizationReason, FnTool, Outcome, RunEvent, RunState,
    ToolError, Toolbox, ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts::{self, CallTag};
use toolbridge_protocol::types::{ChatRequest, Message};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

use common::{echo_tool, flaky_skill, run_to_end, statuses};

/// A tool whose first call fails with `first_error`, and later ones succeed.
fn flaky_tool(first_error: ToolError) -> (FnTool, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let tool = FnTool::new(
        "flaky",
        "Sometimes fails.",
        json!({"type": "object"}),
        move |_, _| {
            let r = Arc::clone(&r);
            let first_error = first_error.clone();
            async move {
                if r.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(first_error)
                } else {
                    Ok("flaky: fine".to_owned())
                }
            }
        },
    );
    (tool, runs)
}

struct Setup {
    agent: Agent,
    upstream: ScriptedUpstream,
}

fn setup(
    mode: ToolMode,
    tag: CallTag,
    replies: Vec<ScriptedReply>,
    tools: Vec<FnTool>,
    skills: SkillSet,
) -> Setup {
    let upstream = ScriptedUpstream::new(replies).with_chunk_size(5);
    let arm = Arm {
        tag,
        ..Arm::new(Arc::new(upstream.clone()), mode)
    };
    let mut tb = Toolbox::new(ToolboxConfig::default())
        .with(echo_tool())
        .unwrap();
    for t in tools {
        tb.add(Arc::new(t)).unwrap();
    }
    let agent = Agent::new(
        Model::new("m", vec![arm]),
        tb,
        skills,
        AgentConfig::default(),
    )
    .unwrap();
    Setup { agent, upstream }
}

async fn run(s: &Setup) -> (RunState, Vec<RunEvent>) {
    run_to_end(&s.agent, "go").await
}

fn last_user_text(req: &ChatRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content, .. } => Some(content.text().into_owned()),
            _ => None,
        })
        .unwrap()
}

/// What the user was shown: the text events, concatenated.
fn shown(events: &[RunEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn native_call(name: &str, args: serde_json::Value) -> ScriptedReply {
    ScriptedReply::calls([(name, args)])
}

#[tokio::test]
async fn the_retry_message_names_the_tag_the_arm_was_taught() {
    let broken =
        "Checking.\n<tool_use>{\"name\": \"echo\", \"arguments\": {\"text\": \"a\",}}</tool_use>";
    let good = "<tool_use>{\"name\": \"echo\", \"arguments\": {\"text\": \"a\"}}</tool_use>";
    let s = setup(
        ToolMode::Prompt,
        CallTag::ToolUse,
        vec![
            ScriptedReply::text(broken),
            ScriptedReply::text(good),
            ScriptedReply::text("done"),
        ],
        vec![],
        SkillSet::default(),
    );
    let (state, events) = run(&s).await;
    assert_eq!(state.outcome, Some(Outcome::Answered));
    let Some(RunEvent::Retry { reason, .. }) =
        events.iter().find(|e| matches!(e, RunEvent::Retry { .. }))
    else {
        panic!("no retry: {events:?}");
    };
    let retry = last_user_text(&s.upstream.requests()[1]);
    assert_eq!(retry, texts::retry_message(reason, CallTag::ToolUse));
    assert!(
        retry.contains("Your <tool_use> JSON failed to parse"),
        "{retry}"
    );
    assert!(!retry.contains("tool_call>"), "{retry}");
    assert_eq!(statuses(&events), vec![CallStatus::Ok]);
}

#[tokio::test]
async fn a_transient_failure_repeated_runs_again_and_the_run_answers() {
    for error in [
        ToolError::internal("server restarted"),
        ToolError::transient("busy, try again"),
    ] {
        let (tool, runs) = flaky_tool(error.clone());
        let s = setup(
            ToolMode::Native,
            CallTag::default(),
            vec![
                native_call("flaky", json!({})),
                native_call("flaky", json!({})),
                ScriptedReply::text("it worked"),
            ],
            vec![tool],
            SkillSet::default(),
        );
        let (state, events) = run(&s).await;
        assert_eq!(runs.load(Ordering::SeqCst), 2, "{error:?}: the repeat ran");
        let first = if matches!(error, ToolError::Internal(_)) {
            CallStatus::Failed
        } else {
            CallStatus::ToolError
        };
        assert_eq!(statuses(&events), vec![first, CallStatus::Ok]);
        assert_eq!(state.outcome, Some(Outcome::Answered), "{error:?}");
        assert_eq!(state.answer, "it worked");
    }
}

/// Issue 34, item 2: a tool with no capacity (every interpreter the server allows is busy) stops
/// the run after its round — the call has its result, the model is not asked again — with the
/// outcome a server turns into `incomplete` / 429.
#[tokio::test]
async fn a_tool_with_no_capacity_stops_the_run_as_overloaded() {
    let (tool, runs) = flaky_tool(ToolError::overloaded("every slot is busy"));
    let s = setup(
        ToolMode::Native,
        CallTag::default(),
        vec![
            native_call("flaky", json!({})),
            ScriptedReply::text("never asked"),
        ],
        vec![tool],
        SkillSet::default(),
    );
    let (state, events) = run(&s).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(statuses(&events), vec![CallStatus::Overloaded]);
    assert_eq!(state.outcome, Some(Outcome::Overloaded));
    assert_eq!(s.upstream.requests().len(), 1, "the model was asked again");
    assert!(state.messages.iter().any(
        |m| matches!(m, Message::Tool { content, .. } if content.text().contains("every slot is busy"))
    ));
}

#[tokio::test]
async fn a_skill_that_failed_to_load_can_be_loaded_by_the_same_call() {
    let (flaky, _) = flaky_skill();
    let s = setup(
        ToolMode::Native,
        CallTag::default(),
        vec![
            native_call("use_skill", json!({"name": "flaky"})),
            native_call("use_skill", json!({"name": "flaky"})),
            ScriptedReply::text("ok"),
        ],
        vec![],
        SkillSet::new(vec![flaky]),
    );
    let (state, events) = run(&s).await;
    assert_eq!(
        statuses(&events),
        vec![CallStatus::ToolError, CallStatus::Ok]
    );
    assert_eq!(state.outcome, Some(Outcome::Answered));
    assert!(state
        .messages
        .iter()
        .any(|m| matches!(m, Message::Tool { content, .. } if content.text() == "FLAKY BODY")));
}

#[tokio::test]
async fn a_lasting_failure_repeated_is_still_skipped() {
    let s = setup(
        ToolMode::Native,
        CallTag::default(),
        vec![
            native_call("echo", json!({"txt": "a"})),
            native_call("echo", json!({"txt": "a"})),
            ScriptedReply::text("sorry"),
        ],
        vec![],
        SkillSet::default(),
    );
    let (state, events) = run(&s).await;
    assert_eq!(
        statuses(&events),
        vec![CallStatus::InvalidArguments, CallStatus::Duplicate]
    );
    assert!(events.contains(&RunEvent::Finalization {
        reason: FinalizationReason::NoProgress
    }));
    assert!(state.messages.iter().any(|m| matches!(m, Message::Tool { content, .. } if content.text() == texts::TOOL_OUTPUT_DUPLICATE_SKIPPED)));
}

#[tokio::test]
async fn after_the_retries_only_the_visible_prefix_is_shown_and_answered() {
    let broken = "final <tool_call>{bad2";
    let s = setup(
        ToolMode::Prompt,
        CallTag::default(),
        vec![
            ScriptedReply::text(broken),
            ScriptedReply::text(broken),
            ScriptedReply::text(broken),
        ],
        vec![],
        SkillSet::default(),
    );
    let (state, events) = run(&s).await;
    assert_eq!(state.outcome, Some(Outcome::MalformedGaveUp));
    assert_eq!(state.answer, "final");
    assert!(matches!(events.last(), Some(RunEvent::Outcome { answer, .. }) if answer == "final"));
    let shown = shown(&events);
    assert!(shown.contains("final"), "{shown:?}");
    assert!(
        !shown.contains("tool_call") && !shown.contains("bad2"),
        "{shown:?}"
    );
    // The raw attempts stay in the transcript.
    let raw = state
        .transcript
        .iter()
        .filter(|m| {
            matches!(m, Message::Assistant { .. })
                && serde_json::to_string(m).unwrap().contains("{bad2")
        })
        .count();
    assert_eq!(raw, 3, "{:?}", state.transcript);
}

#[tokio::test]
async fn a_finalization_round_that_still_calls_shows_only_its_visible_text() {
    for mode in [ToolMode::Native, ToolMode::Prompt] {
        let call = match mode {
            ToolMode::Native => native_call("echo", json!({"text": "a"})),
            _ => ScriptedReply::text(
                "<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"a\"}}</tool_call>",
            ),
        };
        let s = setup(
            mode,
            CallTag::default(),
            vec![
                call.clone(),
                call,
                ScriptedReply::text("Here it is.\n<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"b\"}}</tool_call>"),
            ],
            vec![],
            SkillSet::default(),
        );
        let (state, events) = run(&s).await;
        assert_eq!(state.outcome, Some(Outcome::ToolNoProgress), "{mode}");
        assert_eq!(state.answer, "Here it is.");
        let shown = shown(&events);
        assert!(shown.contains("Here it is."), "{mode}: {shown:?}");
        assert!(!shown.contains("tool_call"), "{mode}: {shown:?}");
        let last = state.transcript.last().unwrap();
        assert!(
            serde_json::to_string(last).unwrap().contains("<tool_call>"),
            "the raw text stays in the transcript"
        );
    }
}
