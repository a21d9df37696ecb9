//! `toolbridge tools` and `toolbridge skills`: what a run would offer.

use std::process::ExitCode;

use anyhow::Context;

use crate::agent::mcp;
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
        setup::toolbox(section, &loaded.config.tools)?,
    )
}

pub fn tools(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let loaded = config::load(args.agent.config.as_deref())?;
    let section = &loaded.config.agent;
    // MCP servers are started to learn their tools, and stopped before printing.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mcp = mcp::start(&runtime, &loaded.config.mcp_servers, &args.agent.mcp)?;
    let mut toolbox = setup::toolbox(section, &loaded.config.tools)?;
    mcp::add_to(&mut toolbox, &mcp);
    let setup = setup::build_for_listing(section, &args.agent, &loaded.config.models, toolbox);
    let specs = setup.as_ref().map(|s| s.agent.tool_specs());
    let servers: Vec<Option<String>> = match &specs {
        Ok(specs) => specs
            .iter()
            .map(|s| mcp.server_of(&s.name).map(str::to_owned))
            .collect(),
        Err(_) => Vec::new(),
    };
    mcp::shutdown(&runtime, &mcp);
    let specs = specs.map_err(|e| anyhow::anyhow!("{e:#}"))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&specs)?);
    } else if specs.is_empty() {
        println!("(no tools: enable built-in tools with `enabled = [\"web_fetch\", …]` under [tools] in toolbridge.toml, add MCP servers with [[mcp_servers]] or --mcp; skills appear here once configured)");
    } else {
        let width = specs
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(0)
            .max(20);
        let any_mcp = servers.iter().any(Option::is_some);
        for (spec, server) in specs.iter().zip(servers) {
            let summary = spec.description.lines().next().unwrap_or_default();
            if any_mcp {
                // The server column: `-` for built-in tools and skills.
                let server = server.as_deref().unwrap_or("-");
                println!("{:<width$} {:<12} {}", spec.name, server, summary);
            } else {
                println!("{:<width$} {}", spec.name, summary);
            }
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
