//! The documentation checked against the program: every TOML block of README.md and docs/ passes
//! `toolbridge config check`, the configuration reference shows every key the program accepts,
//! the protocol page quotes every model-facing text, links between pages resolve, and "seed"
//! appears only as the sampling `seed` key.
//!
//! A TOML block may be preceded by a line `<!-- config-check: needs PATH PATH… -->`: the test
//! creates those paths (a name ending in `/` as a folder, any other as an empty file) in the
//! block's working folder before checking it. `<!-- config-check: reference; needs … -->` marks
//! the configuration reference's complete file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{temp_dir, toolbridge};

/// The key added to a table to make the loader list the keys it accepts there.
const PROBE: &str = "zz_docs_probe";

/// Tables of the reference whose keys are the user's own (maps, not fixed sets of keys).
const FREE_FORM: &[&str] = &[
    "agent.approvals.per_tool",
    "models[].headers",
    "mcp_servers[].env",
    "mcp_servers[].headers",
    "server.model_map",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every Markdown file under docs/, with their paths relative to the repository.
fn pages() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut paths = vec![repo().join("README.md")];
    walk(&repo().join("docs"), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.strip_prefix(repo()).unwrap().display().to_string();
            (name, text)
        })
        .collect()
}

/// A fenced TOML block: where it is, the `config-check` annotation before it, its text.
struct TomlBlock {
    place: String,
    annotation: String,
    text: String,
}

fn toml_blocks(page: &str, text: &str) -> Vec<TomlBlock> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() == "```toml" {
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].starts_with("```") {
                body.push(lines[i]);
                i += 1;
            }
            let annotation = start
                .checked_sub(1)
                .map(|j| lines[j].trim())
                .and_then(|l| l.strip_prefix("<!-- config-check:"))
                .and_then(|l| l.strip_suffix("-->"))
                .unwrap_or("")
                .trim()
                .to_owned();
            blocks.push(TomlBlock {
                place: format!("{page}:{}", start + 1),
                annotation,
                text: body.join("\n") + "\n",
            });
        }
        i += 1;
    }
    blocks
}

/// A fresh folder holding the block's `needs` and the block as `toolbridge.toml`.
fn workdir(block: &TomlBlock, name: &str, text: &str) -> PathBuf {
    let dir = temp_dir("docs", name);
    if let Some(needs) = block.annotation.split("needs").nth(1) {
        for need in needs.split_whitespace() {
            let path = dir.join(need);
            if need.ends_with('/') {
                std::fs::create_dir_all(&path).unwrap();
            } else {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, b"").unwrap();
            }
        }
    }
    std::fs::write(dir.join("toolbridge.toml"), text).unwrap();
    dir
}

fn config_check(dir: &Path) -> (i32, String, String) {
    toolbridge(&["config", "check", "--config", "toolbridge.toml"], dir)
}

#[test]
fn every_toml_block_passes_config_check() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (page, text) in pages() {
        for (n, block) in toml_blocks(&page, &text).iter().enumerate() {
            let name = format!("{}-{n}", page.replace(['/', '.'], "_"));
            let dir = workdir(block, &name, &block.text);
            let (code, out, err) = config_check(&dir);
            if code != 0 || !out.starts_with("ok: ") {
                failures.push(format!("{}: exit {code}\n{err}", block.place));
            }
            checked += 1;
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    assert!(checked >= 10, "only {checked} TOML blocks found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn config_check_reports_what_the_docs_promise() {
    // The check is only worth something if it refuses what a run would refuse.
    let dir = temp_dir("docs", "refusals");
    for (toml, needle) in [
        ("[agent]\nmax_round = 5\n", "unknown field `max_round`"),
        ("[agent]\nskill_dirs = [\"./nowhere\"]\n", "nowhere"),
        (
            "[[models]]\nname = \"m\"\nprovider = \"embedded\"\npath = \"absent.gguf\"\n",
            "absent.gguf",
        ),
        ("[agent]\nmodel = \"nameless\"\n", "nameless"),
        (
            "[[mcp_servers]]\nname = \"x\"\ncommand = \"a\"\nurl = \"http://127.0.0.1:1/\"\n",
            "x",
        ),
    ] {
        std::fs::write(dir.join("toolbridge.toml"), toml).unwrap();
        let (code, out, err) = config_check(&dir);
        assert_eq!(code, 1, "{toml}: {out}{err}");
        assert!(err.contains(needle), "{toml}: {err}");
    }
}

/// Every table of a TOML value: its path with array positions written `[]`, and the way to it.
fn tables(value: &toml::Table, path: &str, steps: &mut Vec<Step>, out: &mut Vec<TableAt>) {
    out.push(TableAt {
        pattern: path.to_owned(),
        steps: steps.clone(),
        keys: value.keys().cloned().collect(),
    });
    for (key, item) in value {
        let sub = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match item {
            toml::Value::Table(t) => {
                steps.push(Step::Key(key.clone()));
                tables(t, &sub, steps, out);
                steps.pop();
            }
            toml::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let toml::Value::Table(t) = item {
                        steps.push(Step::Index(key.clone(), i));
                        tables(t, &format!("{sub}[]"), steps, out);
                        steps.pop();
                    }
                }
            }
            _ => {}
        }
    }
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(String, usize),
}

