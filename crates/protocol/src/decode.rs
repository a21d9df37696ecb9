//! Response decoding per tool mode: what an upstream streams (text, reasoning, native tool-call
//! fragments, usage, a finish reason) becomes one normalized event stream, whatever the mode. A
//! prompt-mode upstream streaming `<tool_call>` text and a native upstream streaming the same call
//! give the same events.

use crate::accumulator::{Accumulator, ToolCallDelta};
use crate::mode::ToolMode;
use crate::parser::{ParseError, Parser, ParserConfig, Sink};
use crate::types::{FinishReason, Usage};

/// The normalized model event: the parser's events plus usage and the finish reason (one type).
pub use crate::parser::ModelEvent;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Text,
    Native,
}

/// Maps the parser's and the accumulator's call indexes onto one index space.
struct Out<'a> {
    events: &'a mut Vec<ModelEvent>,
    source: Source,
    next: &'a mut usize,
    text_map: &'a mut Vec<usize>,
    native_map: &'a mut Vec<usize>,
    calls_ended: &'a mut usize,
    truncated: &'a mut bool,
}

impl Out<'_> {
    fn global(&mut self, index: usize) -> usize {
        let map = match self.source {
            Source::Text => &mut *self.text_map,
            Source::Native => &mut *self.native_map,
        };
        while map.len() <= index {
            map.push(usize::MAX);
        }
        if map[index] == usize::MAX {
            map[index] = *self.next;
            *self.next += 1;
        }
        map[index]
    }
}

impl Sink for Out<'_> {
    fn text(&mut self, text: &str) {
        self.events.text(text);
    }

    fn reasoning(&mut self, text: &str) {
        self.events.reasoning(text);
    }

    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        let index = self.global(index);
        self.events.push(ModelEvent::CallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    fn call_args(&mut self, index: usize, fragment: &str) {
        let index = self.global(index);
        self.events.push(ModelEvent::CallArgs {
            index,
            fragment: fragment.to_owned(),
        });
    }

    fn call_end(&mut self, index: usize) {
        let index = self.global(index);
        *self.calls_ended += 1;
        self.events.push(ModelEvent::CallEnd { index });
    }

    fn error(&mut self, error: ParseError) {
        if error.kind == crate::parser::ErrorKind::Truncated {
            *self.truncated = true;
        }
        self.events.push(ModelEvent::Malformed { error });
    }
}

/// Decodes one upstream response for one tool mode.
pub struct ResponseDecoder {
    parser: Option<Parser>,
    accumulator: Option<Accumulator>,
    next_index: usize,
    text_map: Vec<usize>,
    native_map: Vec<usize>,
    calls_ended: usize,
    truncated: bool,
    upstream_finish: Option<FinishReason>,
    usage: Option<Usage>,
    finished: bool,
}

impl ResponseDecoder {
    /// `mode` must be concrete (native, prompt or verbatim). Text is parsed in prompt and verbatim
    /// modes; native tool-call fragments are accepted in every mode (a server may use them anyway).
    pub fn new(mode: ToolMode, parser: ParserConfig) -> Self {
        // Native calls without an id get one from the same prefix, after a marker that keeps them
        // apart from the parser's ids.
        let accumulator = Accumulator::with_id_prefix(format!("{}n", parser.id_prefix));
        ResponseDecoder {
            parser: mode.parses_text().then(|| Parser::new(parser)),
            accumulator: Some(accumulator),
            next_index: 0,
            text_map: Vec::new(),
            native_map: Vec::new(),
            calls_ended: 0,
            truncated: false,
            upstream_finish: None,
            usage: None,
            finished: false,
        }
    }

    fn out<'a>(&'a mut self, events: &'a mut Vec<ModelEvent>, source: Source) -> Out<'a> {
        Out {
            events,
            source,
            next: &mut self.next_index,
            text_map: &mut self.text_map,
            native_map: &mut self.native_map,
            calls_ended: &mut self.calls_ended,
            truncated: &mut self.truncated,
        }
    }

