//! Unit tests of [`super::parse`]: quoting, command splitting, substitution counting,
//! redirections, functions, assignments and refused input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn names(src: &str) -> Vec<Vec<String>> {
    parse(src)
        .unwrap()
        .commands
        .iter()
        .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
        .collect()
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(
        names(r#"echo "a b" 'c d' e\ f"#),
        vec![vec!["echo", "a b", "c d", "e f"]]
    );
    assert_eq!(names(r"\rm -rf x"), vec![vec!["rm", "-rf", "x"]]);
    assert_eq!(names(r"$'\x72\x6d' -rf x"), vec![vec!["rm", "-rf", "x"]]);
    assert_eq!(names("r''m x"), vec![vec!["rm", "x"]]);
}

#[test]
fn lists_pipelines_and_groups_split_commands() {
    assert_eq!(
        names("ls; cat f && (cd x || pwd) | wc -l &"),
        vec![
            vec!["ls"],
            vec!["cat", "f"],
            vec!["cd", "x"],
            vec!["pwd"],
            vec!["wc", "-l"]
        ]
    );
    let s = parse("curl x | { cat; sh; }").unwrap();
    assert!(s.commands[1].piped && s.commands[2].piped);
    assert!(!s.commands[0].piped);
    let s = parse("for f in a b; do cat \"$f\"; done").unwrap();
    assert_eq!(s.commands.len(), 1);
    assert!(s.commands[0].words[1].dynamic);
}

#[test]
fn substitutions_are_counted_everywhere() {
    for src in [
        "echo $(id)",
        "echo \"$(id)\"",
        "echo `id`",
        "echo ${x:-$(id)}",
        "diff <(ls) x",
        "cat <<EOF\n$(id)\nEOF",
        "echo $(( $(id) + 1 ))",
    ] {
        assert!(parse(src).unwrap().substitutions > 0, "{src}");
    }
    for src in ["echo '$(id)'", "cat <<'EOF'\n$(id)\nEOF", "echo $((1+2))"] {
        assert_eq!(parse(src).unwrap().substitutions, 0, "{src}");
    }
}

#[test]
fn redirections_and_heredocs() {
    let s = parse("cat <<-EOF > out.txt 2>&1\n\tbody\n\tEOF\necho done").unwrap();
    assert_eq!(s.commands.len(), 2);
    let ops: Vec<RedirectOp> = s.commands[0].redirects.iter().map(|r| r.op).collect();
    assert_eq!(
        ops,
        vec![
            RedirectOp::HereDoc,
            RedirectOp::Write,
            RedirectOp::Duplicate
        ]
    );
    assert_eq!(s.commands[0].redirects[2].fd, Some(2));
    assert_eq!(s.commands[1].words[0].text, "echo");
}

#[test]
fn functions_calling_themselves_are_marked() {
    let s = parse(":(){ :|:& };:").unwrap();
    assert!(s.commands.iter().any(|c| c.recursive_call));
    let s = parse("f() { echo hi; }; f").unwrap();
    assert!(s.commands.iter().all(|c| !c.recursive_call));
}

#[test]
fn assignments_need_an_unquoted_name() {
    let s = parse("FOO=1 \"BAR\"=2 x").unwrap();
    assert_eq!(s.commands[0].assignments.len(), 1);
    assert_eq!(s.commands[0].words[0].text, "BAR=2");
}

#[test]
fn broken_input_is_an_error() {
    for src in [
        "echo 'x",
        "echo \"x",
        "echo $(x",
        "ls |",
        "ls &&",
        "| ls",
        "(ls",
        "ls)",
        "case x in a) ls;; esac",
        "{ ls",
    ] {
        assert!(parse(src).is_err(), "{src}");
    }
}
