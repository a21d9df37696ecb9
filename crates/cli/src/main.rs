//! `toolbridge`: tool calling for every language model.

mod agent;
mod commands;
mod config;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tool calling for every language model: run agents with tools on any model, serve an
/// OpenAI-compatible gateway, parse prompt-mode tool calls and render tool prompts.
#[derive(Parser)]
#[command(name = "toolbridge", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Run(commands::run::Args),
    Chat(commands::chat::Args),
    Tools(commands::tools::ToolsArgs),
    Skills(commands::tools::SkillsArgs),
    Parse(commands::parse::Args),
    Prompt(commands::prompt::Args),
    Serve(commands::serve::Args),
    Model(commands::model::Args),
    Net(commands::net::Args),
    Memory(commands::memory::Args),
    Sandbox(commands::sandbox::Args),
    Workspaces(commands::workspaces::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => commands::run::run(args),
        Command::Chat(args) => commands::chat::run(args),
        Command::Tools(args) => commands::tools::tools(args),
        Command::Skills(args) => commands::tools::skills(args),
        Command::Parse(args) => commands::parse::run(args),
        Command::Prompt(args) => commands::prompt::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Model(args) => commands::model::run(args),
        Command::Net(args) => commands::net::run(args),
        Command::Memory(args) => commands::memory::run(args),
        Command::Sandbox(args) => commands::sandbox::run(args),
        Command::Workspaces(args) => commands::workspaces::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolbridge: {err:#}");
            ExitCode::FAILURE
        }
    }
}
