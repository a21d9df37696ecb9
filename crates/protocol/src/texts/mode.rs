//! The texts of the tool modes: prompt mode's preamble, call blocks and result wrappers, the
//! verbatim block and nudge, the retry message, and the escaping that keeps untrusted output
//! inside its wrapper.

use super::fill;
use super::reference::{
    PREAMBLE_HEADER, PREAMBLE_TOOL_TEMPLATE, RETRY_TEMPLATE, STOP_SEQUENCE, TOOL_ERROR_TEMPLATE,
    TOOL_RESULT_TEMPLATE,
};
use crate::types::ToolSpec;

/// Ours: the header of the verbatim-mode tool block (seed 003 asks for "a short instructional header
/// followed by a fenced json block"). Placed in the stable reference zone.
pub const VERBATIM_HEADER: &str = "## Tool definitions\nThese are the tools available in this conversation, exactly as they are declared to the API (OpenAI function format). Their names and parameter schemas are authoritative.";

/// Ours: the verbatim-mode nudge placed near the dialogue tail (seed 003's behavioural half), for the
/// `tool_call` tag.
pub const VERBATIM_NUDGE: &str = "To call a tool, write exactly <tool_call>{\"name\": \"<tool>\", \"arguments\": {...}}</tool_call> with a tool from the tool definitions above, then stop and wait for its result. If no tool is needed, answer directly.";

/// Ours: appended after the preamble in prompt mode when `tool_choice` is `required` (prompt mode
/// cannot force a call; it can only ask).
pub const PROMPT_REQUIRED_NOTE: &str = "You must call one of the tools above in this reply.";

/// Ours: appended after the preamble in prompt mode when `tool_choice` names one function;
/// placeholder `<TOOL_NAME>`. Only that tool is listed in the preamble.
pub const PROMPT_NAMED_NOTE: &str = "You must call the tool <TOOL_NAME> in this reply.";

/// The tag a prompt-mode model is taught to write. The parser accepts both whatever is taught.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CallTag {
    /// `<tool_call>…</tool_call>` (seed 000), the default.
    #[default]
    ToolCall,
    /// `<tool_use>…</tool_use>` (seed 002).
    ToolUse,
}

impl CallTag {
    pub fn name(self) -> &'static str {
        match self {
            CallTag::ToolCall => "tool_call",
            CallTag::ToolUse => "tool_use",
        }
    }

    /// The stop sequence a provider gets in prompt mode: the close tag.
    pub fn stop_sequence(self) -> &'static str {
        match self {
            CallTag::ToolCall => STOP_SEQUENCE,
            CallTag::ToolUse => "</tool_use>",
        }
    }

    pub fn parse(s: &str) -> Option<CallTag> {
        match s {
            "tool_call" => Some(CallTag::ToolCall),
            "tool_use" => Some(CallTag::ToolUse),
            _ => None,
        }
    }

    /// Rewrites the `<tool_call>`/`</tool_call>` markers of a seed text for this tag.
    fn retag(self, text: &str) -> String {
        match self {
            CallTag::ToolCall => text.to_owned(),
            CallTag::ToolUse => text.replace("tool_call>", "tool_use>"),
        }
    }
}

/// The compact JSON of a tool's schema as the preamble shows it (`{}` when the tool has none).
pub fn schema_json(tool: &ToolSpec) -> String {
    match &tool.parameters {
        Some(p) => serde_json::to_string(p).unwrap_or_else(|_| "{}".to_owned()),
        None => "{}".to_owned(),
    }
}

/// One tool's preamble entry.
pub fn preamble_tool_entry(tool: &ToolSpec) -> String {
    let schema = schema_json(tool);
    fill(
        PREAMBLE_TOOL_TEMPLATE,
        &[
            ("<TOOL_NAME>", &tool.name),
            ("<TOOL_DESCRIPTION>", &tool.description),
            ("<JSON_SCHEMA>", &schema),
        ],
    )
}

/// The prompt-mode preamble for these tools: the seed's header, then one entry per tool separated by
/// blank lines, in the order given (so the same tool set renders byte-identically every time).
pub fn preamble(tools: &[ToolSpec], tag: CallTag) -> String {
    let mut out = tag.retag(PREAMBLE_HEADER);
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(&preamble_tool_entry(tool));
    }
    out
}

/// An assistant's call re-encoded as text for a prompt-mode history, in the preamble's format:
/// `<tool_call>{"name": "…", "arguments": …}</tool_call>`. Arguments that are not valid JSON (a
/// client's history can hold anything) are embedded as a JSON string rather than breaking the block.
pub fn call_block(name: &str, arguments: &str, tag: CallTag) -> String {
    let name = serde_json::to_string(name).unwrap_or_else(|_| "\"\"".to_owned());
    let trimmed = arguments.trim();
    let arguments = if trimmed.is_empty() {
        "{}".to_owned()
    } else if serde_json::from_str::<&serde_json::value::RawValue>(trimmed).is_ok() {
        trimmed.to_owned()
    } else {
        serde_json::to_string(arguments).unwrap_or_else(|_| "{}".to_owned())
    };
    let tag = tag.name();
    format!("<{tag}>{{\"name\": {name}, \"arguments\": {arguments}}}</{tag}>")
}

