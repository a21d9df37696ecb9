//! The skill set: validation, the listing, the built-in skill, inline bodies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

// Validation.

#[test]
fn duplicate_names_are_refused() {
    let set = SkillSet::new(vec![
        Skill::text("a", "First.", "1"),
        Skill::text("b", "B.", "2"),
        Skill::text("a", "Second.", "3"),
    ]);
    let err = set.validate(&[], DEFAULT_SKILL_TOOL).unwrap_err();
    assert!(matches!(&err, SkillError::Duplicate { name, .. } if name == "a"));
    let message = err.to_string();
    assert!(message.contains("\"a\"") && message.contains("First.") && message.contains("Second."));
}

#[test]
fn empty_and_whitespace_names_are_refused() {
    for name in ["", "  ", "\t\n"] {
        let set = SkillSet::new(vec![Skill::text(name, "Nameless.", "x")]);
        let err = set.validate(&[], DEFAULT_SKILL_TOOL).unwrap_err();
        assert!(matches!(err, SkillError::EmptyName { .. }), "{name:?}");
        assert!(err.to_string().contains("Nameless."));
    }
}

#[test]
fn a_tool_carrying_the_skill_tools_name_is_refused() {
    let set = SkillSet::new(vec![Skill::text("a", "A.", "x")]);
    let err = set
        .validate(&["web_search", "use_skill"], DEFAULT_SKILL_TOOL)
        .unwrap_err();
    assert!(matches!(&err, SkillError::ToolNameTaken(n) if n == "use_skill"));
    assert!(err.to_string().contains("use_skill"));
    // A custom skill tool name is checked instead of the default.
    assert!(set.validate(&["use_skill"], "Skill").is_ok());
    assert!(matches!(
        set.validate(&["Skill"], "Skill"),
        Err(SkillError::ToolNameTaken(_))
    ));
    // No skills, no skill tool: nothing to collide with.
    assert!(SkillSet::default()
        .validate(&["use_skill"], DEFAULT_SKILL_TOOL)
        .is_ok());
    // No skill tool (bodies inline): any tool name is fine.
    assert!(set.validate(&["use_skill"], "").is_ok());
    assert!(set.validate(&["web_search"], DEFAULT_SKILL_TOOL).is_ok());
}

// The listing.

#[test]
fn the_listing_is_the_header_then_one_line_per_skill() {
    let set = SkillSet::new(vec![
        Skill::text("commit-style", "How commits are written here.", "x"),
        Skill::text("pdf", "Fill PDF forms.", "y"),
    ]);
    assert_eq!(
        set.listing("use_skill"),
        format!(
            "{}\ncommit-style: How commits are written here.\npdf: Fill PDF forms.",
            texts::skill_listing_header("use_skill")
        )
    );
    assert!(set
        .listing("Skill")
        .starts_with(&texts::skill_listing_header("Skill")));
    assert_eq!(SkillSet::default().listing("use_skill"), "");
}

#[test]
fn descriptions_with_line_breaks_are_listed_on_one_line() {
    let set = SkillSet::new(vec![Skill::text(
        "a",
        "First line,\r\n  second line.\n",
        "x",
    )]);
    assert_eq!(
        entries(&set.listing("use_skill")),
        "a: First line, second line."
    );
}

// The built-in skill.

#[tokio::test]
async fn the_builtin_entry_is_the_seeds_index_entry_byte_for_byte() {
    let set = SkillSet::with_builtin(vec![], true);
    assert_eq!(set.names(), vec!["document-generation"]);
    assert_eq!(
        entries(&set.listing("use_skill")),
        texts::DOCGEN_INDEX_ENTRY
    );
    let skill = Skill::document_generation();
    assert_eq!(skill.name, "document-generation");
    assert_eq!(
        format!("{}: {}", skill.name, skill.description),
        texts::DOCGEN_INDEX_ENTRY
    );
    assert_eq!(skill.body().await.unwrap(), texts::DOCGEN_BODY);
    let t = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(set));
    assert_eq!(
        call(&t, "document-generation").await.unwrap(),
        texts::DOCGEN_BODY
    );
}

#[test]
fn the_builtin_comes_first_and_only_when_asked_for() {
    let configured = vec![Skill::text("a", "A.", "x")];
    let with = SkillSet::with_builtin(configured.clone(), true);
    assert_eq!(with.names(), vec!["document-generation", "a"]);
    assert_eq!(
        entries(&with.listing("use_skill")).lines().next().unwrap(),
        texts::DOCGEN_INDEX_ENTRY
    );
    let without = SkillSet::with_builtin(configured, false);
    assert_eq!(without.names(), vec!["a"]);
    assert!(SkillSet::with_builtin(vec![], false).is_empty());
}

#[tokio::test]
async fn a_configured_skill_shadows_the_builtin() {
    let set = SkillSet::with_builtin(
        vec![
            Skill::text("a", "A.", "x"),
            Skill::text("document-generation", "Our own document rules.", "OURS"),
        ],
        true,
    );
    assert_eq!(set.len(), 2);
    assert_eq!(set.names(), vec!["a", "document-generation"]);
    set.validate(&[], DEFAULT_SKILL_TOOL).unwrap();
    let listing = set.listing("use_skill");
    assert!(listing.ends_with("\ndocument-generation: Our own document rules."));
    assert!(!listing.contains(texts::DOCGEN_INDEX_ENTRY));
    let t = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(set.clone()));
    assert_eq!(call(&t, "document-generation").await.unwrap(), "OURS");
    assert!(!set.inline_bodies().await.contains(texts::DOCGEN_BODY));
}

// Inline bodies.

#[tokio::test]
async fn inline_bodies_are_the_header_then_the_bodies() {
    let set = SkillSet::with_builtin(
        vec![
            Skill::text("a", "A.", "BODY A"),
            Skill::loader("broken", "Broken.", || async { Err("offline".to_owned()) }),
            Skill::text("b", "B.", "BODY B"),
        ],
        true,
    );
    let inline = set.inline_bodies().await;
    assert!(inline.contains(texts::DOCGEN_BODY));
    assert_eq!(
        inline,
        format!(
            "{}\n\n{}\n\nBODY A\n\nBODY B",
            texts::SKILLS_INLINE_HEADER,
            texts::DOCGEN_BODY
        )
    );
    assert_eq!(SkillSet::default().inline_bodies().await, "");
}

#[tokio::test]
async fn the_futures_can_be_spawned() {
    let set = Arc::new(SkillSet::with_builtin(vec![], true));
    let shared = Arc::clone(&set);
    let inline = tokio::spawn(async move { shared.inline_bodies().await });
    assert!(inline.await.unwrap().contains(texts::DOCGEN_BODY));
    let shared = Arc::clone(&set);
    let body = tokio::spawn(async move { shared.iter().next().unwrap().body().await });
    assert_eq!(body.await.unwrap().unwrap(), texts::DOCGEN_BODY);
    let t = SkillTool::new(DEFAULT_SKILL_TOOL, set);
    let call = t.invoke(
        serde_json::json!({"name": "document-generation"}),
        ToolContext::default(),
    );
    assert_eq!(
        tokio::spawn(call).await.unwrap().unwrap(),
        texts::DOCGEN_BODY
    );
}
