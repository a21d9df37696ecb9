//! `git`: read-only subcommands, writers, and the ones that destroy history or run programs.

use toolbridge_agent::approval::CallRisk;

use super::args::{long_option, option_value, short_group};
use super::{Ctx, Findings};
use crate::terminal::shell::Word;

impl Ctx {
    pub(super) fn git(&mut self, f: &mut Findings, args: &[Word]) {
        use CallRisk::{High, Low, Medium, Unknown};
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            match t {
                "-C" | "--namespace" | "--super-prefix" => i += 2,
                "-c" | "--git-dir" | "--work-tree" => {
                    f.add(Unknown, format!("git {t} changes what git reads and runs"));
                    i += 2;
                }
                "-p" | "--paginate" => {
                    f.add(Unknown, "git -p runs a pager");
                    i += 1;
                }
                _ if [
                    "--exec-path",
                    "--config-env",
                    "--git-dir",
                    "--work-tree",
                    "--paginate",
                ]
                .iter()
                .any(|o| long_option(t, o).is_some())
                    || (t.starts_with("-c") && !t.starts_with("--")) =>
                {
                    f.add(Unknown, format!("git {t} changes what git reads and runs"));
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
                let sub_args = &args[i + 1..];
                if rest.iter().any(|t| long_option(t, "--ext-diff").is_some()) {
                    f.add(Unknown, "git --ext-diff runs a program");
                }
                if rest.iter().any(|t| {
                    long_option(t, "--open-files-in-pager").is_some()
                        || short_group(t).is_some_and(|g| g.contains('O'))
                }) {
                    f.add(High, "git grep -O runs a program on the matches");
                }
                match option_value(sub_args, &["--output"]) {
                    Some(out) => {
                        f.add(Medium, "git --output writes a file");
                        self.written(f, &out, "git writes");
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
                // git stops reading options at the first plain argument: `git config KEY VALUE
                // --get` sets KEY. Only a reading action first, and no writing option, is read-only.
                #[rustfmt::skip]
                const READS: &[&str] = &[
                    "get", "list", "--get", "--get-all", "--get-regexp", "--list", "-l",
                ];
                #[rustfmt::skip]
                const WRITES: &[&str] = &[
                    "--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
                    "--remove-section", "--edit", "-e", "set", "unset", "edit",
                    "rename-section", "remove-section",
                ];
                if rest.first().is_some_and(|t| READS.contains(t))
                    && !rest.iter().skip(1).any(|t| WRITES.contains(t))
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
