//! Anthropic's server tools in their wire form, both ways: which dated tool types map onto which
//! built-ins, a finished built-in call as Anthropic's result block (`web_search_tool_result`,
//! `code_execution_tool_result`, `web_fetch_tool_result`), and such a block from a client's
//! history back into the text the model reads. Plain data transforms, no I/O.
//!
//! What a result carries: `code_execution_result` has `python_execute`'s output (stdout, stderr
//! and the value, as the tool renders them for the model) in `stdout` with `return_code` 0, or
//! in `stderr` with `return_code` 1 when the cell raised; its `content` (files) is empty. A
//! `web_search_result` is one hit of the search tool's output, with the hit's query and snippet
//! in `encrypted_content` (base64 JSON: opaque to clients, read back here when the history
//! returns, so the model sees its results again). A `web_fetch_result` holds the fetched text as
//! a plain-text `document`. A call that did not run, or failed as a whole, is the block's error
//! object with the nearest `error_code`.

use base64::Engine as _;
use serde_json::{json, Value};
use toolbridge_agent::CallStatus;
use toolbridge_protocol::texts;

use crate::responses::request::Hosted;

/// One of Anthropic's server tools this gateway runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ServerTool {
    /// `web_search_…` → `web_search` (+ `web_fetch`).
    WebSearch,
    /// `web_fetch_…` → `web_fetch`.
    WebFetch,
    /// `code_execution_…` → `python_execute`.
    CodeExecution,
}

impl ServerTool {
    /// The server tool a `tools[].type` names (`web_search_20250305` and any newer date).
    pub(crate) fn of_type(kind: &str) -> Option<ServerTool> {
        let dated = |prefix: &str| {
            kind.strip_prefix(prefix)
                .is_some_and(|date| !date.is_empty() && date.bytes().all(|b| b.is_ascii_digit()))
        };
        if dated("web_search_") {
            Some(ServerTool::WebSearch)
        } else if dated("web_fetch_") {
            Some(ServerTool::WebFetch)
        } else if dated("code_execution_") {
            Some(ServerTool::CodeExecution)
        } else {
            None
        }
    }

    /// The name a `server_tool_use` block gives it.
    pub(crate) fn wire_name(self) -> &'static str {
        match self {
            ServerTool::WebSearch => "web_search",
            ServerTool::WebFetch => "web_fetch",
            ServerTool::CodeExecution => "code_execution",
        }
    }

    pub(crate) fn of_wire_name(name: &str) -> Option<ServerTool> {
        match name {
            "web_search" => Some(ServerTool::WebSearch),
            "web_fetch" => Some(ServerTool::WebFetch),
            "code_execution" => Some(ServerTool::CodeExecution),
            _ => None,
        }
    }

    /// The built-in whose calls it shows.
    pub(crate) fn builtin(self) -> &'static str {
        match self {
            ServerTool::WebSearch => "web_search",
            ServerTool::WebFetch => "web_fetch",
            ServerTool::CodeExecution => "python_execute",
        }
    }

    /// The hosted tool it asks the run for.
    pub(crate) fn hosted(self) -> Hosted {
        match self {
            ServerTool::WebSearch => Hosted::WebSearch,
            ServerTool::WebFetch => Hosted::WebFetch,
            ServerTool::CodeExecution => Hosted::CodeInterpreter,
        }
    }

    fn result_type(self) -> &'static str {
        match self {
            ServerTool::WebSearch => "web_search_tool_result",
            ServerTool::WebFetch => "web_fetch_tool_result",
            ServerTool::CodeExecution => "code_execution_tool_result",
        }
    }
}

/// The `srvtoolu_…` id a client sees for one of the run's call ids (fixed, like `toolu_…`).
pub(crate) fn server_tool_use_id(id: &str) -> String {
    if id.starts_with("srvtoolu_") {
        return id.to_owned();
    }
    let rest = id.strip_prefix("call_").unwrap_or(id);
    let mut out = String::with_capacity(rest.len() + 9);
    out.push_str("srvtoolu_");
    out.extend(rest.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        }
    }));
    out
}

/// How many searches (or fetches) a call asks for: its `queries` (`urls`), else one.
pub(crate) fn requests_in(input: &Value, many: &str) -> u64 {
    input
        .get(many)
        .and_then(Value::as_array)
        .map_or(1, |a| a.len().max(1) as u64)
}

