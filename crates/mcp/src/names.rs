//! Tool names as the model sees them: `mcp__<server>__<tool>` (the convention Claude's tools use).
//!
//! Providers accept only `[A-Za-z0-9_-]` in tool names, so any other character of a server's tool
//! name becomes `_`. If that makes two names of one server equal, the later ones (in the server's
//! order) get `_2`, `_3`, … so the mapping is deterministic; the server still receives its own
//! name. Server names are checked to be safe already, so names of two servers never collide.

use std::collections::HashSet;

/// The prefix every MCP tool name starts with.
pub const PREFIX: &str = "mcp__";

/// The exposed names for a server's tool names, in the same order.
pub fn exposed_names<'a>(server: &str, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    let mut out = Vec::new();
    for tool in tools {
        let base = format!("{PREFIX}{server}__{}", sanitize(tool));
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        out.push(name);
    }
    out
}

fn sanitize(tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "_".to_owned()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitized_and_deduplicated() {
        assert_eq!(
            exposed_names(
                "py",
                ["add", "weird.name/1", "weird_name_1", "weird/name.1", ""]
            ),
            [
                "mcp__py__add",
                "mcp__py__weird_name_1",
                "mcp__py__weird_name_1_2",
                "mcp__py__weird_name_1_3",
                "mcp__py___",
            ]
        );
    }
}
