//! `toolbridge tools` and `toolbridge skills`: what a run would offer.

use std::process::ExitCode;

use anyhow::Context;

use toolbridge_agent::skills::DESCRIPTION_LIMIT;

use crate::agent::args::AgentArgs;

/// What `tools` and chat's `/tools` say when no tool is offered: how to offer some.
pub const NO_TOOLS: &str = "(no tools: enable built-in tools with `enabled = [\"web_fetch\", …]` under [tools] in toolbridge.toml, add MCP servers with [[mcp_servers]] or --mcp; skills appear here once configured)";

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

pub fn tools(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init(&args.agent.log, None);
    let mut root = args.agent.runtime()?;
    // MCP servers are started to learn their tools, and stopped before printing.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(root.start_mcp())?;
    // An error is reported after the servers are stopped, on one line.
    let specs = root
        .listing()
        .map(|s| s.agent.tool_specs())
        .map_err(|e| anyhow::anyhow!("{}", toolbridge_runtime::models::error_line(&e)));
    let servers: Vec<Option<String>> = match &specs {
        Ok(specs) => specs
            .iter()
            .map(|s| root.mcp().server_of(&s.name).map(str::to_owned))
            .collect(),
        Err(_) => Vec::new(),
    };
    runtime.block_on(root.shutdown());
    let specs = specs?;
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&specs)?)?;
    } else if specs.is_empty() {
        crate::outln!("{NO_TOOLS}")?;
    } else {
        let width = specs
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(0)
            .max(20);
        let any_mcp = servers.iter().any(Option::is_some);
        // On a terminal a long description wraps under itself; into a pipe each tool keeps
        // one line (for grep).
        let columns = crate::term::tty::size().map(|(columns, _)| columns);
        let indent = width + 1 + if any_mcp { 13 } else { 0 };
        for (spec, server) in specs.iter().zip(servers) {
            let summary = spec.description.lines().next().unwrap_or_default();
            let summary = match columns {
                Some(columns) => wrap(summary, indent, columns),
                None => summary.to_owned(),
            };
            if any_mcp {
                // The server column: `-` for built-in tools and skills.
                let server = server.as_deref().unwrap_or("-");
                crate::outln!("{:<width$} {:<12} {}", spec.name, server, summary)?;
            } else {
                crate::outln!("{:<width$} {}", spec.name, summary)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists the skills with what the model's listing leaves out: skills over the listing budget
/// (`dropped`) and descriptions cut at 1,536 characters (`cut`), also as JSON fields.
pub fn skills(args: SkillsArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init(&args.agent.log, None);
    let setup = args.agent.runtime()?.listing()?;
    let skills = setup.agent.skills();
    // With the skill bodies inline (`skill_tool = false`) there is no listing to leave things out.
    let report = setup
        .agent
        .config()
        .skill_tool
        .as_deref()
        .map(|tool| skills.listing_report(tool))
        .unwrap_or_default();
    if args.json {
        let list: Vec<serde_json::Value> = skills
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "description": s.description,
                    "listed": !report.dropped.contains(&s.name),
                    "description_cut": report.cut.contains(&s.name),
                })
            })
            .collect();
        crate::outln!("{}", serde_json::to_string_pretty(&list)?)?;
    } else if skills.is_empty() {
        crate::outln!("(no skills: add folders with --skills DIR or skill_dirs under [agent])")?;
    } else {
        for skill in skills.iter() {
            crate::outln!("{}: {}", skill.name, skill.description)?;
        }
        if !report.cut.is_empty() {
            crate::outln!(
                "\nnote: the model's listing cuts descriptions at {} characters: {}",
                DESCRIPTION_LIMIT,
                report.cut.join(", ")
            )?;
        }
        if !report.dropped.is_empty() {
            crate::outln!(
                "\nwarning: {} not in the model's listing (over its budget of {} characters; raise `skill_listing_budget` under [agent]): {}",
                plural(report.dropped.len()),
                skills.listing_budget(),
                report.dropped.join(", ")
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `text` broken at spaces into lines that end by column `columns` when they start at column
/// `indent`, the lines after the first indented to it. A word longer than a line stands alone;
/// with less than 20 columns left nothing is wrapped.
fn wrap(text: &str, indent: usize, columns: usize) -> String {
    let room = columns.saturating_sub(indent);
    if room < 20 {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let len = unicode_width::UnicodeWidthStr::width(word);
        if line > 0 && line + 1 + len > room {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 skill is".to_owned()
    } else {
        format!("{n} skills are")
    }
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn a_long_description_wraps_under_itself() {
        let text = "Fetch a web page and return its text, links and title for the model to read";
        let wrapped = wrap(text, 10, 40);
        assert_eq!(
            wrapped,
            "Fetch a web page and return\n          its text, links and title for\n          the model to read"
        );
        assert_eq!(wrap(text, 30, 40), text, "too narrow: left as it is");
    }
}
