//! The scripted provider: replies written in advance, for tests, demos and replaying incidents.
//!
//! It behaves like a real server: text is streamed in chunks, and stop sequences are honoured
//! exactly as OpenAI does (the output ends before the first stop string, which is not sent).
//! From the command line: `--model scripted:FILE`, where FILE is
//! `{"replies": ["text…", {"tool_calls": [{"name": …, "arguments": {…}}]}, …], "record": "requests.jsonl"}`.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbridge_protocol::accumulator::{FunctionDelta, ToolCallDelta};
use toolbridge_protocol::types::{ChatRequest, FinishReason, Message, ToolChoice, ToolSpec};

use crate::error::ProviderError;
use crate::wire::{Upstream, WireEvent, WireStream};

/// One scripted reply: text (which may contain prompt-mode calls), native calls, or both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptedReply {
    Text(String),
    Full {
        #[serde(default)]
        text: String,
        #[serde(default)]
        reasoning: String,
        #[serde(default)]
        tool_calls: Vec<ScriptedCall>,
        /// Report this finish reason instead of the natural one.
        #[serde(default)]
        finish_reason: Option<FinishReason>,
    },
}

impl ScriptedReply {
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedReply::Text(text.into())
    }

    /// A reply of native tool calls: (name, arguments).
    pub fn calls<I, N>(calls: I) -> Self
    where
        I: IntoIterator<Item = (N, Value)>,
        N: Into<String>,
    {
        ScriptedReply::Full {
            text: String::new(),
            reasoning: String::new(),
            tool_calls: calls
                .into_iter()
                .map(|(name, arguments)| ScriptedCall {
                    name: name.into(),
                    arguments,
                })
                .collect(),
            finish_reason: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptedCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The script file's format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    replies: Vec<ScriptedReply>,
    #[serde(default)]
    record: Option<PathBuf>,
    #[serde(default)]
    chunk_size: Option<usize>,
}

/// What a recorded request shows: exactly what the model was given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordedRequest {
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

struct State {
    replies: VecDeque<ScriptedReply>,
    total: usize,
    requests: Vec<ChatRequest>,
}

/// The scripted upstream.
#[derive(Clone)]
pub struct ScriptedUpstream {
    state: Arc<Mutex<State>>,
    chunk_size: usize,
    record: Option<PathBuf>,
    name: String,
}

impl ScriptedUpstream {
    pub fn new(replies: Vec<ScriptedReply>) -> Self {
        let total = replies.len();
        ScriptedUpstream {
            state: Arc::new(Mutex::new(State {
                replies: replies.into(),
                total,
                requests: Vec::new(),
            })),
            chunk_size: 7,
            record: None,
            name: "scripted".into(),
        }
    }

    /// Reads a script file (see the module documentation). A relative `record` path is relative to
    /// the current directory.
    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProviderError::Config(format!("cannot read script {}: {e}", path.display()))
        })?;
        let file: ScriptFile = serde_json::from_str(&text).map_err(|e| {
            ProviderError::Config(format!("invalid script {}: {e}", path.display()))
        })?;
        let mut upstream = ScriptedUpstream::new(file.replies);
        upstream.record = file.record;
        if let Some(n) = file.chunk_size {
            upstream.chunk_size = n.max(1);
        }
        upstream.name = format!("scripted:{}", path.display());
        Ok(upstream)
    }

    /// Text is streamed in pieces of this many characters (default 7: odd, so pieces straddle
    /// tags and escapes).
    pub fn with_chunk_size(mut self, chars: usize) -> Self {
        self.chunk_size = chars.max(1);
        self
    }

    /// Appends every request to this JSON-lines file.
    pub fn with_record(mut self, path: impl Into<PathBuf>) -> Self {
        self.record = Some(path.into());
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.state
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.state.lock().map(|s| s.replies.len()).unwrap_or(0)
    }

    fn take(&self, request: &ChatRequest) -> Result<ScriptedReply, ProviderError> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| ProviderError::BadResponse("scripted provider state poisoned".into()))?;
        state.requests.push(request.clone());
        if let Some(path) = &self.record {
            let line = RecordedRequest {
                messages: request.messages.clone(),
                tools: request.tools.clone(),
                stop: request.stop.clone(),
                tool_choice: request.tool_choice.clone(),
            };
            let json = serde_json::to_string(&line)
                .map_err(|e| ProviderError::Config(format!("cannot record request: {e}")))?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| writeln!(f, "{json}"))
                .map_err(|e| {
                    ProviderError::Config(format!("cannot write {}: {e}", path.display()))
                })?;
        }
        let total = state.total;
        state.replies.pop_front().ok_or_else(|| {
            ProviderError::BadResponse(format!(
                "the scripted provider has no reply left ({total} were scripted)"
            ))
        })
    }
}