struct TableAt {
    pattern: String,
    steps: Vec<Step>,
    keys: BTreeSet<String>,
}

fn table_at<'a>(root: &'a mut toml::Table, steps: &[Step]) -> &'a mut toml::Table {
    let mut table = root;
    for step in steps {
        table = match step {
            Step::Key(k) => table.get_mut(k).unwrap().as_table_mut().unwrap(),
            Step::Index(k, i) => table.get_mut(k).unwrap().as_array_mut().unwrap()[*i]
                .as_table_mut()
                .unwrap(),
        };
    }
    table
}

/// The keys the loader lists after "unknown field `PROBE`", or None when the probe was taken
/// (a map) or refused for another reason.
fn accepted_keys(stderr: &str) -> Option<BTreeSet<String>> {
    let marker = format!("unknown field `{PROBE}`");
    let line = stderr.lines().find(|l| l.contains(&marker))?;
    let rest = &line[line.find(&marker)? + marker.len()..];
    Some(
        rest.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn the_configuration_reference_shows_every_key() {
    let page = "docs/src/configuration.md";
    let text = std::fs::read_to_string(repo().join(page)).unwrap();
    let blocks: Vec<TomlBlock> = toml_blocks(page, &text)
        .into_iter()
        .filter(|b| b.annotation.starts_with("reference"))
        .collect();
    assert_eq!(blocks.len(), 1, "one complete file in {page}");
    let block = &blocks[0];
    let aliases: BTreeSet<String> = block
        .text
        .split("alias `")
        .skip(1)
        .filter_map(|s| s.split('`').next())
        .map(str::to_owned)
        .collect();
    let root: toml::Table = toml::from_str(&block.text).unwrap();
    let mut found = Vec::new();
    tables(&root, "", &mut Vec::new(), &mut found);

    // Tables grouped by the keys the loader accepts there (one group per configuration struct),
    // with the keys the reference writes in them.
    let mut groups: BTreeMap<BTreeSet<String>, (BTreeSet<String>, Vec<String>)> = BTreeMap::new();
    let mut free_form = BTreeSet::new();
    for (n, at) in found.iter().enumerate() {
        let mut probed = root.clone();
        table_at(&mut probed, &at.steps).insert(PROBE.into(), "probe".into());
        let probed = toml::to_string(&probed).unwrap();
        let dir = workdir(block, &format!("probe-{n}"), &probed);
        let (code, _, err) = config_check(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        // A model with `arms` takes no upstream keys of its own: a probe there is refused as
        // "an inline upstream besides `arms`"; its arms and the inline models are probed as
        // tables of their own.
        if err.contains("give either an inline upstream or `arms`") {
            continue;
        }
        match accepted_keys(&err) {
            Some(accepted) => {
                let group = groups.entry(accepted).or_default();
                group.0.extend(at.keys.iter().cloned());
                group.1.push(at.pattern.clone());
            }
            None => {
                assert!(
                    FREE_FORM.contains(&at.pattern.as_str()),
                    "`{}` took an unknown key (exit {code}: {err}); if it is a map of the user's own keys, add it to FREE_FORM",
                    at.pattern
                );
                free_form.insert(at.pattern.clone());
            }
        }
    }
    assert!(groups.len() >= 15, "only {} key sets found", groups.len());
    for (accepted, (shown, patterns)) in &groups {
        let missing: Vec<&String> = accepted
            .iter()
            .filter(|k| !shown.contains(*k) && !aliases.contains(*k))
            .collect();
        assert!(
            missing.is_empty(),
            "{page}: the complete file does not show {missing:?} (accepted in {patterns:?})"
        );
    }
    assert_eq!(
        free_form.len(),
        FREE_FORM.len(),
        "every FREE_FORM table is in the reference"
    );
}

#[test]
fn the_protocol_page_quotes_every_model_facing_text() {
    let page = std::fs::read_to_string(repo().join("docs/src/protocol.md")).unwrap();
    // Every file of the texts module.
    let mut texts = String::new();
    let dir = repo().join("crates/protocol/src/texts");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        texts.push_str(&std::fs::read_to_string(file).unwrap());
    }
    let names: Vec<&str> = texts
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": &str").map(|(name, _)| name))
        .collect();
    assert!(names.len() > 100, "{} texts found", names.len());
    for name in names {
        assert_eq!(
            page.matches(&format!("\n`{name}` — ")).count(),
            1,
            "docs/src/protocol.md quotes `{name}` once (run `python3 scripts/protocol-texts.py --write`)"
        );
    }
    // The texts themselves, byte for byte as their golden files hold them.
    let golden = repo().join("crates/protocol/tests/golden/seed");
    for entry in std::fs::read_dir(golden).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            page.contains(text.trim()),
            "docs/src/protocol.md does not hold the text of {}",
            path.display()
        );
    }
}

