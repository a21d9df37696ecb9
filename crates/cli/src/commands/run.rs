//! `toolbridge run "PROMPT"`: one agent run.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use toolbridge_protocol::types::{Message, ToolChoice, ToolSpec};

use crate::agent::args::AgentArgs;
use crate::agent::render::{exit_code, Look, Renderer};
use crate::agent::session::Session;
use crate::agent::workspace::{report_outputs, RunWorkspace, WorkspaceArgs};
use crate::term::color::ColorChoice;

/// The exit code of a usage error, as for a bad flag (clap's).
const USAGE_ERROR: u8 = 2;

/// Run the agent on one prompt.
///
/// The answer streams to standard output; tool activity (names, arguments, durations) goes to
/// standard error, and so do logs (-v, RUST_LOG). Exit codes: 0 answered, 3 tool budget exceeded,
/// 4 no progress, 5 malformed calls gave up, 130 cancelled (Ctrl-C), 2 usage error (a bad flag, an
/// empty prompt), 1 error.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The prompt (`-` reads standard input).
    prompt: String,
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
    /// Print the run's events as JSON lines instead of the answer.
    #[arg(long)]
    json: bool,
    /// Write the full transcript (every message, complete tool outputs, usage, outcome) as JSON.
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,
    /// The first model request's tool choice: `auto` (the model decides), `required` (some
    /// tool), `none`, or a tool's name (that tool). Later rounds are `auto`.
    #[arg(long, value_name = "CHOICE", default_value = "auto")]
    tool_choice: String,
}

/// What `--tool-choice` names, against the agent's tools.
fn first_tool_choice(choice: &str, tools: &[ToolSpec]) -> Result<Option<ToolChoice>, String> {
    Ok(match choice {
        "auto" => None,
        "required" => Some(ToolChoice::Required),
        "none" => Some(ToolChoice::None),
        name if tools.iter().any(|t| t.name == name) => Some(ToolChoice::Named(name.to_owned())),
        other => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return Err(format!(
                "--tool-choice `{other}` is not auto, required, none or one of this agent's tools ({})",
                if names.is_empty() {
                    "it has none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
        }
    })
}

pub fn run(args: Args, color: ColorChoice) -> anyhow::Result<ExitCode> {
    let prompt = if args.prompt == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the prompt from standard input")?;
        s
    } else {
        args.prompt.clone()
    };
    if prompt.trim().is_empty() {
        let from = if args.prompt == "-" {
            "standard input held no text"
        } else {
            "give the task as the argument, or `-` to read it from standard input"
        };
        eprintln!("toolbridge: the prompt is empty: {from}");
        return Ok(ExitCode::from(USAGE_ERROR));
    }
    let conversation = RunWorkspace::conversation(&args.workspace);
    let session = Session::start(&args.agent, &conversation, false)?;
    let (mut workspace, note) =
        RunWorkspace::start(&args.workspace, conversation, session.root.tools())?;
    let prompt = if note.is_empty() {
        prompt
    } else {
        format!("{prompt}\n\n{note}")
    };
    let agent = &session.session.agent;
    let first_choice = match first_tool_choice(&args.tool_choice, &agent.tool_specs()) {
        Ok(choice) => choice,
        Err(e) => {
            session.shutdown();
            eprintln!("toolbridge: {e}");
            return Ok(ExitCode::from(USAGE_ERROR));
        }
    };
    let (state, stdout_closed) = session.runtime.block_on(async {
        let mut context = session.session.context();
        context.attachments = std::mem::take(&mut workspace.attached);
        let cancel = context.cancel.clone();
        let stop = context.cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        let mut run = match first_choice {
            None => agent.run(vec![Message::user(prompt)], context),
            Some(choice) => {
                let mut machine = agent.start(vec![Message::user(prompt)]).await;
                machine.set_next_tool_choice(Some(choice));
                agent.resume(machine, context, None)
            }
        };
        let mut renderer = Renderer::new(args.json, Look::run(color));
        while let Some(event) = run.next().await {
            renderer.event(&event);
            // Nobody reads the answer any more (`| head`): the run stops, tools and all.
            if renderer.stdout_closed() {
                stop.cancel();
            }
        }
        let state = run.state();
        if state.cut_by_token_limit && !args.json {
            renderer.note_cut();
        }
        (state, renderer.stdout_closed())
    });
    session.shutdown();
    if stdout_closed {
        return Err(crate::out::broken_pipe());
    }
    report_outputs(&workspace.take_outputs());
    if let Some(path) = &args.transcript {
        let json = serde_json::to_string_pretty(&state).context("encoding the transcript")?;
        // The whole conversation: owner-only, like every file of users' data.
        toolbridge_sandbox::private::write(path, json)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from(exit_code(state.outcome)))
}
