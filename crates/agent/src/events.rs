//! What a run reports as it goes, and how it ended.

use serde::{Deserialize, Serialize};

use crate::toolbox::CallStatus;

/// How a run ended (machine-readable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model answered.
    Answered,
    /// The budget ran out and the tool-free finalization round still called a tool or said
    /// nothing.
    ToolBudgetExceeded,
    /// Only repeated calls, and the finalization round still called a tool or said nothing.
    ToolNoProgress,
    /// Malformed calls after two retries: the visible prefix is the answer.
    MalformedGaveUp,
    Cancelled,
    /// The provider failed.
    Error,
    /// A tool had no capacity (every slot the server allows was busy): the run stopped after
    /// that round; the client should try again later.
    Overloaded,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::ToolBudgetExceeded => "tool_budget_exceeded",
            Outcome::ToolNoProgress => "tool_no_progress",
            Outcome::MalformedGaveUp => "malformed_gave_up",
            Outcome::Cancelled => "cancelled",
            Outcome::Error => "error",
            Outcome::Overloaded => "overloaded",
        }
    }
}

/// Why a finalization round was started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalizationReason {
    /// Rounds, tool calls or wall time ran out.
    Budget,
    /// A round brought only calls that repeat earlier ones.
    NoProgress,
}

/// One event of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    RoundStarted {
        round: usize,
    },
    /// Visible text from the model.
    Text {
        text: String,
    },
    Reasoning {
        text: String,
    },
    CallStarted {
        id: String,
        name: String,
        arguments: String,
    },
    CallFinished {
        id: String,
        name: String,
        status: CallStatus,
        duration_ms: u64,
        /// The first characters of what the model was shown.
        preview: String,
        /// Characters of the complete output.
        output_chars: usize,
        /// The complete output (a front door that reports tool output, such as the Responses
        /// API's `code_interpreter_call.outputs`, needs all of it). Process-local: not
        /// serialized, so stored and logged events stay small.
        #[serde(skip)]
        output: std::sync::Arc<str>,
    },
    /// A malformed call was answered with the seed's retry message.
    Retry {
        attempt: usize,
        reason: String,
    },
    Finalization {
        reason: FinalizationReason,
    },
    /// The last event.
    Outcome {
        outcome: Outcome,
        answer: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}
