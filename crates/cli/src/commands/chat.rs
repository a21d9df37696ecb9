//! `toolbridge chat`: an interactive session with line editing and history.

use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use rustyline::error::ReadlineError;
use toolbridge_protocol::types::Message;

use crate::agent::render::Renderer;
use crate::agent::session::Session;
use crate::agent::setup::AgentArgs;
use crate::agent::workspace::{report_outputs, RunWorkspace, WorkspaceArgs};

/// Chat with the agent. Commands: /tools, /skills, /reset, /quit.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
}

fn history_file() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".local/share"))
        })?;
    Some(base.join("toolbridge").join("chat-history.txt"))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let session = Session::start(&args.agent, true)?;
    let (mut workspace, mut note) = RunWorkspace::start(&args.workspace, session.tools())?;
    let agent = &session.agent;
    let mut editor = rustyline::DefaultEditor::new().context("starting the line editor")?;
    let history = history_file();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    eprintln!(
        "toolbridge chat — model {}, conversation {}; /tools, /skills, /reset, /quit",
        session.model_name, workspace.conversation
    );
    let mut conversation: Vec<Message> = Vec::new();
    loop {
        let line = match editor.readline("› ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                session.shutdown();
                return Err(e).context("reading input");
            }
        };
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(&line);
        match line.as_str() {
            "/quit" | "/exit" => break,
            "/reset" => {
                conversation.clear();
                eprintln!("(conversation cleared)");
                continue;
            }
            "/tools" => {
                for spec in agent.tool_specs() {
                    eprintln!(
                        "{} — {}",
                        spec.name,
                        spec.description.lines().next().unwrap_or_default()
                    );
                }
                continue;
            }
            "/skills" => {
                for skill in agent.skills().iter() {
                    eprintln!("{}: {}", skill.name, skill.description);
                }
                continue;
            }
            other if other.starts_with('/') => {
                eprintln!("unknown command {other}; try /tools, /skills, /reset, /quit");
                continue;
            }
            _ => {}
        }
        // The attachments are announced with the first message.
        let line = if note.is_empty() {
            line
        } else {
            format!("{line}\n\n{}", std::mem::take(&mut note))
        };
        conversation.push(Message::user(line));
        let state = session.runtime.block_on(async {
            let context = session.context(&workspace.conversation);
            let cancel = context.cancel.clone();
            let watcher = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            });
            let mut run = agent.run(conversation.clone(), context);
            let mut renderer = Renderer::new(false);
            while let Some(event) = run.next().await {
                renderer.event(&event);
            }
            watcher.abort();
            run.state()
        });
        conversation = state.messages;
        report_outputs(&workspace.take_outputs());
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(h);
    }
    session.shutdown();
    Ok(ExitCode::SUCCESS)
}
