//! `toolbridge`: tool calling for every language model.

// Standard output goes through `out!`/`outln!` (see out.rs): a closed pipe is a quiet exit,
// never a panic.
#![deny(clippy::print_stdout)]

mod agent;
mod commands;
mod config;
mod logging;
mod out;
mod providers;
mod telemetry;
mod term;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc instead of glibc's malloc: the gateway's request path allocates and frees many small
/// JSON values and buffers across threads, where glibc's arenas spent about a fifth of a
/// Responses request's CPU (malloc, free and `malloc_consolidate` in `perf`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tool calling for every language model: run agents with tools on any model, serve an
/// OpenAI-compatible gateway, parse prompt-mode tool calls and render tool prompts.
#[derive(Parser)]
#[command(
    name = "toolbridge",
    version,
    propagate_version = true,
    after_long_help = COLORS
)]
struct Cli {
    /// Colour: auto, always or never (toolbridge --help).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value_t = term::color::ColorChoice::Auto,
        hide_possible_values = true,
        hide_default_value = true
    )]
    color: term::color::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

/// The details of `--color`, once, at the end of `toolbridge --help` (every command takes the
/// flag; its own help stays one line). Lines fit 80 columns, so none is wrapped out of its
/// indent.
const COLORS: &str = "\
Colours (--color WHEN, every command):
  auto    colour on a terminal, unless NO_COLOR is set to a non-empty value
          (the default)
  always  always colour (and render chat's Markdown), even into a pipe and
          whatever NO_COLOR says
  never   never colour (chat prints answers as the model wrote them)";

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
    Config(commands::config_check::Args),
    Init(commands::init::Args),
    Models(commands::models::Args),
    Completions(commands::completions::CompletionsArgs),
    Man(commands::completions::ManArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => commands::run::run(args, cli.color),
        Command::Chat(args) => commands::chat::run(args, cli.color),
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
        Command::Config(args) => commands::config_check::run(args),
        Command::Init(args) => commands::init::run(args),
        Command::Models(args) => commands::models::run(args),
        Command::Completions(args) => commands::completions::completions(args, Cli::command()),
        Command::Man(args) => commands::completions::man(args, Cli::command()),
    };
    // The spans still queued for `[telemetry]` go out before the process ends.
    telemetry::shutdown();
    match result {
        Ok(code) => code,
        // The reader of standard output went away (`| head`): what it wanted it has, so the
        // command ends quietly and successfully, as ripgrep and fd do (see out.rs).
        Err(err) if out::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("toolbridge: {}", error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, `outer: inner: …`. A cause whose text the cause
/// before it already shows is left out: many errors print their source inside their own message
/// and return it as their source too, which would show it twice.
fn error_chain(err: &anyhow::Error) -> String {
    let mut line = String::new();
    let mut previous = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.is_empty() || previous.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
        previous = text;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug)]
    struct Wraps(std::io::Error);

    impl std::fmt::Display for Wraps {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot bind 127.0.0.1:1: {}", self.0)
        }
    }

    impl std::error::Error for Wraps {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_shown_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use");
        let err = anyhow::Error::new(Wraps(io)).context("serving");
        assert_eq!(
            error_chain(&err),
            "serving: cannot bind 127.0.0.1:1: Address already in use"
        );
        let plain = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(error_chain(&plain), "outer: middle: inner");
    }
}
