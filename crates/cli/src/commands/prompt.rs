//! `toolbridge prompt`: show exactly what a text tool mode adds to a request.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use toolbridge_protocol::mode::{encode, prompt_addition, EncodeOptions, ToolMode};
use toolbridge_protocol::parser::Dialect;
use toolbridge_protocol::texts::{self, CallTag};
use toolbridge_protocol::types::{ChatRequest, ToolChoice, ToolSpec};

/// Print what a tool mode adds to the prompt.
///
/// With `--tools FILE` (an OpenAI-style `tools` JSON array; `-` reads standard input) it prints
/// exactly the text the mode adds: in `prompt` mode the preamble appended to the system prompt; in
/// `verbatim` mode the in-band tool block (a user message placed after the system prompt), a blank
/// line, and the nudge appended to the last user message. With `--request FILE` (a whole Chat
/// Completions request body) it prints the request as the mode encodes it, as JSON. `--dialect`
/// teaches another model family's own call format (hermes is the reference protocol's), and a
/// request's history is written in it.
///
/// The output is byte-exact; a final newline is added only when writing to a terminal.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// An OpenAI-style tools array (JSON file, or `-` for standard input).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "request",
        conflicts_with = "request"
    )]
    tools: Option<PathBuf>,
    /// A whole Chat Completions request (JSON file, or `-`); prints the encoded request.
    #[arg(long, value_name = "FILE")]
    request: Option<PathBuf>,
    /// The tool mode to render.
    #[arg(long, default_value = "prompt", value_parser = parse_mode)]
    mode: ToolMode,
    /// The call tag the model is taught to write (hermes only).
    #[arg(long, value_parser = parse_tag)]
    tag: Option<CallTag>,
    /// The call format to teach (and to write the history in): hermes (default), llama3-json,
    /// pythonic, mistral, qwen3-coder, deepseek-v3, glm45, kimi-k2, gpt-oss, granite, phi4-mini.
    #[arg(long, value_name = "NAME", default_value = "hermes")]
    dialect: Dialect,
    /// The tool choice (`auto`, `required`, `none`, or a tool name); only with --tools.
    #[arg(long, value_name = "CHOICE", conflicts_with = "request")]
    tool_choice: Option<String>,
}

fn parse_mode(s: &str) -> Result<ToolMode, String> {
    match s.parse::<ToolMode>() {
        Ok(ToolMode::Prompt) => Ok(ToolMode::Prompt),
        Ok(ToolMode::Verbatim) => Ok(ToolMode::Verbatim),
        Ok(ToolMode::Native) => Ok(ToolMode::Native),
        Ok(ToolMode::Auto) => {
            Err("`auto` depends on the provider; choose prompt, verbatim or native".into())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn parse_tag(s: &str) -> Result<CallTag, String> {
    CallTag::parse(s).ok_or_else(|| format!("unknown tag `{s}` (expected tool_call or tool_use)"))
}

fn read_input(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

fn choice(s: Option<&str>) -> Option<ToolChoice> {
    s.map(|s| match s {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Named(name.to_owned()),
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.tag.is_some() && args.dialect != Dialect::Hermes {
        bail!(
            "--tag applies to the hermes dialect only (--dialect {} has its own markers)",
            args.dialect
        );
    }
    let options = EncodeOptions {
        tag: args.tag.unwrap_or_default(),
        dialect: args.dialect,
    };
    let format = options.format();
    let text = if let Some(path) = &args.request {
        let body = read_input(path)?;
        let request: ChatRequest = serde_json::from_str(&body).with_context(|| {
            format!("{} is not a valid Chat Completions request", path.display())
        })?;
        let encoded = encode(&request, args.mode, &options);
        serde_json::to_string_pretty(&encoded)?
    } else if let Some(path) = &args.tools {
        let body = read_input(path)?;
        let tools: Vec<ToolSpec> = serde_json::from_str(&body)
            .with_context(|| format!("{} is not a valid OpenAI tools array", path.display()))?;
        let choice = choice(args.tool_choice.as_deref());
        if let Some(ToolChoice::Named(name)) = &choice {
            if !tools.iter().any(|t| &t.name == name) {
                bail!("--tool-choice names `{name}`, which is not in the tools array");
            }
        }
        match args.mode {
            ToolMode::Prompt => prompt_addition(&tools, choice.as_ref(), format),
            ToolMode::Verbatim => {
                if tools.is_empty() || choice == Some(ToolChoice::None) {
                    String::new()
                } else {
                    format!(
                        "{}\n\n{}",
                        texts::verbatim_block(&tools),
                        format.verbatim_nudge()
                    )
                }
            }
            _ => String::new(),
        }
    } else {
        bail!("give --tools FILE or --request FILE");
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(text.as_bytes())
        .context("writing standard output")?;
    if stdout.is_terminal() {
        out.write_all(b"\n").context("writing standard output")?;
    }
    Ok(ExitCode::SUCCESS)
}