    /// A content delta.
    pub fn text(&mut self, delta: &str, events: &mut Vec<ModelEvent>) {
        match self.parser.take() {
            Some(mut parser) => {
                parser.push(delta, &mut self.out(events, Source::Text));
                self.parser = Some(parser);
            }
            None => self.out(events, Source::Text).text(delta),
        }
    }

    /// A reasoning delta the server sent apart from the content.
    pub fn reasoning(&mut self, delta: &str, events: &mut Vec<ModelEvent>) {
        self.out(events, Source::Text).reasoning(delta);
    }

    /// A native tool-call fragment.
    pub fn tool_call(&mut self, delta: &ToolCallDelta, events: &mut Vec<ModelEvent>) {
        if let Some(mut acc) = self.accumulator.take() {
            acc.push(delta, &mut self.out(events, Source::Native));
            self.accumulator = Some(acc);
        }
    }

    pub fn usage(&mut self, usage: Usage) {
        self.usage = Some(usage);
    }

    pub fn finish_reason(&mut self, reason: FinishReason) {
        self.upstream_finish = Some(reason);
    }

    /// Ends the response: flushes held text, ends native calls, and emits usage and the finish
    /// reason. A call cut off mid-way makes it `length`; completed calls make it `tool_calls`.
    pub fn finish(&mut self, events: &mut Vec<ModelEvent>) -> FinishReason {
        if self.finished {
            return self.final_reason();
        }
        self.finished = true;
        if let Some(mut parser) = self.parser.take() {
            parser.finish(&mut self.out(events, Source::Text));
        }
        if let Some(acc) = self.accumulator.take() {
            let cut = self.upstream_finish == Some(FinishReason::Length);
            let mut out = self.out(events, Source::Native);
            if cut {
                acc.finish_truncated(&mut out);
            } else {
                acc.finish(&mut out);
            }
        }
        if let Some(usage) = self.usage {
            events.push(ModelEvent::Usage { usage });
        }
        let reason = self.final_reason();
        events.push(ModelEvent::Finish { reason });
        reason
    }

