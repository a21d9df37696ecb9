//! The Responses API's output, assembled from a run's events: a sans-IO state machine that takes
//! [`RunEvent`]s and gives the output items (the response's `output`) and the streaming events
//! OpenAI sends for them, in order. The same assembler serves a streamed and a plain response,
//! so the two cannot disagree.

use std::collections::HashMap;

use serde_json::{json, Value};
use toolbridge_agent::{CallStatus, RunEvent};

use super::ids;
use super::request::{ClientKind, CUSTOM_INPUT_FIELD};

/// What a tool's calls are, as the Responses API shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// The client's: written back as a call for it to run.
    Client(ClientKind),
    /// `python_execute`: `code_interpreter_call`.
    Python,
    /// `web_search`: `web_search_call` (action `search`).
    WebSearch,
    /// `web_fetch`: `web_search_call` (action `open_page`).
    WebFetch,
    /// `image_generate`: `image_generation_call`.
    Image,
    /// An MCP server's tool: `mcp_call`.
    Mcp { label: String, tool: String },
    /// The server's own (skills, memory, terminal): not shown as an item.
    Internal,
}

/// One streaming event: its `type` and its fields (`sequence_number` is added when written).
pub(crate) type StreamEvent = (&'static str, Value);

/// Assembles the output of one response.
pub(crate) struct Assembler {
    kinds: HashMap<String, CallKind>,
    container: Option<String>,
    output: Vec<Value>,
    message: Option<usize>,
    reasoning: Option<usize>,
    /// Output index of each call item, by call id.
    calls: HashMap<String, usize>,
    events: Vec<StreamEvent>,
    /// MCP tools whose calls the client approves first, and the calls it approved.
    asks: std::collections::HashSet<String>,
    approved: std::collections::HashSet<String>,
}

impl Assembler {
    /// `kinds` names the tools that are not [`CallKind::Internal`]; `container` is the id of
    /// the conversation's code container.
    pub(crate) fn new(kinds: HashMap<String, CallKind>, container: Option<String>) -> Self {
        Assembler {
            kinds,
            container,
            output: Vec::new(),
            message: None,
            reasoning: None,
            calls: HashMap::new(),
            events: Vec::new(),
            asks: std::collections::HashSet::new(),
            approved: std::collections::HashSet::new(),
        }
    }

    /// MCP tools (exposed names) whose calls need the client's approval, and the call ids it
    /// approved: an unapproved call is shown as an `mcp_approval_request`.
    pub(crate) fn with_approvals(
        mut self,
        asks: std::collections::HashSet<String>,
        approved: std::collections::HashSet<String>,
    ) -> Self {
        self.asks = asks;
        self.approved = approved;
        self
    }

    /// The kind of a tool's calls.
    pub(crate) fn kind(&self, tool: &str) -> &CallKind {
        self.kinds.get(tool).unwrap_or(&CallKind::Internal)
    }

    /// The events produced since the last call.
    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, StreamEvent> {
        self.events.drain(..)
    }

    /// The output items so far.
    pub(crate) fn output(&self) -> &[Value] {
        &self.output
    }

    /// The output items, moved out (the assembler is done).
    pub(crate) fn take_output(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.output)
    }

    /// One event of the run. `image` is the base64 image of an `image_generate` call that
    /// finished (read from the workspace by the driver).
    pub(crate) fn push(&mut self, event: &RunEvent, image: Option<String>) {
        match event {
            RunEvent::Text { text } => self.text(text),
            RunEvent::Reasoning { text } => self.reasoning(text),
            RunEvent::CallStarted {
                id,
                name,
                arguments,
            } => self.call_started(id, name, arguments),
            RunEvent::CallFinished {
                id, status, output, ..
            } => self.call_finished(id, *status, output, image),
            RunEvent::Outcome { .. } => {
                self.close_reasoning();
                self.close_message();
            }
            RunEvent::RoundStarted { .. }
            | RunEvent::Retry { .. }
            | RunEvent::Finalization { .. } => {}
        }
    }

    /// Ends the output: what is still open is closed; call items still running are marked
    /// `incomplete` (the run was cut short).
    pub(crate) fn finish(&mut self) {
        self.close_reasoning();
        self.close_message();
        for index in self.calls.values() {
            let item = &mut self.output[*index];
            if matches!(
                item["status"].as_str(),
                Some("in_progress" | "interpreting" | "searching" | "generating")
            ) {
                item["status"] = json!("incomplete");
            }
        }
    }

    fn emit(&mut self, kind: &'static str, fields: Value) {
        self.events.push((kind, fields));
    }

    fn add_item(&mut self, item: Value) -> usize {
        let index = self.output.len();
        self.output.push(item.clone());
        self.emit(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        index
    }

    fn item_done(&mut self, index: usize) {
        let item = self.output[index].clone();
        self.emit(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    fn item_id(&self, index: usize) -> Value {
        self.output[index]["id"].clone()
    }

    fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.close_reasoning();
        let index = match self.message {
            Some(index) => index,
            None => {
                let index = self.add_item(json!({
                    "id": ids::new("msg"), "type": "message", "status": "in_progress",
                    "role": "assistant", "content": [],
                }));
                let part =
                    json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
                self.output[index]["content"] = json!([part.clone()]);
                let item_id = self.item_id(index);
                self.emit(
                    "response.content_part.added",
                    json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": part}),
                );
                self.message = Some(index);
                index
            }
        };
        append(&mut self.output[index]["content"][0]["text"], delta);
        let item_id = self.item_id(index);
        self.emit(
            "response.output_text.delta",
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []}),
        );
    }

    fn close_message(&mut self) {
        let Some(index) = self.message.take() else {
            return;
        };
        let item_id = self.item_id(index);
        let part = self.output[index]["content"][0].clone();
        self.emit(
            "response.output_text.done",
            json!({"item_id": item_id, "output_index": index, "content_index": 0,
                   "text": part["text"], "logprobs": []}),
        );
        self.emit(
            "response.content_part.done",
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": part}),
        );
        self.output[index]["status"] = json!("completed");
        self.item_done(index);
    }

    fn reasoning(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.close_message();
        let index = match self.reasoning {
            Some(index) => index,
            None => {
                let index = self.add_item(json!({
                    "id": ids::new("rs"), "type": "reasoning", "summary": [],
                    "content": [{"type": "reasoning_text", "text": ""}],
                }));
                self.reasoning = Some(index);
                index
            }
        };
        append(&mut self.output[index]["content"][0]["text"], delta);
        let item_id = self.item_id(index);
        self.emit(
            "response.reasoning_text.delta",
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": delta}),
        );
    }

    fn close_reasoning(&mut self) {
        let Some(index) = self.reasoning.take() else {
            return;
        };
        let item_id = self.item_id(index);
        let text = self.output[index]["content"][0]["text"].clone();
        self.emit(
            "response.reasoning_text.done",
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "text": text}),
        );
        self.item_done(index);
    }

    fn call_started(&mut self, call_id: &str, name: &str, arguments: &str) {
        let kind = self.kind(name).clone();
        if kind == CallKind::Internal {
            return;
        }
        self.close_reasoning();
        self.close_message();
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let arg = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match kind {
            CallKind::Client(ClientKind::Function) => {
                let index = self.add_item(json!({
                    "id": ids::new("fc"), "type": "function_call", "status": "in_progress",
                    "arguments": "", "call_id": call_id, "name": name,
                }));
                let item_id = self.item_id(index);
                self.emit(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": index, "delta": arguments}),
                );
                self.emit(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index, "name": name, "arguments": arguments}),
                );
                self.output[index]["arguments"] = json!(arguments);
                self.output[index]["status"] = json!("completed");
                self.item_done(index);
                self.calls.insert(call_id.to_owned(), index);
            }
            CallKind::Client(ClientKind::Custom) => {
                let input = arg(CUSTOM_INPUT_FIELD);
                let index = self.add_item(json!({
                    "id": ids::new("ctc"), "type": "custom_tool_call", "status": "in_progress",
                    "call_id": call_id, "name": name, "input": "",
                }));
                let item_id = self.item_id(index);
                self.emit(
                    "response.custom_tool_call_input.delta",
                    json!({"item_id": item_id, "output_index": index, "delta": input}),
                );
                self.emit(
                    "response.custom_tool_call_input.done",
                    json!({"item_id": item_id, "output_index": index, "input": input}),
                );
                self.output[index]["input"] = json!(input);
                self.output[index]["status"] = json!("completed");
                self.item_done(index);
                self.calls.insert(call_id.to_owned(), index);
            }
            CallKind::Python => {
                let code = arg("code");
                let index = self.add_item(json!({
                    "id": ids::new("ci"), "type": "code_interpreter_call", "status": "in_progress",
                    "code": "", "container_id": self.container, "outputs": null,
                }));
                let item_id = self.item_id(index);
                self.emit(
                    "response.code_interpreter_call.in_progress",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.emit(
                    "response.code_interpreter_call_code.delta",
                    json!({"item_id": item_id, "output_index": index, "delta": code}),
                );
                self.emit(
                    "response.code_interpreter_call_code.done",
                    json!({"item_id": item_id, "output_index": index, "code": code}),
                );
                self.output[index]["code"] = json!(code);
                self.output[index]["status"] = json!("interpreting");
                self.emit(
                    "response.code_interpreter_call.interpreting",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.calls.insert(call_id.to_owned(), index);
            }
            CallKind::WebSearch | CallKind::WebFetch => {
                let action = if kind == CallKind::WebSearch {
                    json!({"type": "search", "query": arg("query")})
                } else {
                    json!({"type": "open_page", "url": arg("url")})
                };
                let index = self.add_item(json!({
                    "id": ids::new("ws"), "type": "web_search_call", "status": "in_progress",
                    "action": action,
                }));
                let item_id = self.item_id(index);
                self.emit(
                    "response.web_search_call.in_progress",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.emit(
                    "response.web_search_call.searching",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.output[index]["status"] = json!("searching");
                self.calls.insert(call_id.to_owned(), index);
            }
            CallKind::Image => {
                let index = self.add_item(json!({
                    "id": ids::new("ig"), "type": "image_generation_call", "status": "in_progress",
                    "result": null,
                }));
                let item_id = self.item_id(index);
                self.emit(
                    "response.image_generation_call.in_progress",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.emit(
                    "response.image_generation_call.generating",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.output[index]["status"] = json!("generating");
                self.calls.insert(call_id.to_owned(), index);
            }
            CallKind::Mcp { label, tool }
                if self.asks.contains(name) && !self.approved.contains(call_id) =>
            {
                let index = self.add_item(json!({
                    "id": format!("{}{call_id}", super::run::APPROVAL_PREFIX),
                    "type": "mcp_approval_request",
                    "server_label": label, "name": tool, "arguments": arguments,
                }));
                self.item_done(index);
            }
            CallKind::Mcp { label, tool } => {
                let index = self.add_item(json!({
                    "id": ids::new("mcp"), "type": "mcp_call", "status": "in_progress",
                    "server_label": label, "name": tool, "arguments": "", "output": null, "error": null,
                }));
                let item_id = self.item_id(index);
                self.emit(
                    "response.mcp_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": index, "delta": arguments}),
                );
                self.emit(
                    "response.mcp_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
                );
                self.output[index]["arguments"] = json!(arguments);
                self.emit(
                    "response.mcp_call.in_progress",
                    json!({"item_id": item_id, "output_index": index}),
                );
                self.calls.insert(call_id.to_owned(), index);
            }
            CallKind::Internal => {}
        }
    }

    fn call_finished(
        &mut self,
        call_id: &str,
        status: CallStatus,
        output: &str,
        image: Option<String>,
    ) {
        let Some(&index) = self.calls.get(call_id) else {
            return;
        };
        let kind = self.output[index]["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let ok = !status.is_error();
        let item_id = self.item_id(index);
        let at = json!({"item_id": item_id, "output_index": index});
        match kind.as_str() {
            "code_interpreter_call" => {
                self.output[index]["outputs"] = json!([{"type": "logs", "logs": output}]);
                self.output[index]["status"] = json!(if ok { "completed" } else { "failed" });
                self.emit("response.code_interpreter_call.completed", at);
            }
            "web_search_call" => {
                self.output[index]["status"] = json!(if ok { "completed" } else { "failed" });
                self.emit("response.web_search_call.completed", at);
            }
            "image_generation_call" => {
                let ok = ok && image.is_some();
                self.output[index]["result"] = image.map_or(Value::Null, Value::String);
                self.output[index]["status"] = json!(if ok { "completed" } else { "failed" });
                self.emit("response.image_generation_call.completed", at);
            }
            "mcp_call" => {
                if ok {
                    self.output[index]["output"] = json!(output);
                    self.output[index]["status"] = json!("completed");
                    self.emit("response.mcp_call.completed", at);
                } else {
                    self.output[index]["error"] = json!(output);
                    self.output[index]["status"] = json!("failed");
                    self.emit("response.mcp_call.failed", at);
                }
            }
            // A client call answered by the server (a repeat, over the budget): it is not the
            // client's to run any more; its item stays as written.
            _ => return,
        }
        self.item_done(index);
    }
}

fn append(slot: &mut Value, delta: &str) {
    match slot {
        Value::String(s) => s.push_str(delta),
        other => *other = Value::String(delta.to_owned()),
    }
}

/// The `output_text` of a response: its messages' text, joined.
pub(crate) fn output_text(output: &[Value]) -> String {
    let mut text = String::new();
    for item in output.iter().filter(|i| i["type"] == "message") {
        for part in item["content"].as_array().into_iter().flatten() {
            if let Some(t) = part["text"].as_str() {
                text.push_str(t);
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;

    use super::*;

    fn finished(id: &str, output: &str) -> RunEvent {
        RunEvent::CallFinished {
            id: id.into(),
            name: String::new(),
            status: CallStatus::Ok,
            duration_ms: 1,
            preview: output.into(),
            output_chars: output.len(),
            output: Arc::from(output),
        }
    }

    #[test]
    fn text_a_hosted_call_and_more_text_are_three_items_in_order() {
        let kinds = HashMap::from([("python_execute".to_owned(), CallKind::Python)]);
        let mut a = Assembler::new(kinds, Some("cntr_1".into()));
        a.push(
            &RunEvent::Text {
                text: "Let me ".into(),
            },
            None,
        );
        a.push(
            &RunEvent::Text {
                text: "run it.".into(),
            },
            None,
        );
        a.push(
            &RunEvent::CallStarted {
                id: "c1".into(),
                name: "python_execute".into(),
                arguments: r#"{"code":"print(6*7)"}"#.into(),
            },
            None,
        );
        a.push(&finished("c1", "42\n"), None);
        a.push(
            &RunEvent::Text {
                text: "It is 42.".into(),
            },
            None,
        );
        a.finish();
        let types: Vec<_> = a
            .output()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["message", "code_interpreter_call", "message"]);
        assert_eq!(a.output()[0]["content"][0]["text"], "Let me run it.");
        assert_eq!(a.output()[1]["code"], "print(6*7)");
        assert_eq!(a.output()[1]["outputs"][0]["logs"], "42\n");
        assert_eq!(a.output()[1]["status"], "completed");
        assert_eq!(a.output()[1]["container_id"], "cntr_1");
        assert_eq!(output_text(a.output()), "Let me run it.It is 42.");
        let events: Vec<_> = a.drain().map(|(k, _)| k).collect();
        assert_eq!(events.first(), Some(&"response.output_item.added"));
        assert!(events.contains(&"response.code_interpreter_call.completed"));
        assert_eq!(
            events
                .iter()
                .filter(|k| **k == "response.output_item.done")
                .count(),
            3
        );
    }

    #[test]
    fn a_client_call_is_a_complete_function_call_item_and_internal_tools_are_not_shown() {
        let kinds = HashMap::from([(
            "get_weather".to_owned(),
            CallKind::Client(ClientKind::Function),
        )]);
        let mut a = Assembler::new(kinds, None);
        a.push(
            &RunEvent::CallStarted {
                id: "c9".into(),
                name: "use_skill".into(),
                arguments: "{}".into(),
            },
            None,
        );
        a.push(
            &RunEvent::CallStarted {
                id: "c1".into(),
                name: "get_weather".into(),
                arguments: r#"{"city":"Paris"}"#.into(),
            },
            None,
        );
        a.finish();
        assert_eq!(a.output().len(), 1);
        let item = &a.output()[0];
        assert_eq!(item["type"], "function_call");
        assert_eq!(item["call_id"], "c1");
        assert_eq!(item["arguments"], r#"{"city":"Paris"}"#);
        assert_eq!(item["status"], "completed");
    }
}
