//! MCP tool annotations and approval (issue 13 item 7), against the Python SDK server: a tool
//! annotated `readOnlyHint: true` runs without asking; an unannotated or destructive one asks the
//! approver (`[agent.approvals]`); a server's `approval = "never" | "ask"` overrides the
//! annotations.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use toolbridge_agent::approval::{Approvals, Approver};
use toolbridge_agent::{CallStatus, DynamicTools, Tool, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_mcp::{McpApproval, McpManager};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolCall;

use common::{py_server, start};

/// Records the calls it is asked about and answers `answer`.
struct Recording {
    asked: Mutex<Vec<String>>,
    answer: bool,
}

impl Recording {
    fn new(answer: bool) -> Self {
        Recording {
            asked: Mutex::new(Vec::new()),
            answer,
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for Recording {
    fn approve<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, bool> {
        self.asked.lock().unwrap().push(call.name.clone());
        let answer = self.answer;
        Box::pin(async move { answer })
    }
}

async fn run(
    manager: &Arc<McpManager>,
    approver: &Recording,
    name: &str,
    args: serde_json::Value,
) -> CallStatus {
    let mut toolbox = Toolbox::new(ToolboxConfig::default());
    toolbox.add_dynamic(Arc::clone(manager) as Arc<dyn DynamicTools>);
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: args.to_string(),
    };
    let result = toolbox
        .resolve()
        .execute(
            &call,
            &ToolContext::default(),
            &Approvals::default(),
            approver,
            Duration::from_secs(60),
        )
        .await;
    if result.status == CallStatus::Denied {
        assert_eq!(result.for_model, texts::APPROVAL_DENIED);
    }
    result.status
}

#[tokio::test]
async fn annotations_decide_by_default() {
    let manager = start(&[py_server("py")]).await;
    let read_only = |name: &str| {
        manager
            .mcp_tools()
            .into_iter()
            .find(|t| t.spec().name == name)
            .map(|t| (t.read_only(), t.requires_approval()))
            .unwrap()
    };
    assert_eq!(read_only("mcp__py__read_note"), (true, false));
    assert_eq!(read_only("mcp__py__write_note"), (false, true));
    assert_eq!(read_only("mcp__py__erase_note"), (false, true));

    // The user says no: the unannotated write is asked about and not run; the read runs unasked.
    let no = Recording::new(false);
    let write = json!({"key": "k", "text": "hello"});
    assert_eq!(
        run(&manager, &no, "mcp__py__write_note", write.clone()).await,
        CallStatus::Denied
    );
    assert_eq!(
        run(&manager, &no, "mcp__py__erase_note", json!({"key": "k"})).await,
        CallStatus::Denied
    );
    assert_eq!(
        run(&manager, &no, "mcp__py__read_note", json!({"key": "k"})).await,
        CallStatus::Ok
    );
    assert_eq!(
        no.asked(),
        vec!["mcp__py__write_note", "mcp__py__erase_note"]
    );

    // The user says yes: the write runs after the question.
    let yes = Recording::new(true);
    assert_eq!(
        run(&manager, &yes, "mcp__py__write_note", write).await,
        CallStatus::Ok
    );
    assert_eq!(yes.asked(), vec!["mcp__py__write_note"]);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_servers_approval_setting_overrides_the_annotations() {
    let mut never = py_server("trusted");
    never.approval = McpApproval::Never;
    let mut ask = py_server("strict");
    ask.approval = McpApproval::Ask;
    let manager = start(&[never, ask]).await;
    let approver = Recording::new(false);
    let write = json!({"key": "k", "text": "x"});
    // never: not even the write asks.
    assert_eq!(
        run(
            &manager,
            &approver,
            "mcp__trusted__write_note",
            write.clone()
        )
        .await,
        CallStatus::Ok
    );
    // ask: even the read-only tool asks.
    assert_eq!(
        run(
            &manager,
            &approver,
            "mcp__strict__read_note",
            json!({"key": "k"})
        )
        .await,
        CallStatus::Denied
    );
    assert_eq!(
        run(&manager, &approver, "mcp__strict__write_note", write).await,
        CallStatus::Denied
    );
    assert_eq!(
        approver.asked(),
        vec!["mcp__strict__read_note", "mcp__strict__write_note"]
    );
    manager.shutdown().await;
}
