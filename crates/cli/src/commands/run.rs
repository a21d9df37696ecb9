//! `toolbridge run "PROMPT"`: one agent run.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use toolbridge_protocol::types::Message;

use crate::agent::render::{exit_code, Renderer};
use crate::agent::session::Session;
use crate::agent::setup::AgentArgs;
use crate::agent::workspace::{report_outputs, RunWorkspace, WorkspaceArgs};

/// Run the agent on one prompt.
///
/// The answer streams to standard output; tool activity (names, arguments, durations) goes to
/// standard error. Exit codes: 0 answered, 3 tool budget exceeded, 4 no progress, 5 malformed calls
/// gave up, 130 cancelled (Ctrl-C), 1 error.
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
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let prompt = if args.prompt == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the prompt from standard input")?;
        s
    } else {
        args.prompt.clone()
    };
    let session = Session::start(&args.agent, false)?;
    let (mut workspace, note) = RunWorkspace::start(&args.workspace, session.tools())?;
    let prompt = if note.is_empty() {
        prompt
    } else {
        format!("{prompt}\n\n{note}")
    };
    let agent = &session.agent;
    let state = session.runtime.block_on(async {
        let context = session.context(&workspace.conversation);
        let cancel = context.cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        let mut run = agent.run(vec![Message::user(prompt)], context);
        let mut renderer = Renderer::new(args.json);
        while let Some(event) = run.next().await {
            renderer.event(&event);
        }
        run.state()
    });
    session.shutdown();
    report_outputs(&workspace.take_outputs());
    if let Some(path) = &args.transcript {
        let json = serde_json::to_string_pretty(&state).context("encoding the transcript")?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from(exit_code(state.outcome)))
}
