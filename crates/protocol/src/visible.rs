//! The visible prefix (seed 000): what a user is shown of a response. Text up to the first call
//! markup that is not handed out as a call — a malformed call, or any call in a round sent
//! without tools — is the answer; the markup and what follows it stay in the raw text (the
//! transcript and the log) but never reach stdout or a client's `content`.

use crate::parser::{ModelEvent, ParseError, Parser, ParserConfig, Sink};

/// The visible prefix of a decoded response, as it streams. It keeps only how much of the text
/// is visible, not a copy of it: whoever needs the answer holds the whole text anyway (a
/// [`crate::ModelResponse`]), and a second copy doubled a collected response's memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VisiblePrefix {
    /// Bytes of text shown so far.
    len: usize,
    cut: bool,
}

impl VisiblePrefix {
    /// Feeds one decoded event; returns the part of it the user sees as text (`None`: nothing).
    pub fn shown<'a>(&mut self, event: &'a ModelEvent) -> Option<&'a str> {
        match event {
            ModelEvent::Malformed { .. } => {
                self.cut();
                None
            }
            ModelEvent::Text { text } => self.push_text(text).then_some(text.as_str()),
            _ => None,
        }
    }

    /// A text delta; whether the user sees it (not after cut markup).
    pub fn push_text(&mut self, text: &str) -> bool {
        if self.cut {
            return false;
        }
        self.len += text.len();
        true
    }

    /// Call markup that is not handed out as a call: nothing after it is shown.
    pub fn cut(&mut self) {
        self.cut = true;
    }

    /// Whether markup was cut (the text seen so far is all the user gets).
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// The visible part of `text`, the concatenation of every text delta fed so far (and any
    /// after the cut): everything shown, without the whitespace before cut markup.
    pub fn answer<'t>(&self, text: &'t str) -> &'t str {
        let shown = text.get(..self.len).unwrap_or(text);
        if self.cut {
            shown.trim_end()
        } else {
            shown
        }
    }
}

/// The text of a round sent without tools (the finalization round), where the upstream leaves
/// call markup in the text: parsed here, so a call the model writes anyway is cut from what the
/// user sees, and noticed.
pub struct ToolFreeText {
    parser: Parser,
    seen: Seen,
}

#[derive(Default)]
struct Seen {
    text: String,
    called: bool,
}

impl ToolFreeText {
    pub fn new(config: ParserConfig) -> Self {
        ToolFreeText {
            parser: Parser::new(config),
            seen: Seen::default(),
        }
    }

    /// A text delta: the events the user sees (text before any call markup, and reasoning).
    pub fn push(&mut self, delta: &str) -> Vec<ModelEvent> {
        let mut out = Vec::new();
        let mut sink = Shown {
            seen: &mut self.seen,
            out: &mut out,
        };
        self.parser.push(delta, &mut sink);
        out
    }

    /// The end of the response: text the parser still held.
    pub fn finish(&mut self) -> Vec<ModelEvent> {
        let mut out = Vec::new();
        let mut sink = Shown {
            seen: &mut self.seen,
            out: &mut out,
        };
        self.parser.finish(&mut sink);
        out
    }

    /// Whether the model wrote call markup (a call or a broken one).
    pub fn called(&self) -> bool {
        self.seen.called
    }

    /// The visible text before any call markup, trimmed.
    pub fn answer(&self) -> &str {
        self.seen.text.trim()
    }
}

struct Shown<'a> {
    seen: &'a mut Seen,
    out: &'a mut Vec<ModelEvent>,
}

impl Sink for Shown<'_> {
    fn text(&mut self, text: &str) {
        if self.seen.called || text.is_empty() {
            return;
        }
        self.seen.text.push_str(text);
        self.out.push(ModelEvent::Text {
            text: text.to_owned(),
        });
    }

    fn reasoning(&mut self, text: &str) {
        if !text.is_empty() {
            self.out.push(ModelEvent::Reasoning {
                text: text.to_owned(),
            });
        }
    }

    fn call_start(&mut self, _index: usize, _id: &str, _name: &str) {
        self.seen.called = true;
    }

    fn call_args(&mut self, _index: usize, _fragment: &str) {}

    fn call_end(&mut self, _index: usize) {}

    fn error(&mut self, _error: ParseError) {
        self.seen.called = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::ErrorKind;

    fn text(t: &str) -> ModelEvent {
        ModelEvent::Text { text: t.into() }
    }

    #[test]
    fn text_after_a_malformed_call_is_not_shown() {
        let mut v = VisiblePrefix::default();
        assert_eq!(v.shown(&text("final ")), Some("final "));
        let malformed = ModelEvent::Malformed {
            error: ParseError {
                kind: ErrorKind::Malformed,
                raw: "{bad2".into(),
                reason: crate::parser::ParseProblem::MissingName,
            },
        };
        assert_eq!(v.shown(&malformed), None);
        assert_eq!(v.shown(&text("<tool_call>{bad2")), None);
        assert!(v.is_cut());
        assert_eq!(v.answer("final <tool_call>{bad2"), "final");
        let mut clean = VisiblePrefix::default();
        clean.shown(&text("all of it \n"));
        assert_eq!(clean.answer("all of it \n"), "all of it \n");
    }

    #[test]
    fn a_tool_free_round_cuts_call_markup() {
        let mut t = ToolFreeText::new(ParserConfig::default());
        let mut shown = String::new();
        for chunk in [
            "The answer is 4.\n<tool_",
            "use>{\"name\": \"echo\", \"arguments\": {}}</tool_use> more",
        ] {
            for e in t.push(chunk) {
                if let ModelEvent::Text { text } = e {
                    shown.push_str(&text);
                }
            }
        }
        for e in t.finish() {
            if let ModelEvent::Text { text } = e {
                shown.push_str(&text);
            }
        }
        assert!(t.called());
        assert_eq!(shown, "The answer is 4.\n");
        assert_eq!(t.answer(), "The answer is 4.");
        let mut plain = ToolFreeText::new(ParserConfig::default());
        let shown: Vec<ModelEvent> = plain
            .push("just text")
            .into_iter()
            .chain(plain.finish())
            .collect();
        assert_eq!(shown, vec![text("just text")]);
        assert!(!plain.called());
    }
}
