//! `toolbridge completions SHELL` and `toolbridge man`: generated from the clap definitions the
//! program parses its arguments with, so they name exactly the commands and flags there are.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// Print a shell completion script.
///
/// bash: `toolbridge completions bash > ~/.local/share/bash-completion/completions/toolbridge`;
/// zsh: `toolbridge completions zsh > ~/.zfunc/_toolbridge` (with `fpath+=~/.zfunc` before
/// `compinit`); fish: `toolbridge completions fish > ~/.config/fish/completions/toolbridge.fish`;
/// PowerShell: `toolbridge completions powershell >> $PROFILE`.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Print the manual page (roff) to standard output: `toolbridge man | man -l -`.
#[derive(clap::Args)]
pub struct ManArgs {
    /// Write a page per command (toolbridge.1, toolbridge-run.1, …) into this folder instead.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Writes `bytes` to stdout; a reader that stopped early (`| head`) is not an error.
fn print(bytes: &[u8], what: &str) -> anyhow::Result<()> {
    match std::io::stdout().write_all(bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.with_context(|| format!("writing {what}")),
    }
}

pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "toolbridge", &mut out);
    print(&out, "the completion script")?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(args: ManArgs, command: clap::Command) -> anyhow::Result<ExitCode> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(command, &dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut out)
                .context("rendering the manual page")?;
            print(&out, "the manual page")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
