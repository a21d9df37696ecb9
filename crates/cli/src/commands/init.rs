//! `toolbridge init [--force] [PATH]`: writes a commented `toolbridge.toml` that works as
//! written (the defaults, with examples to uncomment), and never overwrites one unless told to.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// The file `init` writes (tests check that it passes `toolbridge config check` as written and
/// with every example uncommented).
pub const TEMPLATE: &str = include_str!("init.toml");

/// Write a commented toolbridge.toml to start from.
///
/// It works as written (the embedded default model, no built-in tools) and shows examples of
/// models, tools and the gateway to uncomment. An existing file is left alone unless --force.
#[derive(clap::Args)]
pub struct Args {
    /// Overwrite the file if it exists.
    #[arg(long)]
    force: bool,
    /// Where to write it; a folder gets a toolbridge.toml inside (default: ./toolbridge.toml).
    path: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = match args.path {
        None => PathBuf::from("toolbridge.toml"),
        Some(dir) if dir.is_dir() => dir.join("toolbridge.toml"),
        Some(file) => file,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if args.force {
        options.create(true).truncate(true);
    } else {
        // Created exclusively: a file that appears in the meantime is not overwritten either.
        options.create_new(true);
    }
    let mut file = match options.open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "toolbridge: {} already exists; it is left as it is (pass --force to overwrite it)",
                path.display()
            );
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
    };
    file.write_all(TEMPLATE.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    crate::outln!("wrote {}", path.display())?;
    let flag = if path == std::path::Path::new("toolbridge.toml") {
        String::new()
    } else {
        format!(" --config {}", path.display())
    };
    eprintln!(
        "toolbridge: check it with `toolbridge config check{flag}`; `toolbridge models{flag}` lists its models"
    );
    Ok(ExitCode::SUCCESS)
}
