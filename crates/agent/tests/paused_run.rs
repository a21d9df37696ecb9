//! A run paused while its calls are out serializes, and finishes after a restore — in a new
//! agent, with nothing of the first one left — exactly as an uninterrupted run does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde_json::{json, Value};
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Action, Agent, AgentConfig, Outcome, PauseWhen, RunEvent, RunMachine, ToolContext, Toolbox,
    ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts::CallTag;
use toolbridge_protocol::types::{Message, ToolChoice};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model, ModelEvent};

use common::echo_tool;

fn call(mode: ToolMode, name: &str, args: Value) -> ScriptedReply {
    match mode {
        ToolMode::Native => ScriptedReply::calls([(name, args)]),
        _ => ScriptedReply::text(format!(
            "<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>"
        )),
    }
}

fn replies(mode: ToolMode) -> Vec<ScriptedReply> {
    vec![
        call(mode, "echo", json!({"text": "one"})),
        call(mode, "echo", json!({"text": "two"})),
        ScriptedReply::text("Both echoed."),
    ]
}

fn agent(mode: ToolMode, replies: Vec<ScriptedReply>) -> Agent {
    let tools = Toolbox::new(ToolboxConfig::default())
        .with(echo_tool())
        .unwrap();
    let upstream = ScriptedUpstream::new(replies).with_chunk_size(4);
    let model = Model::new("m", vec![Arm::new(Arc::new(upstream), mode)]);
    Agent::new(model, tools, SkillSet::default(), AgentConfig::default()).unwrap()
}

