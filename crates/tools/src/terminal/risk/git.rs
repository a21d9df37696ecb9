//! `git`: read-only subcommands, writers, and the ones that destroy history or run programs.

use toolbridge_agent::approval::CallRisk;

use super::args::{long_option, option_value, short_group};
use super::{Ctx, Findings};
use crate::terminal::shell::Word;

impl Ctx {
    /// Judges a git command line: git's own options, options that run programs, then the
    /// subcommand (read-only, listing or changing, discarding, changing the repository, rewriting
    /// history, or unknown).
    pub(super) fn git(&mut self, f: &mut Findings, args: &[Word]) {
        use CallRisk::{High, Low, Medium, Unknown};
        let i = global_options(f, args);
        let Some(sub) = args.get(i) else {
            f.add(Low, "git prints its usage");
            return;
        };
        let sub_args = &args[i + 1..];
        let rest: Vec<&str> = sub_args.iter().map(|w| w.text.as_str()).collect();
        options_that_run_programs(f, &sub.text, &rest);
        let known = self.read_only_subcommand(f, sub, sub_args, &rest)
            || listing_or_changing(f, &sub.text, &rest)
            || discarding(f, &sub.text, &rest);
        if known {
            return;
        }
        match sub.text.as_str() {
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

    /// The read-only subcommands, unless an option runs a program or writes a file.
    fn read_only_subcommand(
        &mut self,
        f: &mut Findings,
        sub: &Word,
        sub_args: &[Word],
        rest: &[&str],
    ) -> bool {
        use CallRisk::{High, Low, Medium, Unknown};
        match sub.text.as_str() {
            "status" | "log" | "diff" | "show" | "blame" | "describe" | "shortlog"
            | "rev-parse" | "rev-list" | "ls-files" | "ls-tree" | "cat-file" | "grep"
            | "whatchanged" | "show-ref" | "for-each-ref" | "count-objects" | "version"
            | "help" | "merge-base" | "name-rev" | "cherry" | "var" | "check-ignore"
            | "check-attr" | "show-branch" => {
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
            _ => return false,
        }
        true
    }
}

/// Reads git's own options before the subcommand (judging those that change what git reads and
/// runs); returns the subcommand's index.
fn global_options(f: &mut Findings, args: &[Word]) -> usize {
    use CallRisk::Unknown;
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
    i
}

/// Options of the transport subcommands that name a program to run, and the `ext::` transport.
fn options_that_run_programs(f: &mut Findings, sub: &str, rest: &[&str]) {
    use CallRisk::{High, Unknown};
    if rest.iter().any(|t| {
        t.starts_with("--upload-pack")
            || t.starts_with("--receive-pack")
            || t.starts_with("--exec")
            || *t == "-u"
    }) && matches!(
        sub,
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" | "push"
    ) {
        f.add(
            Unknown,
            format!("git {sub} with an option that runs a program"),
        );
    }
    if rest.iter().any(|t| t.starts_with("ext::")) {
        f.add(High, "the git ext:: transport runs a command");
    }
}

/// Subcommands that list without arguments, or with listing ones, and change things otherwise.
fn listing_or_changing(f: &mut Findings, sub: &str, rest: &[&str]) -> bool {
    use CallRisk::{Low, Medium, Unknown};
    match sub {
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
            if rest.is_empty() || has(rest, &["-l", "--list"]) {
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
        _ => return false,
    }
    true
}

/// Subcommands that can discard work or history: force pushes, hard resets, forced cleans.
fn discarding(f: &mut Findings, sub: &str, rest: &[&str]) -> bool {
    use CallRisk::{High, Low, Medium};
    match sub {
        "push" => {
            const FORCING: &[&str] = &[
                "--force",
                "--force-with-lease",
                "--force-if-includes",
                "--mirror",
                "--delete",
                "--prune",
            ];
            let force = has(rest, FORCING)
                || short_has(rest, 'f')
                || short_has(rest, 'd')
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
            if has(rest, &["--hard", "--merge", "--keep"]) {
                f.add(High, "git reset --hard discards changes");
            } else {
                f.add(Medium, "git reset");
            }
        }
        "clean" => {
            if has(rest, &["--force"]) || short_has(rest, 'f') {
                f.add(High, "git clean -f deletes untracked files");
            } else if has(rest, &["--dry-run"]) || short_has(rest, 'n') {
                f.add(Low, "git clean --dry-run");
            } else {
                f.add(Medium, "git clean");
            }
        }
        _ => return false,
    }
    true
}

/// One of the long options, alone or with `=VALUE`.
fn has(rest: &[&str], names: &[&str]) -> bool {
    rest.iter().any(|t| {
        names
            .iter()
            .any(|n| t == n || t.starts_with(&format!("{n}=")))
    })
}

/// A group of short options with the letter.
fn short_has(rest: &[&str], c: char) -> bool {
    rest.iter()
        .any(|t| short_group(t).is_some_and(|g| g.contains(c)))
}
