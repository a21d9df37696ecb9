//! `toolbridge parse`: run the streaming parser over JSON lines.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::HashMap;

use toolbridge_protocol::parser::{
    Dialect, EventLog, ModelEvent, ModelResponse, ParseError, Parser, ParserConfig, Tee,
};

/// Parse model outputs for tool calls.
///
/// Reads JSON lines on standard input, each `{"text": "…", "chunks": ["…", …], "tools": ["name", …],
/// "dialect": "…", "reasoning_open": true, "schemas": {"tool": {…}}}` (all but `text` optional).
/// When `chunks` is given it must concatenate to `text`, and the chunks are fed to the streaming
/// parser one by one; `tools` are the declared tool names for that line and override `--tools`;
/// with no declared names any name is accepted. `dialect` and `reasoning_open` override
/// `--dialect` and `--reasoning-open` for that line; `schemas` (tool name → parameters JSON
/// Schema) type the values of the qwen3-coder and glm45 dialects.
///
/// Writes one JSON line per input line: `{"calls": [{"name", "arguments"}], "visible", "reasoning",
/// "errors": [{"kind", "raw", "reason"}]}` (plus `"events"` with `--events`); `arguments` is the
/// call's JSON object, written compactly so every output is exactly one line. An input line that is
/// not valid (not JSON of that shape, or not UTF-8) gets `{"error": "…"}` instead, the lines after it
/// are still parsed, and the exit code is then 1.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Declared tool names (comma-separated); calls to other names are malformed.
    #[arg(long, value_delimiter = ',', value_name = "NAME,NAME…")]
    tools: Option<Vec<String>>,
    /// Also print the events (visible-text deltas, reasoning, call start/arguments/end, errors) in
    /// the order the parser emitted them.
    #[arg(long)]
    events: bool,
    /// Do not treat fenced JSON as calls.
    #[arg(long)]
    no_fences: bool,
    /// Do not separate `<think>` reasoning.
    #[arg(long)]
    no_think: bool,
    /// The tool-call format to read: hermes (default), llama3-json, pythonic, mistral,
    /// qwen3-coder, deepseek-v3, glm45, kimi-k2, gpt-oss, granite, phi4-mini.
    #[arg(long, value_name = "NAME", default_value = "hermes")]
    dialect: Dialect,
    /// The reply begins inside reasoning (the chat template opened `<think>`): the text up to
    /// the first `</think>` is reasoning.
    #[arg(long)]
    reasoning_open: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    text: String,
    #[serde(default)]
    chunks: Option<Vec<String>>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    dialect: Option<Dialect>,
    #[serde(default)]
    reasoning_open: Option<bool>,
    #[serde(default)]
    schemas: HashMap<String, serde_json::Value>,
}

#[derive(Serialize)]
struct Output<'a> {
    calls: Vec<OutCall<'a>>,
    visible: &'a str,
    reasoning: &'a str,
    errors: &'a [ParseError],
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<&'a [ModelEvent]>,
}

#[derive(Serialize)]
struct OutCall<'a> {
    name: &'a str,
    arguments: Box<RawValue>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut bad_lines = 0usize;
    let mut input = stdin.lock();
    let mut bytes = Vec::new();
    let mut n = 0usize;
    loop {
        bytes.clear();
        if input
            .read_until(b'\n', &mut bytes)
            .context("reading standard input")?
            == 0
        {
            break;
        }
        n += 1;
        let raw = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        // A line that is not UTF-8 is one bad line, not the end of the input.
        let rendered = match std::str::from_utf8(raw) {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => parse_line(&args, line),
            Err(e) => Err(anyhow::anyhow!("not valid UTF-8 ({e})")),
        };
        let rendered = match rendered {
            Ok(json) => json,
            Err(err) => {
                bad_lines += 1;
                serde_json::json!({ "error": format!("line {n}: {err:#}") }).to_string()
            }
        };
        writeln!(out, "{rendered}").context("writing standard output")?;
        out.flush().context("writing standard output")?;
    }
    Ok(if bad_lines > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn parse_line(args: &Args, line: &str) -> anyhow::Result<String> {
    let input: Input = serde_json::from_str(line).context("not a valid input line")?;
    let config = ParserConfig {
        tools: input.tools.clone().or_else(|| args.tools.clone()),
        fences: !args.no_fences,
        think: !args.no_think,
        dialect: input.dialect.unwrap_or(args.dialect),
        reasoning_open: input.reasoning_open.unwrap_or(args.reasoning_open),
        schemas: input.schemas.clone(),
        ..ParserConfig::default()
    };
    let mut parser = Parser::new(config);
    let mut result = ModelResponse::default();
    let mut recorder = EventLog::default();
    let mut sink = Tee(&mut result, &mut recorder);
    match &input.chunks {
        Some(chunks) => {
            let joined: String = chunks.concat();
            anyhow::ensure!(
                joined == input.text,
                "`chunks` do not concatenate to `text`"
            );
            for chunk in chunks {
                parser.push(chunk, &mut sink);
            }
        }
        None => parser.push(&input.text, &mut sink),
    }
    parser.finish(&mut sink);
    let calls = result
        .calls
        .iter()
        .map(|c| {
            Ok(OutCall {
                name: &c.name,
                arguments: RawValue::from_string(compact(&c.arguments))
                    .context("parser produced invalid arguments JSON")?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let output = Output {
        calls,
        visible: &result.text,
        reasoning: &result.reasoning,
        errors: &result.errors,
        events: args.events.then_some(recorder.0.as_slice()),
    };
    Ok(serde_json::to_string(&output)?)
}

/// The JSON text without the whitespace between its tokens, so it fits on one line; strings and
/// numbers are kept byte for byte (raw newlines can only be whitespace, as JSON strings escape
/// theirs).
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn compact_drops_whitespace_between_tokens_only() {
        assert_eq!(
            compact("{\n  \"a b\": [1,\n 2.50],\r\n\t\"c\": \"x\\\" \\n y\"\n}"),
            "{\"a b\":[1,2.50],\"c\":\"x\\\" \\n y\"}"
        );
    }
}
