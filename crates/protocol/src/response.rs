//! A whole response: the fold of [`ModelEvent`]s into text, reasoning, calls, parse errors, usage
//! and finish reason. Pure data; the parser can write into it directly (it is a [`Sink`]) and the
//! providers fold their decoded streams into it.

use crate::mode::ToolMode;
use crate::parser::Dialect;
use crate::parser::{ErrorKind, ModelEvent, ParseError, Sink};
use crate::texts::{CallFormat, CallTag};
use crate::types::{FinishReason, ThinkingBlock, ToolCall, Usage};
use crate::visible::VisiblePrefix;

/// Which arm of a model answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmInfo {
    pub index: usize,
    pub name: String,
    pub mode: ToolMode,
    /// The call tag the arm was taught (retry messages name it).
    pub tag: CallTag,
    /// The call format the arm was taught and read in.
    pub dialect: Dialect,
}

impl ArmInfo {
    /// The arm's call format (what a retry message teaches).
    pub fn format(&self) -> CallFormat {
        CallFormat::new(self.dialect, self.tag)
    }
}

/// A collected response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelResponse {
    /// The text, malformed call markup included (the parser's visible text).
    pub text: String,
    pub reasoning: String,
    /// The reasoning the upstream signed, block by block (the rest of `reasoning` after the
    /// last signed block, if any, is unsigned).
    pub thinking_blocks: Vec<ThinkingBlock>,
    /// Bytes of `reasoning` covered by `thinking_blocks`.
    signed_reasoning: usize,
    /// Completed calls (a call cut off mid-way is in `errors`, never here).
    pub calls: Vec<ToolCall>,
    /// Calls started but not (yet) ended, by index.
    partial: Vec<(usize, ToolCall)>,
    pub errors: Vec<ParseError>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
    /// The request's stop sequence the answer ended on, when known.
    pub stop_sequence: Option<String>,
    /// Set by the provider that collected the response.
    pub arm: Option<ArmInfo>,
    /// What a user is shown of `text`: the visible prefix, before malformed call markup.
    pub visible: VisiblePrefix,
}

impl ModelResponse {
    /// Folds one event in.
    pub fn apply(&mut self, event: ModelEvent) {
        match event {
            ModelEvent::Text { text } => self.text(&text),
            ModelEvent::Reasoning { text } => self.reasoning(&text),
            ModelEvent::CallStart { index, id, name } => self.partial.push((
                index,
                ToolCall {
                    id,
                    name,
                    arguments: String::new(),
                },
            )),
            ModelEvent::CallArgs { index, fragment } => self.call_args(index, &fragment),
            ModelEvent::CallEnd { index } => self.call_end(index),
            ModelEvent::Malformed { error } => self.error(error),
            ModelEvent::Usage { usage } => self.usage = Some(usage),
            ModelEvent::StopSequence { sequence } => self.stop_sequence = Some(sequence),
            ModelEvent::ReasoningSignature { signature } => {
                let thinking = self.reasoning[self.signed_reasoning..].to_owned();
                self.signed_reasoning = self.reasoning.len();
                self.thinking_blocks.push(ThinkingBlock::Thinking {
                    thinking,
                    signature,
                });
            }
            ModelEvent::RedactedReasoning { data } => {
                self.thinking_blocks
                    .push(ThinkingBlock::RedactedThinking { data });
            }
            ModelEvent::Finish { reason } => self.finish_reason = Some(reason),
        }
    }

    /// The reasoning after the last signed block (all of it when none was signed).
    pub fn unsigned_reasoning(&self) -> &str {
        &self.reasoning[self.signed_reasoning..]
    }

    /// What a user is shown of `text`: the visible prefix, before malformed call markup.
    pub fn visible_text(&self) -> &str {
        self.visible.answer(&self.text)
    }

    /// A call was cut off by the end of the stream: the response's finish reason is `length`.
    pub fn truncated(&self) -> bool {
        self.errors.iter().any(|e| e.kind == ErrorKind::Truncated)
    }
}

/// The parser's collector: a parsed text folds straight into a response.
impl Sink for ModelResponse {
    fn text(&mut self, text: &str) {
        self.visible.push_text(text);
        self.text.push_str(text);
    }

    fn reasoning(&mut self, text: &str) {
        self.reasoning.push_str(text);
    }

    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.partial.push((
            index,
            ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: String::new(),
            },
        ));
    }

    fn call_args(&mut self, index: usize, fragment: &str) {
        if let Some((_, call)) = self.partial.iter_mut().find(|(i, _)| *i == index) {
            call.arguments.push_str(fragment);
        }
    }

    fn call_end(&mut self, index: usize) {
        if let Some(pos) = self.partial.iter().position(|(i, _)| *i == index) {
            self.calls.push(self.partial.remove(pos).1);
        }
    }

    fn error(&mut self, error: ParseError) {
        self.visible.cut();
        self.errors.push(error);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::parser::{parse, EventLog, Parser, ParserConfig};

    const TEXT: &str = "Sure. <tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call> then <tool_call>{bad</tool_call> <think>hm</think>";

    #[test]
    fn folding_the_events_equals_collecting_from_the_parser() {
        let direct = parse(TEXT, &ParserConfig::with_tools(["f"]));
        let mut log = EventLog::default();
        let mut parser = Parser::new(ParserConfig::with_tools(["f"]));
        for piece in TEXT.as_bytes().chunks(3) {
            parser.push_bytes(piece, &mut log);
        }
        parser.finish(&mut log);
        let mut folded = ModelResponse::default();
        for event in log.0 {
            folded.apply(event);
        }
        assert_eq!(folded, direct);
        assert_eq!(direct.calls.len(), 1);
        assert_eq!(direct.calls[0].arguments, "{\"x\": 1}");
        assert_eq!(direct.errors.len(), 1);
        assert_eq!(direct.reasoning, "hm");
        assert_eq!(direct.visible_text(), "Sure.  then");
    }

    #[test]
    fn a_call_that_never_ends_is_not_a_call() {
        let mut r = ModelResponse::default();
        r.call_start(0, "c0", "f");
        r.call_args(0, "{}");
        assert!(r.calls.is_empty());
        r.call_end(0);
        assert_eq!(r.calls[0].name, "f");
    }
}
