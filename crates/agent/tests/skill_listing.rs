//! The skill listing (issue 13 item 9): each description is cut at 1,536 characters, the whole
//! listing has a budget of its own, and skills over it are left out whole and reported.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use toolbridge_agent::skills::{
    Skill, SkillSet, DEFAULT_LISTING_BUDGET, DEFAULT_SKILL_TOOL, DESCRIPTION_LIMIT,
};
use toolbridge_agent::{Agent, AgentConfig, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::Message;
use toolbridge_providers::scripted::{ScriptedReply, ScriptedUpstream};
use toolbridge_providers::{Arm, Model};

/// Twenty skills with descriptions of an ordinary length (about 120 characters each).
fn twenty() -> Vec<Skill> {
    (1..=20)
        .map(|i| {
            Skill::text(
                format!("skill-{i:02}"),
                format!(
                    "Skill number {i}: how the team writes, reviews and ships this kind of change. \
                     Use it when the user asks about topic {i}."
                ),
                format!("BODY {i}"),
            )
        })
        .collect()
}

fn entries(listing: &str) -> Vec<&str> {
    listing.lines().skip(1).collect()
}

#[test]
fn twenty_ordinary_skills_are_all_listed() {
    let skills = twenty();
    let total: usize = skills
        .iter()
        .map(|s| s.name.chars().count() + 2 + s.description.chars().count() + 1)
        .sum();
    assert!(total > 1536, "more than the old total cut: {total}");
    let set = SkillSet::new(skills.clone());
    assert_eq!(set.listing_budget(), DEFAULT_LISTING_BUDGET);
    let report = set.listing_report(DEFAULT_SKILL_TOOL);
    assert!(report.dropped.is_empty(), "{:?}", report.dropped);
    assert!(report.cut.is_empty());
    let lines = entries(&report.text);
    assert_eq!(lines.len(), 20);
    for (line, skill) in lines.iter().zip(&skills) {
        assert_eq!(*line, format!("{}: {}", skill.name, skill.description));
    }
    assert!(report
        .text
        .starts_with(&texts::skill_listing_header(DEFAULT_SKILL_TOOL)));
}

#[test]
fn a_3000_character_description_is_cut_at_1536() {
    // Multi-byte characters: the limit counts characters, not bytes.
    let long = "説明 🦀ß ".repeat(500);
    assert_eq!(long.chars().count(), 3000);
    let set = SkillSet::new(vec![
        Skill::text("big", long.clone(), "x"),
        Skill::text("small", "A small one.", "y"),
    ]);
    let report = set.listing_report(DEFAULT_SKILL_TOOL);
    assert_eq!(report.cut, vec!["big".to_owned()]);
    assert!(report.dropped.is_empty());
    let lines = entries(&report.text);
    assert_eq!(lines.len(), 2, "the skill after the long one is listed");
    let description = lines[0].strip_prefix("big: ").unwrap();
    assert_eq!(description.chars().count(), DESCRIPTION_LIMIT);
    assert_eq!(DESCRIPTION_LIMIT, 1536);
    assert!(long.starts_with(description), "a plain cut");
    assert_eq!(lines[1], "small: A small one.");
    // Exactly at the limit: nothing is cut.
    let exact = SkillSet::new(vec![Skill::text("e", "🦀".repeat(1536), "x")]);
    let report = exact.listing_report(DEFAULT_SKILL_TOOL);
    assert!(report.cut.is_empty());
    assert_eq!(
        entries(&report.text)[0],
        format!("e: {}", "🦀".repeat(1536))
    );
}

#[test]
fn a_tiny_budget_drops_whole_entries_and_says_which() {
    let skills = vec![
        Skill::text("alpha", "First skill.", "1"), // "alpha: First skill." = 19 chars
        Skill::text("beta", "Second skill.", "2"), // 19 chars, + 1 line break = 39
        Skill::text("gamma", "Third skill.", "3"), // would end at 59
        Skill::text("d", "Tiny.", "4"),            // would fit, but comes after a dropped one
    ];
    let set = SkillSet::new(skills).with_listing_budget(45);
    let report = set.listing_report(DEFAULT_SKILL_TOOL);
    assert_eq!(
        entries(&report.text),
        vec!["alpha: First skill.", "beta: Second skill."]
    );
    assert_eq!(report.dropped, vec!["gamma".to_owned(), "d".to_owned()]);
    assert!(!report.text.contains("gamma") && !report.text.contains("Third"));
    // The budget is met exactly: the entry fits.
    let exact =
        SkillSet::new(vec![Skill::text("alpha", "First skill.", "1")]).with_listing_budget(19);
    assert!(exact.listing_report(DEFAULT_SKILL_TOOL).dropped.is_empty());
    // Nothing fits: the header alone, every skill reported.
    let none =
        SkillSet::new(vec![Skill::text("alpha", "First skill.", "1")]).with_listing_budget(5);
    let report = none.listing_report(DEFAULT_SKILL_TOOL);
    assert_eq!(report.text, texts::skill_listing_header(DEFAULT_SKILL_TOOL));
    assert_eq!(report.dropped, vec!["alpha".to_owned()]);
    assert_eq!(set.warn_about_listing(DEFAULT_SKILL_TOOL).dropped.len(), 2);
}

#[tokio::test]
async fn the_model_receives_all_twenty_skills() {
    let upstream = ScriptedUpstream::new(vec![ScriptedReply::text("ok")]);
    let model = Model::new(
        "m",
        vec![Arm::new(
            Arc::new(upstream.clone()),
            toolbridge_protocol::mode::ToolMode::Native,
        )],
    );
    let agent = Agent::new(
        model,
        Toolbox::new(ToolboxConfig::default()),
        SkillSet::new(twenty()),
        AgentConfig::default(),
    )
    .unwrap();
    agent
        .run(vec![Message::user("hi")], ToolContext::default())
        .finish()
        .await;
    let request = &upstream.requests()[0];
    let listing = serde_json::to_string(&request.messages[1]).unwrap();
    for i in 1..=20 {
        assert!(
            listing.contains(&format!("skill-{i:02}: Skill number {i}:")),
            "skill {i}"
        );
    }
    assert!(listing.contains("topic 20."), "the last entry is whole");
}
