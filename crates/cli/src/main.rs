//! `toolbridge`: tool calling for every language model.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tool calling for every language model: parse prompt-mode tool calls, render tool prompts, and
/// (as the project grows) run agents and serve an OpenAI-compatible gateway.
#[derive(Parser)]
#[command(name = "toolbridge", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Parse(commands::parse::Args),
    Prompt(commands::prompt::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Parse(args) => commands::parse::run(args),
        Command::Prompt(args) => commands::prompt::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolbridge: {err:#}");
            ExitCode::FAILURE
        }
    }
}
