//! The skill tool: loading, the once-per-conversation note, failures, cancellation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

#[tokio::test]
async fn second_load_returns_the_note_not_the_body() {
    let t = tool(vec![Skill::text(
        "commit-style",
        "How commits are written.",
        "BODY",
    )]);
    assert_eq!(call(&t, "commit-style").await.unwrap(), "BODY");
    assert_eq!(
        call(&t, "commit-style").await.unwrap(),
        texts::skill_already_loaded("commit-style")
    );
    assert_eq!(t.loaded(), vec!["commit-style".to_owned()]);
}

#[tokio::test]
async fn a_new_tool_instance_is_a_new_run() {
    let skills = Arc::new(SkillSet::new(vec![Skill::text("a", "A.", "BODY")]));
    let first = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::clone(&skills));
    assert_eq!(call(&first, "a").await.unwrap(), "BODY");
    let second = SkillTool::new(DEFAULT_SKILL_TOOL, skills);
    assert_eq!(call(&second, "a").await.unwrap(), "BODY");
    assert!(call(&first, "a").await.unwrap().contains("already loaded"));
}

#[tokio::test]
async fn a_failed_body_is_not_marked_loaded_and_a_retry_succeeds() {
    let failed_once = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (Arc::clone(&failed_once), Arc::clone(&calls));
    let skill = Skill::loader("flaky", "Fails once.", move || {
        let (flag, count) = (Arc::clone(&flag), Arc::clone(&count));
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            if flag.swap(true, Ordering::SeqCst) {
                Ok("RECOVERED".to_owned())
            } else {
                Err("database unavailable".to_owned())
            }
        }
    });
    let t = tool(vec![skill]);
    let err = call(&t, "flaky").await.unwrap_err();
    assert_eq!(err.to_string(), texts::skill_load_failed("flaky"));
    assert!(
        !err.to_string().contains("database"),
        "the detail stays in the log"
    );
    assert!(t.loaded().is_empty());
    assert_eq!(call(&t, "flaky").await.unwrap(), "RECOVERED");
    assert_eq!(t.loaded(), vec!["flaky".to_owned()]);
    assert_eq!(
        call(&t, "flaky").await.unwrap(),
        texts::skill_already_loaded("flaky")
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the loader runs only on demand"
    );
}

#[tokio::test]
async fn loaders_run_only_when_loaded() {
    let calls = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&calls);
    let skill = Skill::loader("lazy", "Lazy.", move || {
        let count = Arc::clone(&count);
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            Ok("LAZY".to_owned())
        }
    });
    let set = SkillSet::new(vec![skill]);
    let _ = set.listing(DEFAULT_SKILL_TOOL);
    set.validate(&[], DEFAULT_SKILL_TOOL).unwrap();
    let t = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(set));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(call(&t, "lazy").await.unwrap(), "LAZY");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn unknown_name_lists_the_valid_names() {
    let t = tool(vec![
        Skill::text("a", "A.", "A"),
        Skill::text("b", "B.", "B"),
    ]);
    assert_eq!(
        call(&t, "c").await.unwrap_err().to_string(),
        texts::skill_not_found("c", &["a", "b"])
    );
    let odd = t
        .invoke(serde_json::json!({ "name": 5 }), ToolContext::default())
        .await;
    assert_eq!(
        odd.unwrap_err().to_string(),
        texts::skill_not_found("5", &["a", "b"])
    );
    let missing = t
        .invoke(serde_json::json!({}), ToolContext::default())
        .await;
    assert_eq!(
        missing.unwrap_err().to_string(),
        texts::skill_not_found("", &["a", "b"])
    );
    assert!(t.loaded().is_empty());
    // Stray whitespace around a valid name is forgiven.
    assert_eq!(call(&t, " a ").await.unwrap(), "A");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_loads_of_one_skill_give_one_body_and_one_note() {
    let skill = Skill::loader("slow", "Slow.", || async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Ok("SLOW".to_owned())
    });
    let t = tool(vec![skill]);
    let (a, b) = tokio::join!(call(&t, "slow"), call(&t, "slow"));
    let mut results = vec![a.unwrap(), b.unwrap()];
    results.sort();
    assert_eq!(
        results,
        vec!["SLOW".to_owned(), texts::skill_already_loaded("slow")]
    );
}

#[tokio::test]
async fn a_cancelled_load_is_not_marked_loaded() {
    let skill = Skill::loader("never", "Hangs.", || async {
        futures::future::pending::<()>().await;
        Ok("NEVER".to_owned())
    });
    let t = tool(vec![skill]);
    let context = ToolContext::default();
    context.cancel.cancel();
    let err = t
        .invoke(serde_json::json!({"name": "never"}), context)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), texts::ERROR_CANCELED);
    assert!(t.loaded().is_empty());
}

#[test]
fn the_tool_spec_is_the_seeds_use_skill_exactly() {
    let t = tool(vec![]);
    let spec = t.spec();
    assert_eq!(spec.name, "use_skill");
    assert_eq!(spec.description, texts::USE_SKILL_DESCRIPTION);
    let schema = serde_json::to_string(spec.parameters.as_ref().unwrap()).unwrap();
    assert_eq!(schema, texts::USE_SKILL_SCHEMA);
    assert_eq!(t.spec_owned().name, "use_skill");
    let custom = SkillTool::new("Skill", Arc::new(SkillSet::default()));
    assert_eq!(custom.spec().name, "Skill");
    assert_eq!(custom.spec().description, texts::USE_SKILL_DESCRIPTION);
    assert!(!t.requires_approval());
}