/// The verbatim-mode user item: the header and the provider-native tools array as a fenced JSON
/// block (pretty-printed, key order preserved, so the same tools give the same bytes).
pub fn verbatim_block(tools: &[ToolSpec]) -> String {
    let json = serde_json::to_string_pretty(tools).unwrap_or_else(|_| "[]".to_owned());
    format!("{VERBATIM_HEADER}\n\n```json\n{json}\n```")
}

/// The result of one tool call, as the next user-layer message holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolResultText<'a> {
    pub name: &'a str,
    pub output: &'a str,
    /// Renders the `<tool_error>` wrapper instead of `<tool_result>`.
    pub is_error: bool,
}

/// The seed's wrapper around one result, without the trailing "Continue from here." line.
fn wrapper(result: &ToolResultText<'_>) -> String {
    let name = escape_attribute(result.name);
    let output = escape_untrusted(result.output);
    let (template, slot) = if result.is_error {
        (TOOL_ERROR_TEMPLATE, "<PUBLIC_ERROR_OUTPUT>")
    } else {
        (TOOL_RESULT_TEMPLATE, "<UNTRUSTED_TOOL_OUTPUT>")
    };
    let full = fill(template, &[("<TOOL_NAME>", &name), (slot, &output)]);
    match full.strip_suffix(CONTINUE_LINE) {
        Some(head) => head.to_owned(),
        None => full,
    }
}

const CONTINUE_LINE: &str = "\nContinue from here.";

/// The user-layer message after one call: exactly the seed's `<tool_result>` (or `<tool_error>`)
/// wrapper followed by "Continue from here.".
pub fn tool_result_message(result: &ToolResultText<'_>) -> String {
    tool_results_message(std::slice::from_ref(result))
}

/// Several consecutive results merged into one user-layer message: the wrappers one after another,
/// then a single "Continue from here." (for one result this is exactly the seed's text).
pub fn tool_results_message(results: &[ToolResultText<'_>]) -> String {
    let mut out = String::new();
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&wrapper(r));
    }
    out.push_str(CONTINUE_LINE);
    out
}

/// The retry message after a malformed call, for the given parse error and tag.
pub fn retry_message(parse_error: &str, tag: CallTag) -> String {
    let template = tag.retag(RETRY_TEMPLATE);
    fill(&template, &[("<PARSE_ERROR>", parse_error)])
}

/// Prompt mode's own note for `tool_choice: required` or a named function.
pub fn prompt_choice_note(named: Option<&str>) -> String {
    match named {
        Some(name) => fill(PROMPT_NAMED_NOTE, &[("<TOOL_NAME>", name)]),
        None => PROMPT_REQUIRED_NOTE.to_owned(),
    }
}

/// The verbatim nudge for a tag.
pub fn verbatim_nudge(tag: CallTag) -> String {
    tag.retag(VERBATIM_NUDGE)
}

/// Tool output is untrusted data: text in it that imitates a closing wrapper tag must not close the
/// wrapper. Every `</tool_result` and `</tool_error` (in any letter case) gets a backslash after the
/// `<`, the way `</script>` is neutralised inside inline scripts; nothing else changes.
pub fn escape_untrusted(output: &str) -> std::borrow::Cow<'_, str> {
    escape_closers(output, &[b"tool_result", b"tool_error"])
}

/// [`escape_untrusted`] for other wrappers: every `</` followed by one of `closers` (tag names,
/// in any letter case) gets a backslash after the `<`.
pub(crate) fn escape_closers<'a>(output: &'a str, closers: &[&[u8]]) -> std::borrow::Cow<'a, str> {
    let bytes = output.as_bytes();
    let needs = |at: usize| {
        let rest = &bytes[at + 2..];
        closers
            .iter()
            .any(|c| rest.len() >= c.len() && rest[..c.len()].eq_ignore_ascii_case(c))
    };
    let mut hits = memchr::memmem::find_iter(bytes, b"</")
        .filter(|&i| needs(i))
        .peekable();
    if hits.peek().is_none() {
        return std::borrow::Cow::Borrowed(output);
    }
    let mut out = String::with_capacity(output.len() + 16);
    let mut last = 0;
    for i in hits {
        out.push_str(&output[last..i + 1]);
        out.push('\\');
        last = i + 1;
    }
    out.push_str(&output[last..]);
    std::borrow::Cow::Owned(out)
}

/// A tool name inside `name="…"`: quotes and angle brackets are escaped so the attribute cannot end
/// early. Declared names never contain them; this is for names that came from a model or client.
fn escape_attribute(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains(['"', '<', '>', '&']) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}
