//! What goes into the run machine and comes out of it besides events: its limits, the options
//! every model request carries, the actions it asks of its driver and the calls a round runs.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolbridge_protocol::types::{ChatRequest, ToolCall};

/// The loop's limits, as the machine needs them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_rounds: usize,
    pub max_tool_calls: usize,
    #[serde(with = "millis")]
    pub max_duration: Duration,
    pub parallel_calls: usize,
    pub max_malformed_retries: usize,
}

/// What every model request of a run carries besides the conversation and the tools (a front
/// door's `max_output_tokens`, `temperature`, `top_p`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Chat Completions' `response_format` (structured output), for upstreams that take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<serde_json::Value>,
}

/// What the machine asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Send this request and feed its events back (`handle_model_event`, then
    /// `handle_model_end` or `handle_model_error`).
    CallModel(ChatRequest),
    /// Run these calls and answer with `handle_tool_results`: one result per call, in order.
    RunTools(ToolJobs),
    /// The run is over; [`RunMachine::state`] holds what it left.
    Done,
}

/// The calls of one round that are to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolJobs {
    pub calls: Vec<ToolCall>,
    /// Calls may run concurrently up to this many (1 in the text modes).
    pub parallel: usize,
    /// What is left of the run's wall time: no call may take longer.
    #[serde(with = "millis")]
    pub remaining: Duration,
    /// Whether tool output has reached the model before these calls (docs/src/security.md, "Tool
    /// output is untrusted": guarded tools are tightened from then on).
    pub after_tool_output: bool,
}

/// Durations as whole milliseconds in the serialized form.
pub(super) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