/// Whether a call with this status ran (and so counts in `usage.server_tool_use`).
pub(crate) fn ran(status: CallStatus) -> bool {
    matches!(status, CallStatus::Ok | CallStatus::ToolError)
}

/// A finished call as its result block. `now` is the Unix time (for `retrieved_at`).
pub(crate) fn result_block(
    tool: ServerTool,
    tool_use_id: &str,
    input: &Value,
    status: CallStatus,
    output: &str,
    now: i64,
) -> Value {
    let content = match tool {
        ServerTool::CodeExecution => match status {
            CallStatus::Ok => code_result(output, "", 0),
            // The cell raised (or the interpreter died): what the model was told is stderr.
            CallStatus::ToolError | CallStatus::Failed => code_result("", output, 1),
            other => json!({"type": "code_execution_tool_result_error",
                            "error_code": error_code(tool, other)}),
        },
        ServerTool::WebSearch => match status {
            CallStatus::Ok => Value::Array(
                parse_search(output)
                    .into_iter()
                    .map(|hit| {
                        json!({
                            "type": "web_search_result",
                            "url": hit.url,
                            "title": hit.title,
                            "encrypted_content": seal(&hit.query, &hit.snippet),
                            "page_age": null,
                        })
                    })
                    .collect(),
            ),
            other => json!({"type": "web_search_tool_result_error",
                            "error_code": error_code(tool, other)}),
        },
        ServerTool::WebFetch => match status {
            CallStatus::Ok => {
                let mut document = json!({
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": output},
                });
                if let Some(title) = page_title(output) {
                    document["title"] = json!(title);
                }
                json!({
                    "type": "web_fetch_result",
                    "url": first_url(input),
                    "content": document,
                    "retrieved_at": toolbridge_tools::workspace::rfc3339_utc(now),
                })
            }
            other => json!({"type": "web_fetch_tool_result_error",
                            "error_code": error_code(tool, other)}),
        },
    };
    json!({"type": tool.result_type(), "tool_use_id": tool_use_id, "content": content})
}

fn code_result(stdout: &str, stderr: &str, return_code: i32) -> Value {
    json!({"type": "code_execution_result", "stdout": stdout, "stderr": stderr,
           "return_code": return_code, "content": []})
}

/// The nearest of Anthropic's error codes for a call that did not give a result.
fn error_code(tool: ServerTool, status: CallStatus) -> &'static str {
    match (tool, status) {
        (_, CallStatus::InvalidArguments) => "invalid_tool_input",
        (ServerTool::CodeExecution, CallStatus::TimedOut) => "execution_time_exceeded",
        (ServerTool::CodeExecution, CallStatus::BudgetExhausted) => "too_many_requests",
        (_, CallStatus::BudgetExhausted) => "max_uses_exceeded",
        (ServerTool::WebFetch, CallStatus::ToolError) => "url_not_accessible",
        _ => "unavailable",
    }
}

fn first_url(input: &Value) -> &str {
    input
        .get("url")
        .and_then(Value::as_str)
        .or_else(|| input.get("urls")?.get(0)?.as_str())
        .unwrap_or_default()
}

/// The title line `web_fetch` starts a page with (`texts::WEB_FETCH_PAGE`), if it has one.
fn page_title(output: &str) -> Option<&str> {
    let (prefix, _) = texts::WEB_FETCH_PAGE.split_once("<TITLE>")?;
    let title = output.lines().next()?.strip_prefix(prefix)?.trim();
    (!title.is_empty()).then_some(title)
}

/// One hit of the search tool's output.
#[derive(Debug, PartialEq)]
struct Hit {
    query: String,
    title: String,
    url: String,
    snippet: String,
}

/// The hits of `web_search`'s output (`texts::search_header`, then `texts::search_result` per
/// hit; sections of several queries one blank line apart). Lines that are neither (a query
/// without results, a failed one) are skipped.
fn parse_search(output: &str) -> Vec<Hit> {
    let (pre, post) = texts::SEARCH_HEADER
        .split_once("<QUERY>")
        .unwrap_or((texts::SEARCH_HEADER, ""));
    let mut hits = Vec::new();
    let mut query = String::new();
    let mut lines = output.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(q) = line.strip_prefix(pre).and_then(|l| l.strip_suffix(post)) {
            query = q.to_owned();
            continue;
        }
        let Some(title) = numbered(line) else {
            continue;
        };
        let mut indented = || {
            let next = lines.peek()?.strip_prefix(INDENT)?.to_owned();
            lines.next();
            Some(next)
        };
        let url = indented().unwrap_or_default();
        let snippet = indented().unwrap_or_default();
        hits.push(Hit {
            query: query.clone(),
            title: title.to_owned(),
            url,
            snippet,
        });
    }
    hits
}

