//! The malformed-call retry policy (seed 000; docs/src/agent.md, "The loop"), one for the agent and
//! the gateway.
//!
//! A response whose tool call did not parse, and that holds no good call, is asked again with the
//! seed's retry message in the answering arm's call tag (for another dialect, ours in its call
//! format), at most [`MAX_RETRIES`] times per turn. A call cut off by the token limit
//! (`finish_reason: length`) is never retried: the same limit would cut it again. When the policy gives up, the visible prefix (see [`crate::visible`]) is
//! the answer. Pure: the caller sends the requests.

use crate::parser::{ErrorKind, ParseError};
use crate::texts::{self, CallFormat};
use crate::types::{FinishReason, Message};

/// Retries after malformed calls, per turn (seed 000: twice).
pub const MAX_RETRIES: usize = 2;

/// What the policy looks at in a response.
#[derive(Clone, Copy, Debug)]
pub struct Attempt<'a> {
    /// The response's raw text (malformed markup included).
    pub text: &'a str,
    /// Whether it holds at least one good call.
    pub has_calls: bool,
    /// The calls that did not parse, in order.
    pub errors: &'a [ParseError],
    pub finish: Option<FinishReason>,
}

/// The next attempt: what to append to the conversation before asking again.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryStep {
    /// 1 for the first retry.
    pub attempt: usize,
    /// The parse error as the retry message states it.
    pub reason: String,
    /// The model's raw reply, then the retry message (a user message).
    pub messages: Vec<Message>,
}

/// What to do with a response.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Nothing malformed, or a good call beside it: the response stands.
    Accept,
    /// Ask again.
    Retry(RetryStep),
    /// Malformed and no retry left (or cut by the token limit): the visible prefix is the answer.
    GiveUp { reason: String },
}

/// Counts the retries of one turn (plain data: it is part of a stored run's state).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetryPolicy {
    max: usize,
    used: usize,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new(MAX_RETRIES)
    }
}

impl RetryPolicy {
    /// A policy allowing `max` retries (0: none).
    pub fn new(max: usize) -> Self {
        RetryPolicy { max, used: 0 }
    }

    /// Retries given so far.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Judges a response; a retry counts against the budget. The retry message teaches `format`,
    /// the answering arm's (a [`CallTag`](crate::texts::CallTag) is hermes with that tag).
    pub fn judge(&mut self, response: &Attempt<'_>, format: impl Into<CallFormat>) -> Verdict {
        let Some(problem) = response.errors.first() else {
            return Verdict::Accept;
        };
        if response.has_calls {
            return Verdict::Accept;
        }
        let reason = reason(problem);
        if self.used >= self.max || response.finish == Some(FinishReason::Length) {
            return Verdict::GiveUp { reason };
        }
        self.used += 1;
        let messages = vec![
            Message::assistant(response.text),
            Message::user(format.into().retry_message(&reason)),
        ];
        Verdict::Retry(RetryStep {
            attempt: self.used,
            reason,
            messages,
        })
    }
}

/// The parse error as the retry message states it.
fn reason(problem: &ParseError) -> String {
    match problem.kind {
        ErrorKind::Truncated => texts::RETRY_REASON_TRUNCATED.to_owned(),
        ErrorKind::Malformed => problem.reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use crate::parser::ParseProblem;
    use crate::texts::CallTag;

    fn malformed() -> Vec<ParseError> {
        vec![ParseError {
            kind: ErrorKind::Malformed,
            raw: "{bad".into(),
            reason: ParseProblem::Json {
                detail: "expected value".into(),
            },
        }]
    }

    fn attempt<'a>(errors: &'a [ParseError], finish: Option<FinishReason>) -> Attempt<'a> {
        Attempt {
            text: "final <tool_use>{bad",
            has_calls: false,
            errors,
            finish,
        }
    }

    #[test]
    fn two_retries_in_the_arms_tag_then_give_up() {
        let errors = malformed();
        let mut policy = RetryPolicy::default();
        for n in 1..=2 {
            let Verdict::Retry(step) = policy.judge(&attempt(&errors, None), CallTag::ToolUse)
            else {
                panic!("retry {n} expected");
            };
            assert_eq!(step.attempt, n);
            assert_eq!(
                step.messages,
                vec![
                    Message::assistant("final <tool_use>{bad"),
                    Message::user(texts::retry_message("expected value", CallTag::ToolUse)),
                ]
            );
            assert!(texts::retry_message("x", CallTag::ToolUse).contains("Your <tool_use> JSON"));
        }
        assert_eq!(
            policy.judge(&attempt(&errors, None), CallTag::ToolUse),
            Verdict::GiveUp {
                reason: "expected value".into()
            }
        );
    }

    #[test]
    fn good_calls_clean_replies_and_length_cuts_are_not_retried() {
        let errors = malformed();
        let mut policy = RetryPolicy::default();
        assert_eq!(
            policy.judge(&attempt(&[], None), CallTag::ToolCall),
            Verdict::Accept
        );
        let with_call = Attempt {
            has_calls: true,
            ..attempt(&errors, None)
        };
        assert_eq!(policy.judge(&with_call, CallTag::ToolCall), Verdict::Accept);
        let cut = [ParseError {
            kind: ErrorKind::Truncated,
            raw: "{\"na".into(),
            reason: ParseProblem::EndedInside,
        }];
        assert!(matches!(
            policy.judge(
                &attempt(&cut, Some(FinishReason::Length)),
                CallTag::ToolCall
            ),
            Verdict::GiveUp { .. }
        ));
        assert_eq!(policy.used(), 0);
        let Verdict::Retry(step) = policy.judge(&attempt(&cut, None), CallTag::ToolCall) else {
            panic!("a response that ended inside a call is asked again");
        };
        assert_eq!(step.reason, texts::RETRY_REASON_TRUNCATED);
        assert!(matches!(
            RetryPolicy::new(0).judge(&attempt(&errors, None), CallTag::ToolCall),
            Verdict::GiveUp { .. }
        ));
    }
}
