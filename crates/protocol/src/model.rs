//! What a tool loop needs of a model, as traits the upstream clients implement.
//!
//! The agent's loop (`toolbridge-agent`) asks a [`ChatModel`] for the events of one request and
//! reads, once they end, which arm answered (its tool mode and call format decide how malformed
//! calls are retried). The providers (`toolbridge-providers`: HTTP upstreams, tool modes, arm
//! fallback) and the embedded model implement these traits; the loop never names them, so its
//! crate depends on this one alone. The traits are the only place async enters this crate: a
//! stream is a poll interface, and no I/O happens here.

use futures_core::Stream;

use crate::response::ArmInfo;
use crate::types::ChatRequest;
use crate::ModelEvent;

/// Why a model request failed: the provider's own error, kept whole for the log.
pub type ModelError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The events of one model request.
pub trait EventStream: Stream<Item = Result<ModelEvent, ModelError>> + Send + Unpin {
    /// The arm that answered, once it is known (at the latest when the stream has ended).
    fn arm(&self) -> Option<&ArmInfo>;
}

/// A model a tool loop can talk to.
pub trait ChatModel: Send + Sync {
    /// The name the model was configured under.
    fn name(&self) -> &str;

    /// A one-line description of what answers (its upstreams and tool modes), for people.
    fn describe(&self) -> String {
        self.name().to_owned()
    }

    /// Starts one request; the events arrive as the upstream streams them.
    fn events(&self, request: ChatRequest) -> Box<dyn EventStream>;
}
