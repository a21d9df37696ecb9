//! `toolbridge parse`: run the streaming parser over JSON lines.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use toolbridge_protocol::parser::{
    Event, EventLog, ParseError, ParseOutput, Parser, ParserConfig, Tee,
};

/// Parse model outputs for tool calls.
///
/// Reads JSON lines on standard input, each `{"text": "…", "chunks": ["…", …], "tools": ["name", …]}`
/// (`chunks` and `tools` optional). When `chunks` is given it must concatenate to `text`, and the
/// chunks are fed to the streaming parser one by one; `tools` are the declared tool names for that
/// line and override `--tools`; with no declared names any name is accepted.
///
/// Writes one JSON line per input line: `{"calls": [{"name", "arguments"}], "visible", "reasoning",
/// "errors": [{"kind", "raw", "reason"}]}` (plus `"events"` with `--events`). An input line that is
/// not valid gets `{"error": "…"}` instead, and the exit code is then 1.
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    text: String,
    #[serde(default)]
    chunks: Option<Vec<String>>,
    #[serde(default)]
    tools: Option<Vec<String>>,
}

#[derive(Serialize)]
struct Output<'a> {
    calls: Vec<OutCall<'a>>,
    visible: &'a str,
    reasoning: &'a str,
    errors: &'a [ParseError],
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<&'a [Event]>,
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
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.context("reading standard input")?;
        if line.trim().is_empty() {
            continue;
        }
        let rendered = match parse_line(&args, &line) {
            Ok(json) => json,
            Err(err) => {
                bad_lines += 1;
                serde_json::json!({ "error": format!("line {}: {err:#}", n + 1) }).to_string()
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
        ..ParserConfig::default()
    };
    let mut parser = Parser::new(config);
    let mut result = ParseOutput::default();
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
                arguments: RawValue::from_string(c.arguments.clone())
                    .context("parser produced invalid arguments JSON")?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let output = Output {
        calls,
        visible: &result.visible,
        reasoning: &result.reasoning,
        errors: &result.errors,
        events: args.events.then_some(recorder.0.as_slice()),
    };
    Ok(serde_json::to_string(&output)?)
}