/// Call ids are random in prompt mode (made up when a call is parsed): number them in order of
/// first appearance so two runs compare. Only quoted ids (`"call_…"`) are ids; a field name such
/// as `tool_call_id` is not, and an id is renamed once however it is spelled.
fn same_ids(text: String) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(pos) = rest.find("\"call_") {
        let (head, tail) = rest.split_at(pos + 1);
        out.push_str(head);
        let end = tail.find('"').unwrap_or(tail.len());
        let id = &tail[..end];
        let n = match names.iter().position(|known| known == id) {
            Some(i) => i + 1,
            None => {
                names.push(id.to_owned());
                names.len()
            }
        };
        out.push_str(&format!("id{n}"));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn conversation() -> Vec<Message> {
    vec![Message::user("Echo one, then two.")]
}

async fn events(
    run: toolbridge_agent::Run,
) -> (
    Vec<RunEvent>,
    toolbridge_agent::RunState,
    Option<RunMachine>,
) {
    let mut run = run;
    let mut seen = Vec::new();
    while let Some(event) = run.next().await {
        seen.push(event);
    }
    (seen, run.state(), run.paused())
}

#[tokio::test]
async fn a_paused_run_resumes_from_its_serialized_form_with_the_same_transcript() {
    for mode in [ToolMode::Native, ToolMode::Prompt] {
        let uninterrupted = agent(mode, replies(mode));
        let (all_events, expected, _) =
            events(uninterrupted.run(conversation(), ToolContext::default())).await;
        assert_eq!(expected.outcome, Some(Outcome::Answered), "{mode:?}");
        assert_eq!(expected.tool_calls, 2);

        // Pause before the second call runs.
        let first = agent(mode, replies(mode));
        let machine = first.start(conversation()).await;
        let pause: PauseWhen = Arc::new(|c| c.arguments.contains("two"));
        let (before, _, paused) =
            events(first.resume(machine, ToolContext::default(), Some(pause))).await;
        let paused = paused.expect("the run paused");
        assert_eq!(paused.pending_calls().len(), 1);
        assert!(paused.pending_calls()[0].arguments.contains("two"));
        let stored = serde_json::to_string(&paused).unwrap();
        drop(paused);
        drop(first);

        // A new agent, whose model has only the reply still to come.
        let restored: RunMachine = serde_json::from_str(&stored).unwrap();
        let second = agent(mode, replies(mode).split_off(2));
        let (after, finished, again) =
            events(second.resume(restored, ToolContext::default(), None)).await;
        assert!(again.is_none());
        let ids = |m: &[Message]| same_ids(format!("{m:?}"));
        assert_eq!(
            ids(&finished.transcript),
            ids(&expected.transcript),
            "{mode:?}"
        );
        assert_eq!(ids(&finished.messages), ids(&expected.messages));
        assert_eq!(finished.outcome, expected.outcome);
        assert_eq!(finished.answer, "Both echoed.");
        assert_eq!(finished.rounds, expected.rounds);
        assert_eq!(finished.tool_calls, expected.tool_calls);
        // The two halves report what the whole run reported (durations aside).
        let strip = |e: &RunEvent| match e {
            RunEvent::CallFinished {
                id,
                name,
                status,
                preview,
                output_chars,
                ..
            } => {
                format!("finished {id:?} {name} {status:?} {preview} {output_chars}")
            }
            other => format!("{other:?}"),
        };
        let halves = same_ids(
            before
                .iter()
                .chain(&after)
                .map(strip)
                .collect::<Vec<_>>()
                .join("\n"),
        );
        let whole = same_ids(all_events.iter().map(strip).collect::<Vec<_>>().join("\n"));
        assert_eq!(halves, whole, "{mode:?}");
    }
}

/// Driving the machine by hand: results supplied from outside (as a client would send its
/// function outputs) after a serialize round trip; a forced tool choice applies to the first
/// request only.
#[test]
fn the_machine_takes_results_from_outside_after_a_restore() {
    let limits = toolbridge_agent::Limits {
        max_rounds: 12,
        max_tool_calls: 50,
        max_duration: std::time::Duration::from_secs(60),
        parallel_calls: 4,
        max_malformed_retries: 2,
    };
    let now = Instant::now();
    let mut m = RunMachine::new(limits, "m", conversation(), now);
    // A front door's forced choice is for the first request only.
    m.set_next_tool_choice(Some(ToolChoice::Named("lookup".into())));
    let Some(Action::CallModel(request)) = m.poll_action() else {
        panic!("asks the model first")
    };
    assert_eq!(request.messages, conversation());
    assert_eq!(
        request.tool_choice,
        Some(ToolChoice::Named("lookup".into()))
    );
    assert!(m.poll_action().is_none(), "one action at a time");
    for event in [
        ModelEvent::CallStart {
            index: 0,
            id: "call_1".into(),
            name: "lookup".into(),
        },
        ModelEvent::CallArgs {
            index: 0,
            fragment: "{\"q\": \"x\"}".into(),
        },
        ModelEvent::CallEnd { index: 0 },
    ] {
        m.handle_model_event(event);
    }
    m.handle_model_end(ToolMode::Native, CallTag::default(), now);
    let mut m: RunMachine = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(m.pending_calls().len(), 1);
    m.handle_tool_results(
        vec![toolbridge_agent::toolbox::CallResult::note(
            toolbridge_agent::CallStatus::Ok,
            "x is 42",
        )],
        now,
    );
    let Some(Action::CallModel(request)) = m.poll_action() else {
        panic!("asks the model again")
    };
    assert_eq!(request.tool_choice, None, "later rounds choose freely");
    assert!(matches!(
        request.messages.last(),
        Some(Message::Tool { .. })
    ));
    m.handle_model_event(ModelEvent::Text {
        text: "It is 42.".into(),
    });
    m.handle_model_end(ToolMode::Native, CallTag::default(), now);
    let mut outcome = None;
    while let Some(e) = m.poll_event() {
        if let RunEvent::Outcome { outcome: o, .. } = e {
            outcome = Some(o);
        }
    }
    assert_eq!(outcome, Some(Outcome::Answered));
    assert_eq!(m.poll_action(), Some(Action::Done));
    assert_eq!(m.poll_action(), None);
    assert_eq!(m.state().answer, "It is 42.");
}
