//! Loaded skills belong to the conversation (issue 13 item 10): a skill loaded in one turn of a
//! chat gets the loaded-twice note in the next, and so does a load after the skill tool was
//! rebuilt mid-run (a dynamic tool source's list changed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolbridge_agent::skills::{LoadedSkills, Skill, SkillSet, DEFAULT_SKILL_TOOL};
use toolbridge_agent::{
    Agent, AgentConfig, DynamicTools, FnTool, Outcome, RunState, Tool, ToolContext, Toolbox,
    ToolboxConfig,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{Message, ToolCall};
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

const MODES: [ToolMode; 2] = [ToolMode::Native, ToolMode::Prompt];
const BODY: &str = "THE COMMIT STYLE BODY";

fn call(mode: ToolMode, name: &str, args: Value) -> ScriptedReply {
    match mode {
        ToolMode::Native => ScriptedReply::calls([(name, args)]),
        _ => ScriptedReply::text(format!(
            "<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>"
        )),
    }
}

fn skills() -> SkillSet {
    SkillSet::new(vec![
        Skill::text("commit-style", "How commits are written.", BODY),
        Skill::text("other", "Another skill.", "OTHER BODY"),
    ])
}

/// The tool results of a run, in order.
/// An agent with no tools but the skill tool over [`skills`], on `upstream`.
fn skills_agent(upstream: &ScriptedUpstream, mode: ToolMode) -> Agent {
    let model = Model::new("m", vec![Arm::new(Arc::new(upstream.clone()), mode)]);
    Agent::new(
        model,
        Toolbox::new(ToolboxConfig::default()),
        skills(),
        AgentConfig::default(),
    )
    .unwrap()
}

fn results(state: &RunState) -> Vec<String> {
    state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.text().into_owned()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_skill_loaded_in_one_turn_gets_the_note_in_the_next() {
    for mode in MODES {
        let upstream = ScriptedUpstream::new(vec![
            call(mode, "use_skill", json!({"name": "commit-style"})),
            ScriptedReply::text("Loaded."),
            call(mode, "use_skill", json!({"name": "commit-style"})),
            ScriptedReply::text("Still loaded."),
        ]);
        let agent = skills_agent(&upstream, mode);
        // Turn one, then turn two on the messages turn one left (as `chat` does).
        let first = agent
            .run(vec![Message::user("Commit this.")], ToolContext::default())
            .finish()
            .await;
        assert_eq!(first.outcome, Some(Outcome::Answered), "{mode}");
        assert_eq!(results(&first), vec![BODY.to_owned()], "{mode}");
        let mut conversation = first.messages.clone();
        conversation.push(Message::user("And this one."));
        let second = agent
            .run(conversation, ToolContext::default())
            .finish()
            .await;
        assert_eq!(second.outcome, Some(Outcome::Answered), "{mode}");
        assert_eq!(
            results(&second),
            vec![BODY.to_owned(), texts::skill_already_loaded("commit-style")],
            "{mode}: the second turn gets the note"
        );
        // The body went to the model once in the whole conversation.
        let last = serde_json::to_string(&upstream.requests()[3].messages).unwrap();
        assert_eq!(last.matches(BODY).count(), 1, "{mode}");
    }
}

#[tokio::test]
async fn a_new_conversation_loads_the_skill_again() {
    let upstream = ScriptedUpstream::new(vec![
        call(
            ToolMode::Native,
            "use_skill",
            json!({"name": "commit-style"}),
        ),
        ScriptedReply::text("Loaded."),
        call(
            ToolMode::Native,
            "use_skill",
            json!({"name": "commit-style"}),
        ),
        ScriptedReply::text("Loaded again."),
    ]);
    let agent = skills_agent(&upstream, ToolMode::Native);
    for _ in 0..2 {
        let state = agent
            .run(vec![Message::user("Commit this.")], ToolContext::default())
            .finish()
            .await;
        assert_eq!(results(&state), vec![BODY.to_owned()]);
    }
}

/// A source whose list changes (its version moves) whenever `change` runs.
struct Changing {
    version: AtomicU64,
    tools: Mutex<Vec<Arc<dyn Tool>>>,
}

impl DynamicTools for Changing {
    fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn rebuilding_the_skill_tool_mid_run_keeps_the_loaded_set() {
    for mode in MODES {
        let source = Arc::new(Changing {
            version: AtomicU64::new(1),
            tools: Mutex::new(Vec::new()),
        });
        let changer = Arc::clone(&source);
        let tb = {
            let mut tb = Toolbox::new(ToolboxConfig::default())
                .with(FnTool::new(
                    "change",
                    "Changes the dynamic tool list.",
                    json!({"type": "object", "properties": {}}),
                    move |_, _| {
                        let changer = Arc::clone(&changer);
                        async move {
                            let tool: Arc<dyn Tool> = Arc::new(FnTool::new(
                                "added",
                                "Added later.",
                                json!({"type": "object", "properties": {}}),
                                |_, _| async { Ok("added".to_owned()) },
                            ));
                            changer.tools.lock().unwrap().push(tool);
                            changer.version.fetch_add(1, Ordering::SeqCst);
                            Ok("changed".to_owned())
                        }
                    },
                ))
                .unwrap();
            tb.add_dynamic(Arc::clone(&source) as Arc<dyn DynamicTools>);
            tb
        };
        let upstream = ScriptedUpstream::new(vec![
            call(mode, "use_skill", json!({"name": "commit-style"})),
            call(mode, "change", json!({})),
            // Not a duplicate of the first call (other arguments), the same skill.
            call(mode, "use_skill", json!({"name": " commit-style "})),
            ScriptedReply::text("Done."),
        ]);
        let model = Model::new("m", vec![Arm::new(Arc::new(upstream.clone()), mode)]);
        let agent = Agent::new(model, tb, skills(), AgentConfig::default()).unwrap();
        let state = agent
            .run(vec![Message::user("Go.")], ToolContext::default())
            .finish()
            .await;
        assert_eq!(state.outcome, Some(Outcome::Answered), "{mode}");
        let requests = upstream.requests();
        let offered = |i: usize| serde_json::to_string(&requests[i]).unwrap();
        assert!(!offered(1).contains("added"), "{mode}");
        assert!(
            offered(2).contains("added"),
            "{mode}: the tools were rebuilt"
        );
        assert_eq!(
            results(&state),
            vec![
                BODY.to_owned(),
                "changed".to_owned(),
                texts::skill_already_loaded("commit-style")
            ],
            "{mode}"
        );
    }
}

fn skill_call(id: &str, arguments: &str) -> Message {
    Message::assistant_calls(
        None,
        vec![ToolCall {
            id: id.into(),
            name: DEFAULT_SKILL_TOOL.into(),
            arguments: arguments.into(),
        }],
    )
}

#[test]
fn only_bodies_the_conversation_holds_count_as_loaded() {
    let set = skills();
    let messages = vec![
        Message::user("hi"),
        // A failed load, a skipped duplicate and an unknown skill do not count.
        skill_call("c1", r#"{"name": "other"}"#),
        Message::tool_result("c1", texts::skill_load_failed("other"), true),
        skill_call("c1", r#"{"name": "other"}"#),
        Message::tool_result("c1", texts::TOOL_OUTPUT_DUPLICATE_SKIPPED, false),
        skill_call("c2", r#"{"name": "nope"}"#),
        Message::tool_result("c2", "whatever", false),
        // Another tool's call with a `name` argument does not count either.
        Message::assistant_calls(
            None,
            vec![ToolCall {
                id: "c3".into(),
                name: "echo".into(),
                arguments: r#"{"name": "other"}"#.into(),
            }],
        ),
        Message::tool_result("c3", "echo", false),
        // A body delivered counts (the id was used before: the latest call wins).
        skill_call("c1", r#"{"name": " commit-style"}"#),
        Message::tool_result("c1", BODY, false),
    ];
    let loaded = LoadedSkills::from_conversation(&messages, DEFAULT_SKILL_TOOL, &set);
    assert_eq!(loaded.names(), vec!["commit-style".to_owned()]);
    assert!(LoadedSkills::from_conversation(&messages, "Skill", &set)
        .names()
        .is_empty());
}