/// The anchor mdBook gives a heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_whitespace() => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside code fences).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fence = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of a page's Markdown links `[text](target)`, outside code.
fn links(text: &str) -> Vec<String> {
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn links_between_pages_resolve() {
    let mut broken = Vec::new();
    let mut count = 0;
    for (page, text) in pages() {
        let dir = repo().join(&page).parent().unwrap().to_path_buf();
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") {
                continue;
            }
            count += 1;
            let (file, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                repo().join(&page)
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.push(format!("{page}: {link}: no such file"));
                continue;
            }
            if !fragment.is_empty() {
                let target_text = std::fs::read_to_string(&target).unwrap();
                if !anchors(&target_text).contains(fragment) {
                    broken.push(format!("{page}: {link}: no such heading"));
                }
            }
        }
    }
    assert!(count > 30, "only {count} links found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_page_is_in_the_summary() {
    let src = repo().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for entry in std::fs::read_dir(&src).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "SUMMARY.md" {
            assert!(listed.contains(&name), "{name} is not in SUMMARY.md");
        }
    }
}

#[test]
fn seed_appears_only_as_the_sampling_key() {
    for (page, text) in pages() {
        let mut fence = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fence = !fence;
            }
            let key_line = fence && line.trim_start().starts_with("seed =");
            let prose = line.replace("`seed`", "");
            assert!(
                key_line || !prose.to_lowercase().contains("seed"),
                "{page}:{}: {line}",
                n + 1
            );
        }
    }
}

#[test]
fn the_commands_page_lists_every_command() {
    let dir = temp_dir("docs", "commands");
    let (code, help, err) = toolbridge(&["--help"], &dir);
    assert_eq!(code, 0, "{err}");
    let listed = help.split("Commands:").nth(1).unwrap();
    let listed = listed.split("Options:").next().unwrap();
    let commands: Vec<&str> = listed
        .lines()
        // A command's line starts with it; wrapped descriptions are indented further.
        .filter_map(|l| l.strip_prefix("  ").filter(|rest| !rest.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 15, "{commands:?}");
    let page = std::fs::read_to_string(repo().join("docs/src/commands.md")).unwrap();
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with('|')).collect();
    for command in commands {
        let named = |row: &&str| {
            row.contains(&format!("`{command}`")) || row.contains(&format!("`{command} "))
        };
        assert!(
            rows.iter().any(named),
            "docs/src/commands.md has no row for `{command}`"
        );
    }
}