/// How `texts::SEARCH_RESULT` indents a hit's URL and snippet.
const INDENT: &str = "   ";

/// `N. TITLE` → `TITLE`.
fn numbered(line: &str) -> Option<&str> {
    let (n, title) = line.split_once(". ")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(title)
}

/// A hit's query and snippet as `encrypted_content`.
fn seal(query: &str, snippet: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(json!({"q": query, "s": snippet}).to_string())
}

/// What [`seal`] wrote (`None` for content some other server sealed).
fn unseal(sealed: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(sealed)
        .ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        value.get("q")?.as_str()?.to_owned(),
        value.get("s")?.as_str()?.to_owned(),
    ))
}

/// A result block of the history as the model reads it, and whether it is an error. `input` is
/// the input of the `server_tool_use` it answers.
pub(crate) fn replay(kind: &str, input: &Value, content: &Value) -> (String, bool) {
    let failed = || (texts::ERROR_FAILED.to_owned(), true);
    match kind {
        "code_execution_tool_result" => {
            if content.get("type").and_then(Value::as_str) != Some("code_execution_result") {
                return failed();
            }
            let field = |k: &str| content.get(k).and_then(Value::as_str).unwrap_or_default();
            let text = toolbridge_tools::python::render::join(&[
                field("stdout").to_owned(),
                field("stderr").to_owned(),
            ]);
            let code = content.get("return_code").and_then(Value::as_i64);
            (text, code.is_some_and(|c| c != 0))
        }
        "web_search_tool_result" => {
            let Some(results) = content.as_array() else {
                return failed();
            };
            let asked = input
                .get("query")
                .and_then(Value::as_str)
                .or_else(|| input.get("queries")?.get(0)?.as_str())
                .unwrap_or_default();
            if results.is_empty() {
                return (texts::search_no_results(asked), false);
            }
            // Hits of one query under one header, in order, as the tool wrote them.
            let mut sections: Vec<(String, Vec<String>)> = Vec::new();
            for hit in results {
                let field = |k: &str| hit.get(k).and_then(Value::as_str).unwrap_or_default();
                let (query, snippet) = unseal(field("encrypted_content"))
                    .unwrap_or_else(|| (asked.to_owned(), String::new()));
                if sections.last().is_none_or(|(q, _)| *q != query) {
                    sections.push((query, Vec::new()));
                }
                if let Some((_, lines)) = sections.last_mut() {
                    let n = lines.len() + 1;
                    lines.push(texts::search_result(
                        n,
                        field("title"),
                        field("url"),
                        &snippet,
                    ));
                }
            }
            let text = sections
                .iter()
                .map(|(q, lines)| format!("{}\n{}", texts::search_header(q), lines.join("\n")))
                .collect::<Vec<_>>()
                .join("\n\n");
            (text, false)
        }
        "web_fetch_tool_result" => {
            match content
                .get("content")
                .and_then(|d| d.get("source"))
                .and_then(|s| s.get("data"))
                .and_then(Value::as_str)
            {
                Some(text)
                    if content.get("type").and_then(Value::as_str) == Some("web_fetch_result") =>
                {
                    (text.to_owned(), false)
                }
                _ => failed(),
            }
        }
        _ => failed(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn dated_types_map_onto_the_built_ins() {
        assert_eq!(
            ServerTool::of_type("web_search_20250305"),
            Some(ServerTool::WebSearch)
        );
        assert_eq!(
            ServerTool::of_type("web_search_20260209"),
            Some(ServerTool::WebSearch)
        );
        assert_eq!(
            ServerTool::of_type("code_execution_20250825"),
            Some(ServerTool::CodeExecution)
        );
        assert_eq!(
            ServerTool::of_type("web_fetch_20250910"),
            Some(ServerTool::WebFetch)
        );
        assert_eq!(ServerTool::of_type("bash_20250124"), None);
        assert_eq!(ServerTool::of_type("web_search_"), None);
        assert_eq!(ServerTool::of_type("web_search_x"), None);
        assert_eq!(server_tool_use_id("call_ab.c"), "srvtoolu_ab_c");
        assert_eq!(
            toolbridge_tools::workspace::rfc3339_utc(0),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            toolbridge_tools::workspace::rfc3339_utc(1_756_117_800),
            "2025-08-25T10:30:00Z"
        );
    }

    #[test]
    fn search_output_becomes_results_and_reads_back_as_the_tool_wrote_it() {
        let output = format!(
            "{}\n{}\n{}\n\n{}\n\n{}\n{}",
            texts::search_header("rust async"),
            texts::search_result(1, "Async book", "https://example.org/1", "Futures."),
            texts::search_result(2, "Tokio", "https://example.org/2", ""),
            texts::search_no_results("nothing"),
            texts::search_header("otters"),
            texts::search_result(1, "Otters 1. 2", "https://example.org/o", "Cute."),
        );
        let block = result_block(
            ServerTool::WebSearch,
            "srvtoolu_1",
            &json!({"queries": ["rust async", "nothing", "otters"]}),
            CallStatus::Ok,
            &output,
            0,
        );
        assert_eq!(block["type"], "web_search_tool_result");
        let results = block["content"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0]["title"], "Async book");
        assert_eq!(results[1]["url"], "https://example.org/2");
        assert_eq!(results[2]["title"], "Otters 1. 2");
        let (text, is_error) = replay(
            "web_search_tool_result",
            &json!({"queries": ["rust async"]}),
            &block["content"],
        );
        assert!(!is_error);
        // The section without results is not in the blocks; the rest reads back exactly.
        assert_eq!(
            text,
            format!(
                "{}\n{}\n{}\n\n{}\n{}",
                texts::search_header("rust async"),
                texts::search_result(1, "Async book", "https://example.org/1", "Futures."),
                texts::search_result(2, "Tokio", "https://example.org/2", ""),
                texts::search_header("otters"),
                texts::search_result(1, "Otters 1. 2", "https://example.org/o", "Cute."),
            )
        );
    }

    #[test]
    fn code_and_fetch_results_read_back_to_the_tool_output() {
        let ok = result_block(
            ServerTool::CodeExecution,
            "srvtoolu_1",
            &json!({"code": "print(42)"}),
            CallStatus::Ok,
            "42",
            0,
        );
        assert_eq!(ok["content"]["stdout"], "42");
        assert_eq!(ok["content"]["return_code"], 0);
        assert_eq!(
            replay("code_execution_tool_result", &Value::Null, &ok["content"]),
            ("42".to_owned(), false)
        );
        let raised = result_block(
            ServerTool::CodeExecution,
            "srvtoolu_2",
            &json!({"code": "1/0"}),
            CallStatus::ToolError,
            "ZeroDivisionError",
            0,
        );
        assert_eq!(raised["content"]["stderr"], "ZeroDivisionError");
        assert_eq!(raised["content"]["return_code"], 1);
        assert_eq!(
            replay(
                "code_execution_tool_result",
                &Value::Null,
                &raised["content"]
            ),
            ("ZeroDivisionError".to_owned(), true)
        );
        let late = result_block(
            ServerTool::CodeExecution,
            "srvtoolu_3",
            &Value::Null,
            CallStatus::TimedOut,
            "",
            0,
        );
        assert_eq!(late["content"]["error_code"], "execution_time_exceeded");
        assert_eq!(
            replay("code_execution_tool_result", &Value::Null, &late["content"]),
            (texts::ERROR_FAILED.to_owned(), true)
        );
        let text = texts::web_fetch_page("A page", "http://a.example/", "Page text");
        let page = result_block(
            ServerTool::WebFetch,
            "srvtoolu_4",
            &json!({"urls": ["http://a.example/"]}),
            CallStatus::Ok,
            &text,
            0,
        );
        assert_eq!(page["content"]["url"], "http://a.example/");
        assert_eq!(page["content"]["content"]["title"], "A page");
        assert_eq!(page["content"]["content"]["source"]["data"], text);
        assert_eq!(
            replay("web_fetch_tool_result", &Value::Null, &page["content"]),
            (text, false)
        );
    }
}