/// Cuts text before the first stop sequence, as servers do.
fn apply_stop(text: &str, stop: &[String]) -> Option<usize> {
    stop.iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()))
        .min()
}

fn chunks(text: &str, chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, c) in text.chars().enumerate() {
        current.push(c);
        if (i + 1) % chars == 0 {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

impl Upstream for ScriptedUpstream {
    fn describe(&self) -> String {
        self.name.clone()
    }

    /// Scripted replies are text unless they hold native calls, so `auto` means prompt mode.
    fn native_tools(&self) -> bool {
        false
    }

    fn send(&self, request: ChatRequest) -> WireStream {
        let this = self.clone();
        Box::pin(async_stream::try_stream! {
            let reply = this.take(&request)?;
            let (text, reasoning, calls, finish) = match reply {
                ScriptedReply::Text(t) => (t, String::new(), Vec::new(), None),
                ScriptedReply::Full { text, reasoning, tool_calls, finish_reason } => {
                    (text, reasoning, tool_calls, finish_reason)
                }
            };
            for piece in chunks(&reasoning, this.chunk_size) {
                yield WireEvent::Reasoning(piece);
            }
            let stopped = apply_stop(&text, &request.stop);
            let visible = &text[..stopped.unwrap_or(text.len())];
            for piece in chunks(visible, this.chunk_size) {
                tokio::task::yield_now().await;
                yield WireEvent::Text(piece);
            }
            let natural = if stopped.is_none() && !calls.is_empty() {
                for (index, call) in calls.iter().enumerate() {
                    yield WireEvent::ToolCall(ToolCallDelta {
                        index: Some(index),
                        id: Some(format!("call_scripted_{index}")),
                        kind: Some("function".into()),
                        function: Some(FunctionDelta {
                            name: Some(call.name.clone()),
                            arguments: Some(call.arguments.to_string()),
                        }),
                    });
                }
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            };
            yield WireEvent::Finish(finish.unwrap_or(natural));
        })
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use serde_json::json;

    use super::*;

    async fn run(up: &ScriptedUpstream, request: ChatRequest) -> Vec<WireEvent> {
        up.send(request).map(|e| e.unwrap()).collect().await
    }

    #[tokio::test]
    async fn text_is_streamed_and_cut_at_the_stop_sequence() {
        let up = ScriptedUpstream::new(vec![ScriptedReply::text(
            "Sure.<tool_call>{\"name\": \"f\"}</tool_call> and more",
        )])
        .with_chunk_size(3);
        let req = ChatRequest {
            stop: vec!["</tool_call>".into()],
            ..ChatRequest::default()
        };
        let events = run(&up, req).await;
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                WireEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Sure.<tool_call>{\"name\": \"f\"}");
        assert!(
            events
                .iter()
                .filter(|e| matches!(e, WireEvent::Text(_)))
                .count()
                > 5
        );
        assert_eq!(events.last(), Some(&WireEvent::Finish(FinishReason::Stop)));
    }

    #[tokio::test]
    async fn native_calls_and_exhaustion() {
        let up = ScriptedUpstream::new(vec![ScriptedReply::calls([("f", json!({"a": 1}))])]);
        let events = run(&up, ChatRequest::default()).await;
        assert!(
            matches!(&events[0], WireEvent::ToolCall(d) if d.function.as_ref().unwrap().arguments.as_deref() == Some("{\"a\":1}"))
        );
        assert_eq!(
            events.last(),
            Some(&WireEvent::Finish(FinishReason::ToolCalls))
        );
        let err = up
            .send(ChatRequest::default())
            .next()
            .await
            .unwrap()
            .unwrap_err();
        assert!(err.to_string().contains("no reply left (1 were scripted)"));
        assert_eq!(up.requests().len(), 2);
    }

    #[tokio::test]
    async fn script_files_and_recording() {
        let dir = std::env::temp_dir().join(format!("tb-scripted-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = dir.join("requests.jsonl");
        let script = dir.join("script.json");
        std::fs::write(
            &script,
            json!({"replies": ["hello", {"tool_calls": [{"name": "f", "arguments": {"x": "é"}}]}], "record": record}).to_string(),
        )
        .unwrap();
        let up = ScriptedUpstream::from_file(&script).unwrap();
        let req = ChatRequest {
            messages: vec![Message::user("hi")],
            stop: vec!["X".into()],
            ..ChatRequest::default()
        };
        run(&up, req.clone()).await;
        run(&up, req).await;
        let lines: Vec<Value> = std::fs::read_to_string(&record)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["messages"][0]["content"], "hi");
        assert_eq!(lines[0]["stop"][0], "X");
        std::fs::write(&script, "{\"replies\": 3}").unwrap();
        let err = ScriptedUpstream::from_file(&script).err().unwrap();
        assert!(err.to_string().contains("invalid script"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
