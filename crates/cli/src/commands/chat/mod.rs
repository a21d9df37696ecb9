//! `toolbridge chat`: an interactive session with line editing and history, the answer rendered
//! as Markdown on a terminal, and commands (`/help`).

mod save;
mod slash;

use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use rustyline::error::ReadlineError;
use toolbridge_agent::Outcome;
use toolbridge_protocol::types::Message;

use crate::agent::args::AgentArgs;
use crate::agent::render::{Look, Renderer};
use crate::agent::session::Session;
use crate::agent::workspace::{report_outputs, RunWorkspace, WorkspaceArgs};
use crate::term::color::ColorChoice;
use crate::term::tty::EchoOff;

use slash::Slash;

/// Chat with the agent.
///
/// Commands: /help, /model [NAME], /save FILE (.md or .json), /clear, /tools, /skills, /exit.
/// On a terminal the answer is rendered as Markdown (--color never, or NO_COLOR, shows it as
/// written), keys typed while it streams are not echoed into it, and Ctrl-C cancels it: the
/// cancelled turn is dropped from the conversation and the prompt comes back.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    workspace: WorkspaceArgs,
}

fn history_file() -> Option<std::path::PathBuf> {
    Some(toolbridge_sandbox::data_dir()?.join("chat-history.txt"))
}

pub fn run(args: Args, color: ColorChoice) -> anyhow::Result<ExitCode> {
    let conversation = RunWorkspace::conversation(&args.workspace);
    let mut session = Session::start(&args.agent, &conversation, true)?;
    let (mut workspace, mut note) =
        RunWorkspace::start(&args.workspace, conversation, session.root.tools())?;
    let look = Look::chat(color);
    let mut editor = rustyline::DefaultEditor::new().context("starting the line editor")?;
    let history = history_file();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    eprintln!(
        "toolbridge chat — model {}, conversation {}; /help lists the commands",
        session.session.model_name, workspace.conversation
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
        match slash::parse(&line) {
            Some(Ok(Slash::Exit)) => break,
            Some(Ok(Slash::Clear)) => {
                conversation.clear();
                eprintln!("(conversation cleared)");
                continue;
            }
            Some(Ok(command)) => {
                command_line(command, &mut session, &conversation);
                continue;
            }
            Some(Err(problem)) => {
                eprintln!("{problem}");
                continue;
            }
            None => {}
        }
        let text = slash::message(&line).to_owned();
        // The attachments are announced with the first message that is answered.
        let text = if note.is_empty() {
            text
        } else {
            format!("{text}\n\n{note}")
        };
        let mut turn = conversation.clone();
        turn.push(Message::user(text));
        let attached = workspace.attached.clone();
        let state = {
            // Keys typed while the answer streams would be echoed into it; they stay typed
            // and reach the next prompt. Restored when the turn ends, however it ends.
            let _quiet = EchoOff::new();
            let agent = &session.session.agent;
            session.runtime.block_on(async {
                let mut context = session.session.context();
                // The files attached at the start belong to the first turn only.
                context.attachments = attached.clone();
                let cancel = context.cancel.clone();
                let watcher = tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        cancel.cancel();
                    }
                });
                let mut run = agent.run(turn, context);
                let mut renderer = Renderer::new(false, look);
                while let Some(event) = run.next().await {
                    renderer.event(&event);
                }
                watcher.abort();
                let state = run.state();
                if state.cut_by_token_limit && state.outcome != Some(Outcome::Cancelled) {
                    renderer.note_cut();
                }
                state
            })
        };
        if state.outcome == Some(Outcome::Cancelled) {
            // The turn never happened: neither the message nor a partial answer is kept, and
            // the attachments go with the next message instead.
        } else {
            conversation = state.messages;
            note.clear();
            workspace.attached.clear();
        }
        report_outputs(&workspace.take_outputs());
    }
    if let Some(h) = &history {
        // rustyline creates the file owner-only; its folder is made private (or a passage,
        // when it is the data folder).
        let _ = toolbridge_sandbox::private::create_parent(h);
        let _ = editor.save_history(h);
    }
    session.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// Carries out a command that leaves the conversation as it is.
fn command_line(command: Slash, session: &mut Session, conversation: &[Message]) {
    let agent = &mut session.session.agent;
    match command {
        Slash::Help => eprint!("{}", slash::HELP),
        Slash::Exit | Slash::Clear => {}
        Slash::Model(None) => {
            eprintln!(
                "model {}: {}",
                session.session.model_name,
                agent.model().describe()
            );
        }
        Slash::Model(Some(name)) => match session.root.model_named(&name) {
            Ok(model) => {
                agent.set_model(model);
                session.session.model_name = name.clone();
                eprintln!("(model {name} from the next message on)");
            }
            Err(e) => eprintln!(
                "toolbridge: /model {name}: {}",
                crate::error_chain(&anyhow::Error::new(e))
            ),
        },
        Slash::Save(path) => match save::save(&path, &session.session.model_name, conversation) {
            Ok(()) => eprintln!("(conversation saved to {})", path.display()),
            Err(e) => eprintln!("toolbridge: /save: {e:#}"),
        },
        Slash::Tools => {
            let specs = agent.tool_specs();
            if specs.is_empty() {
                eprintln!("{}", crate::commands::tools::NO_TOOLS);
            }
            for spec in specs {
                eprintln!(
                    "{} — {}",
                    spec.name,
                    spec.description.lines().next().unwrap_or_default()
                );
            }
        }
        Slash::Skills => {
            for skill in agent.skills().iter() {
                eprintln!("{}: {}", skill.name, skill.description);
            }
        }
    }
}
