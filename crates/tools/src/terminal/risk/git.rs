//! `git`: read-only subcommands, writers, and the ones that destroy history or run programs.

use toolbridge_agent::approval::CallRisk;

use super::args::short_group;
use super::{Ctx, Findings};
use crate::terminal::shell::Word;

impl Ctx {
    pub(super) fn git(&mut self, f: &mut Findings, args: &[Word]) {
        use CallRisk::{High, Low, Medium, Unknown};
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            match t {
                "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => i += 2,
                "-c" => {
                    let key = args
                        .get(i + 1)
                        .map(|w| {
                            w.text
                                .split('=')
                                .next()
                                .unwrap_or_default()
                                .to_ascii_lowercase()
                        })
                        .unwrap_or_default();
                    #[rustfmt::skip]
                    const HARMLESS: &[&str] = &[
                        "user.name", "user.email", "color.ui", "core.quotepath",
                        "init.defaultbranch", "safe.directory", "commit.gpgsign",
                        "advice.detachedhead", "pull.rebase", "core.autocrlf",
                    ];
                    if !HARMLESS.contains(&key.as_str()) {
                        f.add(Unknown, format!("git -c {key} can make git run a program"));
                    }
                    i += 2;
                }
                _ if t.starts_with("--exec-path") || t.starts_with("--config-env") => {
                    f.add(Unknown, format!("git {t} changes what git runs"));
                    i += 1;
                }
                _ if t.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let Some(sub) = args.get(i) else {
            f.add(Low, "git prints its usage");
            return;
        };
        let rest: Vec<&str> = args[i + 1..].iter().map(|w| w.text.as_str()).collect();
        if rest.iter().any(|t| {
            t.starts_with("--upload-pack")
                || t.starts_with("--receive-pack")
                || t.starts_with("--exec")
                || *t == "-u"
        }) && matches!(
            sub.text.as_str(),
            "clone" | "fetch" | "pull" | "ls-remote" | "archive" | "push"
        ) {
            f.add(
                Unknown,
                format!("git {} with an option that runs a program", sub.text),
            );
        }
        if rest.iter().any(|t| t.starts_with("ext::")) {
            f.add(High, "the git ext:: transport runs a command");
        }
        let has = |names: &[&str]| {
            rest.iter().any(|t| {
                names
                    .iter()
                    .any(|n| t == n || t.starts_with(&format!("{n}=")))
            })
        };
        let short_has = |c: char| {
            rest.iter()
                .any(|t| short_group(t).is_some_and(|g| g.contains(c)))
        };
        match sub.text.as_str() {
            "status" | "log" | "diff" | "show" | "blame" | "describe" | "shortlog"
            | "rev-parse" | "rev-list" | "ls-files" | "ls-tree" | "cat-file" | "grep"
            | "whatchanged" | "show-ref" | "for-each-ref" | "count-objects" | "version"
            | "help" | "merge-base" | "name-rev" | "cherry" | "var" | "check-ignore"
            | "check-attr" | "show-branch" => {
                if has(&["--ext-diff"]) {
                    f.add(Unknown, "git --ext-diff runs a program");
                }
                match args[i + 1..]
                    .iter()
                    .find(|w| w.text.starts_with("--output="))
                {
                    Some(out) => {
                        f.add(Medium, "git --output writes a file");
                        let path =
                            Word::part(out.text.trim_start_matches("--output="), out.dynamic);
                        self.written(f, &path, "git writes");
                    }
                    None => f.add(Low, format!("git {} (read-only)", sub.text)),
                }
            }
            "reflog" => match rest.first() {
                Some(&("expire" | "delete")) => f.add(Medium, "git reflog expire changes history"),
                _ => f.add(Low, "git reflog (read-only)"),
            },
            "branch" => {
                #[rustfmt::skip]
                const LISTING: &[&str] = &[
                    "-a", "-r", "-v", "-vv", "-l", "--list", "--all", "--remotes",
                    "--show-current", "--verbose", "--merged", "--no-merged", "--contains",
                    "--no-contains", "--column", "--no-column", "--color", "--no-color",
                ];
                if rest.iter().all(|t| {
                    LISTING.contains(t) || t.starts_with("--sort=") || t.starts_with("--format=")
                }) {
                    f.add(Low, "git branch lists branches");
                } else {
                    f.add(Medium, "git branch changes branches");
                }
            }
            "tag" => {
                if rest.is_empty() || has(&["-l", "--list"]) {
                    f.add(Low, "git tag lists tags");
                } else {
                    f.add(Medium, "git tag changes tags");
                }
            }
            "remote" => match rest.first() {
                None | Some(&("-v" | "--verbose" | "show" | "get-url")) => {
                    f.add(Low, "git remote (read-only)")
                }
                _ => f.add(Medium, "git remote changes remotes"),
            },
            "stash" => match rest.first() {
                Some(&("list" | "show")) => f.add(Low, "git stash list"),
                _ => f.add(Medium, "git stash changes the working tree"),
            },
            "worktree" => match rest.first() {
                Some(&"list") => f.add(Low, "git worktree list"),
                _ => f.add(Medium, "git worktree changes work trees"),
            },
            "config" => {
                if has(&["--get", "--get-all", "--get-regexp", "--list", "-l"])
                    || rest.first() == Some(&"get")
                    || rest.first() == Some(&"list")
                {
                    f.add(Low, "git config reads settings");
                } else {
                    f.add(Unknown, "git config can set programs git runs later");
                }
            }
            "push" => {
                let force = has(&[
                    "--force",
                    "--force-with-lease",
                    "--force-if-includes",
                    "--mirror",
                    "--delete",
                    "--prune",
                ]) || short_has('f')
                    || short_has('d')
                    || rest
                        .iter()
                        .any(|t| t.starts_with('+') || (t.starts_with(':') && t.len() > 1));
                if force {
                    f.add(
                        High,
                        "git push --force or --delete rewrites or removes remote history",
                    );
                } else {
                    f.add(Medium, "git push");
                }
            }
            "reset" => {
                if has(&["--hard", "--merge", "--keep"]) {
                    f.add(High, "git reset --hard discards changes");
                } else {
                    f.add(Medium, "git reset");
                }
            }
            "clean" => {
                if has(&["--force"]) || short_has('f') {
                    f.add(High, "git clean -f deletes untracked files");
                } else if has(&["--dry-run"]) || short_has('n') {
                    f.add(Low, "git clean --dry-run");
                } else {
                    f.add(Medium, "git clean");
                }
            }
            "checkout" | "switch" | "restore" | "add" | "commit" | "merge" | "rebase" | "pull"
            | "fetch" | "init" | "clone" | "mv" | "rm" | "cherry-pick" | "revert" | "am"
            | "apply" | "notes" | "submodule" | "gc" | "prune" | "bisect" | "archive"
            | "format-patch" | "sparse-checkout" | "maintenance" => {
                f.add(Medium, format!("git {} changes the repository", sub.text));
            }
            "filter-branch" | "filter-repo" | "update-ref" => {
                f.add(High, format!("git {} rewrites history", sub.text));
            }
            other => f.add(
                Unknown,
                format!("git {other} is not a git command toolbridge knows (an alias?)"),
            ),
        }
    }
}
