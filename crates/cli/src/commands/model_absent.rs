//! `toolbridge model …` in a build without the `embedded` feature: there is no embedded
//! provider, so there is no model to pull; the command says so.

use std::process::ExitCode;

/// Manage the embedded model (not in this build: it was built without the `embedded` feature).
#[derive(clap::Args)]
pub struct Args {
    /// What the full build would do (pull, path, list).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args.rest;
    anyhow::bail!(
        "the embedded provider is not in this build ({}), so there is no model to manage",
        crate::providers::EMBEDDED_ABSENT
    )
}