    fn final_reason(&self) -> FinishReason {
        if self.truncated || self.upstream_finish == Some(FinishReason::Length) {
            FinishReason::Length
        } else if self.calls_ended > 0 {
            FinishReason::ToolCalls
        } else {
            match self.upstream_finish {
                // The stop sequence ended a call that turned out malformed, or the upstream said
                // tool_calls without sending any: there is no call to hand back.
                Some(FinishReason::ToolCalls) | None => FinishReason::Stop,
                Some(other) => other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulator::FunctionDelta;

    fn calls_and_text(events: &[ModelEvent]) -> (String, Vec<(usize, String, String)>) {
        let mut text = String::new();
        let mut calls: Vec<(usize, String, String)> = Vec::new();
        for e in events {
            match e {
                ModelEvent::Text { text: t } => text.push_str(t),
                ModelEvent::CallStart { index, name, .. } => {
                    calls.push((*index, name.clone(), String::new()))
                }
                ModelEvent::CallArgs { index, fragment } => calls
                    .iter_mut()
                    .find(|c| c.0 == *index)
                    .unwrap()
                    .2
                    .push_str(fragment),
                _ => {}
            }
        }
        (text, calls)
    }

    #[test]
    fn prompt_text_and_native_fragments_give_the_same_events() {
        let mut prompt = ResponseDecoder::new(ToolMode::Prompt, ParserConfig::with_tools(["f"]));
        let mut a = Vec::new();
        for piece in [
            "Sure. <tool_",
            "call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}",
        ] {
            prompt.text(piece, &mut a);
        }
        prompt.finish_reason(FinishReason::Stop);
        assert_eq!(prompt.finish(&mut a), FinishReason::ToolCalls);

        let mut native = ResponseDecoder::new(ToolMode::Native, ParserConfig::default());
        let mut b = Vec::new();
        native.text("Sure. ", &mut b);
        for (name, args) in [(Some("f"), ""), (None, "{\"x\": "), (None, "1}")] {
            let delta = ToolCallDelta {
                index: Some(0),
                id: name.map(|_| "call_0".to_owned()),
                kind: None,
                function: Some(FunctionDelta {
                    name: name.map(Into::into),
                    arguments: Some(args.into()),
                }),
            };
            native.tool_call(&delta, &mut b);
        }
        native.finish_reason(FinishReason::ToolCalls);
        assert_eq!(native.finish(&mut b), FinishReason::ToolCalls);
        assert_eq!(calls_and_text(&a), calls_and_text(&b));
        assert_eq!(a.last(), b.last());
    }

    #[test]
    fn a_cut_off_call_finishes_with_length() {
        let mut d = ResponseDecoder::new(ToolMode::Prompt, ParserConfig::default());
        let mut ev = Vec::new();
        d.text("<tool_call>{\"name\": \"f\", \"argum", &mut ev);
        d.finish_reason(FinishReason::Length);
        assert_eq!(d.finish(&mut ev), FinishReason::Length);
        assert!(!ev.iter().any(|e| matches!(e, ModelEvent::CallStart { .. })));
    }

    #[test]
    fn native_mode_does_not_parse_text() {
        let mut d = ResponseDecoder::new(ToolMode::Native, ParserConfig::default());
        let mut ev = Vec::new();
        d.text("<tool_call>{\"name\": \"f\"}</tool_call>", &mut ev);
        assert_eq!(d.finish(&mut ev), FinishReason::Stop);
        assert_eq!(
            calls_and_text(&ev).0,
            "<tool_call>{\"name\": \"f\"}</tool_call>"
        );
    }

    #[test]
    fn verbatim_mode_numbers_text_and_native_calls_together() {
        let mut d = ResponseDecoder::new(ToolMode::Verbatim, ParserConfig::default());
        let mut ev = Vec::new();
        d.text("<tool_call>{\"name\": \"a\"}</tool_call>", &mut ev);
        let delta = ToolCallDelta {
            index: Some(0),
            id: Some("n".into()),
            kind: None,
            function: Some(FunctionDelta {
                name: Some("b".into()),
                arguments: Some("{}".into()),
            }),
        };
        d.tool_call(&delta, &mut ev);
        d.finish(&mut ev);
        let (_, calls) = calls_and_text(&ev);
        assert_eq!(
            calls,
            vec![(0, "a".into(), "{}".into()), (1, "b".into(), "{}".into())]
        );
    }

    #[test]
    fn a_native_call_cut_by_the_token_limit_never_goes_out() {
        // Issue 13 item 4: id/name, `{"loc`, then finish_reason "length".
        let mut d = ResponseDecoder::new(ToolMode::Native, ParserConfig::default());
        let mut ev = Vec::new();
        for (id, name, args) in [
            (Some("c1"), Some("get_weather"), ""),
            (None, None, "{\"loc"),
        ] {
            let delta = ToolCallDelta {
                index: Some(0),
                id: id.map(Into::into),
                kind: None,
                function: Some(FunctionDelta {
                    name: name.map(Into::into),
                    arguments: Some(args.into()),
                }),
            };
            d.tool_call(&delta, &mut ev);
        }
        assert!(ev.is_empty(), "{ev:?}");
        d.finish_reason(FinishReason::Length);
        assert_eq!(d.finish(&mut ev), FinishReason::Length);
        assert!(
            !ev.iter().any(|e| matches!(
                e,
                ModelEvent::CallStart { .. }
                    | ModelEvent::CallArgs { .. }
                    | ModelEvent::CallEnd { .. }
            )),
            "{ev:?}"
        );
        assert!(ev.iter().any(|e| matches!(e, ModelEvent::Malformed { .. })));
    }
}
