//! `save_memory`: a durable fact about the run's user.
//!
//! docs/src/security.md, "Tool output is untrusted": the model is told (seed description) to save
//! only when the user asks. The tool is allowed by default, but every entry records its provenance
//! (conversation, tool call, time) and belongs to the run's user only; `toolbridge memory list|rm`
//! shows and removes entries. An operator who wants a person to confirm each write sets `[tools]
//! save_memory_approval = true` (the tool then requires approval and the `[agent.approvals]`
//! default decides, `ask` unless changed) or `[agent.approvals] per_tool = { save_memory = "ask"
//! }`.
//!
//! Whatever the configuration, once tool output has reached the model in a run a `save_memory`
//! call is tightened to at least `[agent.approvals] after_tool_output` (`ask`): an instruction
//! injected into a web page or a file cannot write a memory unseen.

use std::sync::Arc;

use serde_json::Value;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use crate::common::seed_spec;
use crate::memory::{MemoryStore, NewMemory};

pub struct SaveMemory {
    spec: ToolSpec,
    store: Arc<dyn MemoryStore>,
    approval: bool,
}

impl SaveMemory {
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        SaveMemory {
            spec: seed_spec(
                "save_memory",
                texts::SAVE_MEMORY_DESCRIPTION,
                texts::SAVE_MEMORY_SCHEMA,
            ),
            store,
            approval: false,
        }
    }

    /// Calls need approval (subject to `[agent.approvals]`).
    pub fn requiring_approval(mut self, yes: bool) -> Self {
        self.approval = yes;
        self
    }
}

impl Tool for SaveMemory {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn requires_approval(&self) -> bool {
        self.approval
    }

    /// docs/src/security.md, "Tool output is untrusted": an instruction injected into a web page or
    /// a file must not write a memory unseen; once tool output has reached the model, calls ask
    /// (`[agent.approvals] after_tool_output`).
    fn guarded_after_tool_output(&self) -> bool {
        true
    }

    fn invoke(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let store = Arc::clone(&self.store);
        Box::pin(async move {
            let text = |k: &str| {
                args.get(k)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
            };
            let memory = NewMemory {
                user: ctx.user.clone(),
                slot: text("slot"),
                value: text("value"),
                memory_text: text("memory_text").unwrap_or_default(),
                status: None,
                conversation: Some(ctx.conversation.clone()),
                tool_call: ctx.call_id.clone(),
            };
            store
                .add(memory)
                .await
                .map_err(|e| ToolError::internal(e.to_string()))?;
            Ok(texts::MEMORY_SAVED.to_owned())
        })
    }
}
