//! The tool-free finalization round's text, parsed as it streams (its request was sent without
//! tools, so call markup in it is not a call).

use toolbridge_protocol::parser::{Dialect, ParserConfig};
use toolbridge_protocol::visible::ToolFreeText;
use toolbridge_protocol::ModelEvent;

/// The finalization round's text parser while its response is in flight (process-local, like
/// the response: a clone or a restored machine starts without one).
#[derive(Default)]
pub(super) struct FreeText(Option<ToolFreeText>);

impl FreeText {
    pub(super) fn is_parsing(&self) -> bool {
        self.0.is_some()
    }

    /// Starts parsing in `dialect`: the arm's own call format, which a model that still calls
    /// a tool in this round writes its call in.
    pub(super) fn start(dialect: Dialect) -> Self {
        FreeText(Some(ToolFreeText::new(ParserConfig {
            dialect,
            ..ParserConfig::default()
        })))
    }

    pub(super) fn push(&mut self, delta: &str) -> Vec<ModelEvent> {
        self.0.as_mut().map(|f| f.push(delta)).unwrap_or_default()
    }

    pub(super) fn finish(&mut self) -> Vec<ModelEvent> {
        self.0
            .as_mut()
            .map(ToolFreeText::finish)
            .unwrap_or_default()
    }

    pub(super) fn answer(&self) -> String {
        self.0
            .as_ref()
            .map(|f| f.answer().to_owned())
            .unwrap_or_default()
    }

    pub(super) fn called(&self) -> bool {
        self.0.as_ref().is_some_and(ToolFreeText::called)
    }
}

impl Clone for FreeText {
    fn clone(&self) -> Self {
        FreeText::default()
    }
}

impl std::fmt::Debug for FreeText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "FreeText(parsing)"
        } else {
            "FreeText(idle)"
        })
    }
}
