//! `toolbridge tools` and `toolbridge skills`: what a run would offer.

use std::process::ExitCode;

use crate::agent::setup::{self, AgentArgs};
use crate::config;

/// List the tools a run would offer (name and description; --json for the full specs).
#[derive(clap::Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Print the OpenAI-style tools array.
    #[arg(long)]
    json: bool,
}

/// List the skills a run would offer.
#[derive(clap::Args)]
pub struct SkillsArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Print them as JSON.
    #[arg(long)]
    json: bool,
}

fn build(args: &AgentArgs) -> anyhow::Result<setup::Setup> {
    let loaded = config::load(args.config.as_deref())?;
    let section = &loaded.config.agent;
    setup::build_for_listing(
        section,
        args,
        &loaded.config.models,
        setup::toolbox(section),
    )
}

pub fn tools(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let setup = build(&args.agent)?;
    let specs = setup.agent.tool_specs();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&specs)?);
    } else if specs.is_empty() {
        println!("(no tools: built-in tools arrive with their issues; skills appear here once configured)");
    } else {
        for spec in specs {
            println!(
                "{:<20} {}",
                spec.name,
                spec.description.lines().next().unwrap_or_default()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn skills(args: SkillsArgs) -> anyhow::Result<ExitCode> {
    let setup = build(&args.agent)?;
    let skills = setup.agent.skills();
    if args.json {
        let list: Vec<serde_json::Value> = skills
            .iter()
            .map(|s| serde_json::json!({"name": s.name, "description": s.description}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else if skills.is_empty() {
        println!("(no skills: add folders with --skills DIR or skill_dirs under [agent])");
    } else {
        for skill in skills.iter() {
            println!("{}: {}", skill.name, skill.description);
        }
    }
    Ok(ExitCode::SUCCESS)
}
