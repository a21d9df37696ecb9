//! ARCHITECTURE.md's crate table is the manifests' truth: every crate's production
//! dependencies on other toolbridge crates are exactly the ones the table lists, and the graph
//! has no cycle. A new arrow (say, `agent` using `providers` again) fails here until the table,
//! and so the design, says so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `crate → toolbridge crates it uses` from ARCHITECTURE.md's table (the block after "crate
/// depends on").
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let start = text
        .find("crate       depends on")
        .expect("the crate table");
    let block = &text[start..];
    let end = block.find("```").unwrap();
    block[..end]
        .lines()
        .skip(2)
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next().unwrap().to_owned();
            let deps = words
                .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
                .map(str::to_owned)
                .collect();
            (name, deps)
        })
        .collect()
}

/// The same from each crate's `[dependencies]` (and target-specific dependencies).
fn manifests() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let manifest: toml::Table = text.parse().unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut deps = BTreeSet::new();
        let mut tables = vec![manifest.get("dependencies")];
        if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
            tables.extend(targets.values().map(|t| t.get("dependencies")));
        }
        for table in tables.into_iter().flatten() {
            for key in table.as_table().unwrap().keys() {
                if let Some(dep) = key.strip_prefix("toolbridge-") {
                    deps.insert(dep.to_owned());
                }
            }
        }
        out.insert(name, deps);
    }
    out
}

#[test]
fn the_crate_table_matches_every_manifest() {
    let mut found = manifests();
    // Test support is never a production dependency; it has none of its own worth a row.
    assert!(found.values().all(|deps| !deps.contains("testkit")));
    found.remove("testkit");
    assert_eq!(documented(), found, "ARCHITECTURE.md's crate table");
}

#[test]
fn the_crate_graph_has_no_cycle_and_the_loop_knows_no_provider() {
    let graph = manifests();
    assert_eq!(
        graph["agent"],
        BTreeSet::from(["protocol".to_owned()]),
        "the loop depends on protocol alone"
    );
    // Depth-first: a crate on the current path seen again is a cycle.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        assert!(!path.contains(&node.to_owned()), "cycle: {path:?} → {node}");
        if done.contains(node) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(node.to_owned());
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}
