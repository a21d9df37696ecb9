//! Skill folders and SKILL.md files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

#[tokio::test]
async fn a_folder_of_skill_folders_loads_sorted_by_name() {
    let dir = fixtures().join("library");
    let skills = load_dirs(std::slice::from_ref(&dir)).unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    // Folders are commit-style/, pdf-forms/, release/ (named "changelog"); assets/ has no
    // SKILL.md and .hidden/ is hidden.
    assert_eq!(names, vec!["changelog", "commit-style", "pdf-forms"]);
    let pdf = &skills[2];
    assert_eq!(
        pdf.description,
        "Fill in PDF forms. Use when the user uploads a PDF with form fields."
    );
    assert!(
        matches!(&pdf.source, SkillSource::File(p) if p == &dir.join("pdf-forms").join("SKILL.md"))
    );
    assert_eq!(
        pdf.body().await.unwrap(),
        "# PDF forms\n\nRead the fields first, then fill them."
    );
    assert_eq!(
        skills[0].description,
        "How release notes are written. Use before writing a changelog entry."
    );
}

#[test]
fn a_single_skill_folder_and_folder_order() {
    let skills = load_dirs(&[fixtures().join("single"), fixtures().join("library")]).unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["single-skill", "changelog", "commit-style", "pdf-forms"]
    );
    assert_eq!(skills[0].description, "A skill folder on its own.");
    SkillSet::with_builtin(skills, true)
        .validate(&["web_search"], DEFAULT_SKILL_TOOL)
        .unwrap();
    assert!(load_dirs(&[]).unwrap().is_empty());
}

#[test]
fn a_missing_description_is_an_error_naming_the_file() {
    let dir = fixtures().join("broken-missing-description");
    let err = load_dirs(std::slice::from_ref(&dir)).unwrap_err();
    assert!(matches!(&err, SkillError::FrontMatter { path, .. } if path == &dir.join("SKILL.md")));
    let message = err.to_string();
    assert!(
        message.contains(&dir.join("SKILL.md").display().to_string()),
        "{message}"
    );
    assert!(message.contains("description"), "{message}");
}

#[test]
fn a_skill_md_without_front_matter_is_an_error_naming_the_file() {
    let dir = fixtures().join("broken-no-front-matter");
    let err = load_dirs(std::slice::from_ref(&dir)).unwrap_err();
    assert!(matches!(&err, SkillError::FrontMatter { path, .. } if path == &dir.join("SKILL.md")));
    assert!(err.to_string().contains("front matter"), "{err}");
}

#[test]
fn a_missing_folder_is_an_error() {
    let dir = fixtures().join("does-not-exist");
    let err = load_dirs(&[fixtures().join("single"), dir.clone()]).unwrap_err();
    assert!(matches!(&err, SkillError::MissingDir { path } if path == &dir));
    assert!(err.to_string().contains("does-not-exist"));
    let file = fixtures().join("single").join("SKILL.md");
    assert!(matches!(
        load_dirs(&[file]),
        Err(SkillError::NotADir { .. })
    ));
}

#[test]
fn bad_front_matter_values_are_refused() {
    let cases = [
        (
            "unclosed",
            "---\nname: x\ndescription: y\n# body\n",
            "not closed",
        ),
        (
            "empty-name",
            "---\nname: \"  \"\ndescription: y\n---\nbody\n",
            "`name` is empty",
        ),
        (
            "number",
            "---\nname: 5\ndescription: y\n---\nbody\n",
            "must be a string",
        ),
        ("no-name", "---\ndescription: y\n---\nbody\n", "no `name`"),
        ("not-a-map", "---\n- a\n- b\n---\nbody\n", "mapping"),
        (
            "bad-yaml",
            "---\nname: [x\ndescription: y\n---\n",
            "not valid YAML",
        ),
        ("empty", "---\n---\nbody\n", "no `name`"),
    ];
    for (tag, content, expected) in cases {
        let tmp = TempDir::new(tag);
        let file = tmp.write("SKILL.md", content);
        let err = load_dirs(std::slice::from_ref(&tmp.0)).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&file.display().to_string()),
            "{tag}: {message}"
        );
        assert!(message.contains(expected), "{tag}: {message}");
    }
}

#[tokio::test]
async fn crlf_line_endings_and_a_bom_are_understood() {
    let tmp = TempDir::new("crlf");
    tmp.write(
        "crlf/SKILL.md",
        "\u{feff}---\r\nname: crlf-skill\r\ndescription: Written on Windows.\r\nlicense: MIT\r\n---\r\n\r\n# Title\r\n\r\nLine one.\r\nLine two.\r\n",
    );
    let skills = load_dirs(std::slice::from_ref(&tmp.0)).unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].name, "crlf-skill");
    assert_eq!(skills[0].description, "Written on Windows.");
    assert_eq!(
        skills[0].body().await.unwrap(),
        "# Title\n\nLine one.\nLine two."
    );
}

#[tokio::test]
async fn folded_descriptions_and_extra_keys() {
    let tmp = TempDir::new("folded");
    tmp.write(
        "s/SKILL.md",
        "---\nname: folded\ndescription: >\n  A long description\n  over two lines.\nallowed-tools: [Read, Bash]\nmetadata:\n  version: \"1.0\"\n---\nBody.\n",
    );
    let skills = load_dirs(std::slice::from_ref(&tmp.0)).unwrap();
    assert_eq!(skills[0].description, "A long description over two lines.");
    assert_eq!(
        entries(&SkillSet::new(skills).listing("use_skill")),
        "folded: A long description over two lines."
    );
}

#[tokio::test]
async fn file_bodies_are_read_when_loaded() {
    let tmp = TempDir::new("live");
    let file = tmp.write(
        "live/SKILL.md",
        "---\nname: live\ndescription: Changes.\n---\nOLD BODY\n",
    );
    let skills = load_dirs(std::slice::from_ref(&tmp.0)).unwrap();
    std::fs::write(
        &file,
        "---\nname: live\ndescription: Changes.\n---\n\nNEW BODY\n",
    )
    .unwrap();
    assert_eq!(skills[0].body().await.unwrap(), "NEW BODY");

    // A file gone at load time: reported to the model, not marked loaded, retry works.
    let t = tool(skills);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        call(&t, "live").await.unwrap_err().to_string(),
        texts::skill_load_failed("live")
    );
    assert!(t.loaded().is_empty());
    std::fs::write(&file, "---\nname: live\ndescription: Changes.\n---\nBACK\n").unwrap();
    assert_eq!(call(&t, "live").await.unwrap(), "BACK");
    assert_eq!(t.loaded(), vec!["live".to_owned()]);
}

#[test]
fn file_bodies_load_without_a_tokio_runtime() {
    let skills = load_dirs(&[fixtures().join("single")]).unwrap();
    let body = futures::executor::block_on(skills[0].body()).unwrap();
    assert_eq!(body, "Single skill body.");
}
