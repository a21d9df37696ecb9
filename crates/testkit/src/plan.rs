//! Turns a scripted [`Reply`] and the request into the exact output to send.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::Reply;

/// Which API a request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    OpenAi,
    Anthropic,
}

/// What the request asked for that shapes the answer.
#[derive(Clone, Debug)]
pub(crate) struct RequestCtx {
    pub(crate) model: String,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    pub(crate) stops: Vec<String>,
    /// A per-response number used to build ids.
    pub(crate) seq: u64,
    pub(crate) created: u64,
}

static SEQ: AtomicU64 = AtomicU64::new(1);

impl RequestCtx {
    pub(crate) fn new(endpoint: Endpoint, body: &Value) -> Self {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model")
            .to_owned();
        let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        let include_usage = body
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true);
        let stop_field = match endpoint {
            Endpoint::OpenAi => "stop",
            Endpoint::Anthropic => "stop_sequences",
        };
        let stops = match body.get(stop_field) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        RequestCtx {
            model,
            stream,
            include_usage,
            stops,
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            created,
        }
    }
}

/// The output actually sent, after `stop` and `cut_at` were applied.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    pub(crate) reasoning: String,
    pub(crate) text: String,
    pub(crate) tool_calls: Vec<(String, String)>,
    /// In OpenAI's vocabulary ("stop", "length", "tool_calls", …).
    pub(crate) finish: String,
    /// The stop string that ended the text, if one did.
    pub(crate) stop_sequence: Option<String>,
    pub(crate) chunk_size: usize,
    pub(crate) usage: (u64, u64),
}

impl Plan {
    pub(crate) fn new(reply: &Reply, stops: &[String]) -> Plan {
        let chunk_size = if reply.chunk_size == 0 {
            8
        } else {
            reply.chunk_size
        };
        let mut text = reply.text.clone();
        let mut tool_calls = reply.tool_calls.clone();
        let mut finish = reply.finish_reason.clone().unwrap_or_else(|| {
            if reply.tool_calls.is_empty() {
                "stop".to_owned()
            } else {
                "tool_calls".to_owned()
            }
        });
        let mut stop_sequence = None;
        if !reply.ignore_stop {
            if let Some((pos, matched)) = first_stop(&text, stops) {
                text.truncate(pos);
                tool_calls.clear();
                finish = "stop".to_owned();
                stop_sequence = Some(matched);
            }
        }
        if let Some(limit) = reply.cut_at {
            let total = text.len() + tool_calls.iter().map(|(_, a)| a.len()).sum::<usize>();
            // A stop string that ended the output exactly at the limit wins.
            if limit < total || (limit == total && stop_sequence.is_none()) {
                cut(&mut text, &mut tool_calls, limit);
                finish = "length".to_owned();
                stop_sequence = None;
            }
        }
        Plan {
            reasoning: reply.reasoning.clone(),
            text,
            tool_calls,
            finish,
            stop_sequence,
            chunk_size,
            usage: reply.usage.unwrap_or((10, 5)),
        }
    }

    /// Anthropic's `stop_reason` for this plan.
    pub(crate) fn anthropic_stop_reason(&self) -> String {
        if self.stop_sequence.is_some() {
            return "stop_sequence".to_owned();
        }
        match self.finish.as_str() {
            "stop" => "end_turn",
            "tool_calls" => "tool_use",
            "length" => "max_tokens",
            other => other,
        }
        .to_owned()
    }
}

/// The earliest occurrence of any non-empty stop string in `text`.
fn first_stop(text: &str, stops: &[String]) -> Option<(usize, String)> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()).map(|pos| (pos, s)))
        .min_by_key(|(pos, _)| *pos)
        .map(|(pos, s)| (pos, s.clone()))
}

/// Keeps the first `limit` bytes of text followed by the arguments of each call
/// (at char boundaries); calls starting at or after the limit are dropped.
fn cut(text: &mut String, tool_calls: &mut Vec<(String, String)>, limit: usize) {
    if limit < text.len() {
        let end = floor_char_boundary(text, limit);
        text.truncate(end);
        tool_calls.clear();
        return;
    }
    let mut remaining = limit - text.len();
    let mut keep = 0;
    for (_, args) in tool_calls.iter_mut() {
        if remaining == 0 {
            break;
        }
        keep += 1;
        if remaining < args.len() {
            let end = floor_char_boundary(args, remaining);
            args.truncate(end);
            break;
        }
        remaining -= args.len();
    }
    tool_calls.truncate(keep);
}

/// The largest char boundary of `s` that is `<= index`.
pub(crate) fn floor_char_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut i = index;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Splits `s` into pieces of at most `size` bytes at char boundaries (a single
/// char longer than `size` makes a piece of its own). Empty input gives no piece.
pub(crate) fn pieces(s: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = floor_char_boundary(rest, size);
        if end == 0 {
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn pieces_respect_char_boundaries() {
        assert_eq!(pieces("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(pieces("", 4), Vec::<&str>::new());
        assert_eq!(pieces("ééé", 3), vec!["é", "é", "é"]);
        assert_eq!(pieces("日本", 1), vec!["日", "本"]);
    }

    #[test]
    fn stop_truncates_and_drops_calls() {
        let reply = Reply::text("hello END world").with_tool_call("f", "{}");
        let plan = Plan::new(&reply, &["END".into(), "world".into()]);
        assert_eq!(plan.text, "hello ");
        assert!(plan.tool_calls.is_empty());
        assert_eq!(plan.finish, "stop");
        assert_eq!(plan.stop_sequence.as_deref(), Some("END"));
        assert_eq!(plan.anthropic_stop_reason(), "stop_sequence");

        let ignored = Plan::new(&reply.clone().ignoring_stop(), &["END".into()]);
        assert_eq!(ignored.text, "hello END world");
        assert_eq!(ignored.finish, "tool_calls");
    }

    #[test]
    fn cut_in_the_middle_of_a_call() {
        let reply = Reply::text("abc")
            .with_tool_call("f", r#"{"a":1}"#)
            .with_tool_call("g", "{}")
            .with_cut_at(6);
        let plan = Plan::new(&reply, &[]);
        assert_eq!(plan.text, "abc");
        assert_eq!(plan.tool_calls, vec![("f".into(), r#"{"a"#.into())]);
        assert_eq!(plan.finish, "length");
        assert_eq!(plan.anthropic_stop_reason(), "max_tokens");

        let at_text_end = Plan::new(
            &Reply::text("abc").with_tool_call("f", "{}").with_cut_at(3),
            &[],
        );
        assert!(at_text_end.tool_calls.is_empty());
        assert_eq!(at_text_end.finish, "length");

        let beyond = Plan::new(&Reply::text("abc").with_cut_at(10), &[]);
        assert_eq!(beyond.text, "abc");
        assert_eq!(beyond.finish, "stop");
    }
}
