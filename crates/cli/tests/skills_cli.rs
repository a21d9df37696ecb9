//! `toolbridge skills` says what the model's skill listing leaves out (issue 13 item 9): skills
//! over `skill_listing_budget` and descriptions cut at 1,536 characters.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{temp_dir, toolbridge};

fn write_skill(root: &Path, name: &str, description: &str) {
    let dir = root.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n"),
    )
    .unwrap();
}

fn twenty(root: &Path) {
    for i in 1..=20 {
        write_skill(
            root,
            &format!("skill-{i:02}"),
            &format!("Skill number {i}, how the team handles topic {i}. Use it when the user asks about topic {i} or anything close to it."),
        );
    }
}

#[test]
fn twenty_skills_are_listed_without_a_warning() {
    let dir = temp_dir("skills-cli", "twenty");
    twenty(&dir);
    let (code, out, err) = toolbridge(&["skills", "--skills", "skills"], &dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with("skill-")).count(), 20);
    assert!(!out.contains("warning") && !out.contains("note:"), "{out}");
}

#[test]
fn skills_over_the_budget_and_cut_descriptions_are_reported() {
    let dir = temp_dir("skills-cli", "budget");
    twenty(&dir);
    write_skill(&dir, "aaa-long", &"x".repeat(3000));
    // The long entry takes 1,546 characters, each ordinary one about 125: 2,000 leaves room for
    // the long one and three more.
    std::fs::write(
        dir.join("toolbridge.toml"),
        "[agent]\nskill_dirs = [\"skills\"]\nskill_listing_budget = 2000\n",
    )
    .unwrap();
    let (code, out, err) = toolbridge(&["skills"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("note: the model's listing cuts descriptions at 1536 characters: aaa-long\n"),
        "{out}"
    );
    let warning = out
        .lines()
        .find(|l| l.starts_with("warning:"))
        .unwrap_or_else(|| panic!("no warning in {out}"));
    assert!(warning.contains("budget of 2000 characters"), "{warning}");
    assert!(warning.contains("skill_listing_budget"), "{warning}");
    assert!(warning.contains("skill-20"), "{warning}");
    assert!(!warning.contains("skill-01,"), "{warning}");
    assert!(!warning.contains("aaa-long"), "{warning}");

    let (code, out, err) = toolbridge(&["skills", "--json"], &dir);
    assert_eq!(code, 0, "{err}");
    let list: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(list.len(), 21);
    let get = |name: &str| list.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(get("aaa-long")["listed"], true);
    assert_eq!(get("aaa-long")["description_cut"], true);
    assert_eq!(get("skill-01")["listed"], true);
    assert_eq!(get("skill-20")["listed"], false);
    assert_eq!(get("skill-20")["description_cut"], false);
}
