//! The runtime's own risk classification of a shell command (docs/src/security.md, "Model-written
//! code", and docs/src/sandbox.md), independent of what the model declares.
//!
//! The command is parsed ([`super::shell`]); every simple command in it (also inside groups,
//! loops, function bodies, `bash -c '…'` strings, `find -exec`, `xargs`, `env`, `timeout`, …) is
//! judged, and the command line gets the highest result (low < medium < unknown < high):
//!
//! - **high**: command substitution anywhere (`$(…)`, backquotes, `<(…)`); a shell or interpreter
//!   reading its program from a pipe (`curl … | sh`); `rm -r` in any spelling; `sudo`, `su`,
//!   `doas` and other privilege changes; `eval`, `exec`; force pushes, `git reset --hard`,
//!   `git clean -f`; `dd`, `mkfs`, disk tools; recursive `chmod`/`chown`; writes to block devices,
//!   to `/dev/tcp`, or outside `/workspace` and `/tmp`; sourcing a file in a script that downloads;
//!   `kill -9 -1`; a function calling itself (fork bombs); shutdown and reboot; setting variables
//!   that make other programs run code (`LD_PRELOAD`, `PATH`, `BASH_ENV`, …).
//! - **low**: only known read-only commands (`ls`, `cat`, `grep`, `find` without
//!   `-delete`/`-exec`, `git status`, `python --version`, …) run from the system's own folders,
//!   with no write anywhere.
//! - **medium**: known writers inside the workspace (`mkdir`, `cp`, `mv`, `rm` of files,
//!   `sed -i`, `git commit`, `pip install`, a `>` into the workspace, …).
//! - **unknown** (needs approval under the default policy): anything else — an unknown program,
//!   a script or inline program (`python -c`, `bash x.sh`), a command name or flag-sensitive
//!   argument computed at run time (`$cmd`, `rm $x`, `find . $opts`), or input that does not
//!   parse.
//!
//! Being read-only is judged from the command line; what runs inside the sandbox stays confined
//! to it whatever the classification (a repository's own configuration, for one, can make
//! `git status` run a program).

mod args;
mod dispatch;
mod git;
mod interpreters;
mod names;
mod paths;
mod rules;
mod wrappers;

use toolbridge_agent::approval::CallRisk;

use self::args::basename;
use self::names::{
    code_loading_variable, harmless_variable, EVALUATES_NAMES, JUDGE_OWN_ARGUMENTS, READ_ONLY,
};
use self::paths::Place;
use super::shell::{self, Command, RedirectOp, Script, Word};

/// The classifier's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    pub risk: CallRisk,
    /// Why, for the person asked (the reasons at the final level, in order).
    pub reasons: Vec<String>,
}

/// Classifies a command line.
pub fn classify(command: &str) -> Classification {
    let mut findings = Findings::default();
    classify_script(&mut findings, command, 0, false);
    findings.finish()
}

/// Nested command strings (`bash -c`, `watch`, `env -S`, `trap`) are followed this deep.
const MAX_NESTING: usize = 4;

/// The person asked reads this many reasons at most.
const MAX_REASONS: usize = 8;

#[derive(Default)]
struct Findings {
    risk: Option<CallRisk>,
    reasons: Vec<(CallRisk, String)>,
}

impl Findings {
    fn add(&mut self, risk: CallRisk, reason: impl Into<String>) {
        self.risk = Some(self.risk.map_or(risk, |r| r.max(risk)));
        self.reasons.push((risk, reason.into()));
    }

    fn finish(self) -> Classification {
        let risk = self.risk.unwrap_or(CallRisk::Unknown);
        let mut seen = std::collections::HashSet::new();
        let reasons = self
            .reasons
            .into_iter()
            .filter(|(r, reason)| *r == risk && seen.insert(reason.clone()))
            .map(|(_, reason)| reason)
            .take(MAX_REASONS)
            .collect();
        Classification { risk, reasons }
    }
}

fn classify_script(f: &mut Findings, src: &str, depth: usize, piped: bool) {
    if depth > MAX_NESTING {
        f.add(CallRisk::Unknown, "commands nested too deeply to follow");
        return;
    }
    let script = match shell::parse(src) {
        Ok(s) => s,
        Err(e) => {
            // What does not parse may still plainly contain a substitution.
            if ["$(", "`", "<(", ">("].iter().any(|s| src.contains(s)) {
                f.add(CallRisk::High, "command substitution");
            } else {
                f.add(CallRisk::Unknown, format!("could not be parsed ({e})"));
            }
            return;
        }
    };
    if script.substitutions > 0 {
        f.add(
            CallRisk::High,
            "command substitution ($(…), backquotes or <(…)) runs a hidden command",
        );
    }
    if script.late_evaluations > 0 {
        f.add(
            CallRisk::Unknown,
            "an expansion evaluates a variable's value as code ($((x)), ((…)), ${x@P}, ${!x}, …)",
        );
    }
    if script.commands.is_empty() {
        f.add(CallRisk::Unknown, "no command");
        return;
    }
    let mut ctx = Ctx {
        depth,
        piped,
        cwd_inside: true,
        downloads: downloads(&script),
    };
    for command in &script.commands {
        ctx.command(f, command);
    }
}

/// Programs that fetch from the network: `source`ing a file in a script that runs one is high.
fn downloads(script: &Script) -> bool {
    const FETCHERS: &[&str] = &[
        "curl",
        "wget",
        "aria2c",
        "fetch",
        "ftp",
        "tftp",
        "scp",
        "rsync",
        "nc",
        "ncat",
        "socat",
        "http",
        "lwp-download",
    ];
    script.commands.iter().any(|c| {
        c.words
            .iter()
            .any(|w| FETCHERS.contains(&basename(&w.text)))
    })
}

/// How a command gets its input.
#[derive(Clone, Copy, Default)]
struct Input {
    /// Standard input is a pipe.
    piped: bool,
    /// Standard input is a here-document, here-string or file.
    redirected: bool,
    /// Its arguments come from piped data (`… | xargs cmd`).
    args_from_pipe: bool,
}

struct Ctx {
    depth: usize,
    /// Every command's input is a pipe (a `bash -c` string fed by one).
    piped: bool,
    /// The working directory is still provably inside the workspace (after `cd /etc` it is not,
    /// for the rest of the line).
    cwd_inside: bool,
    downloads: bool,
}

impl Ctx {
    fn command(&mut self, f: &mut Findings, cmd: &Command) {
        for a in &cmd.assignments {
            self.assignment(f, a, !cmd.words.is_empty());
        }
        for r in &cmd.redirects {
            match r.op {
                RedirectOp::HereDoc | RedirectOp::HereString | RedirectOp::Duplicate => {}
                RedirectOp::Read => {
                    if let Place::Network(p) = self.place(&r.target) {
                        f.add(CallRisk::High, format!("opens a network connection ({p})"));
                    }
                }
                _ => self.written(f, &r.target, "redirects output to"),
            }
        }
        if cmd.recursive_call {
            f.add(
                CallRisk::High,
                "a function calls itself (the fork-bomb pattern)",
            );
        }
        if cmd.words.is_empty() {
            f.add(CallRisk::Low, "no program runs");
            return;
        }
        let input = Input {
            piped: cmd.piped || self.piped,
            redirected: cmd.stdin_redirected(),
            args_from_pipe: false,
        };
        self.run(f, &cmd.words, input, false);
    }

    /// `NAME=value` alone or (`prefix`) before a command.
    fn assignment(&mut self, f: &mut Findings, a: &Word, prefix: bool) {
        let Some(name) = a.assignment_name() else {
            f.add(CallRisk::Unknown, format!("an assignment `{}`", a.text));
            return;
        };
        let (target, value) = a.text.split_once('=').unwrap_or((a.text.as_str(), ""));
        if code_loading_variable(name) && !(prefix && harmless_variable(name, value)) {
            f.add(
                CallRisk::High,
                format!("sets {name}, which can make programs run other code"),
            );
        }
        // `a[$i]=1`: the subscript is evaluated as arithmetic.
        if target.contains('[')
            && !target
                .trim_end_matches('+')
                .trim_start_matches(name)
                .trim_start_matches('[')
                .trim_end_matches(']')
                .chars()
                .all(|c| c.is_ascii_digit())
        {
            f.add(
                CallRisk::Unknown,
                format!("the subscript of {name} is evaluated as arithmetic"),
            );
        }
        if prefix && (a.dynamic || !harmless_variable(name, value)) {
            f.add(
                CallRisk::Unknown,
                format!("{name} set for the command can change what it does"),
            );
        }
    }

    /// Judges one program with its arguments; `dynamic_args`: its arguments are (partly) only
    /// known at run time anyway (`xargs`, `find -exec`).
    fn run(&mut self, f: &mut Findings, words: &[Word], input: Input, dynamic_args: bool) {
        let Some((name_word, args)) = words.split_first() else {
            f.add(CallRisk::Low, "no program runs");
            return;
        };
        if name_word.dynamic {
            f.add(
                CallRisk::Unknown,
                format!(
                    "the program name `{}` is computed at run time",
                    name_word.text
                ),
            );
            return;
        }
        let path = name_word.text.as_str();
        let name = basename(path);
        let from_system = !path.contains('/')
            || [
                "/bin/",
                "/usr/bin/",
                "/usr/local/bin/",
                "/sbin/",
                "/usr/sbin/",
            ]
            .iter()
            .any(|d| path.strip_prefix(d).is_some_and(|rest| !rest.contains('/')));
        if !from_system {
            f.add(
                CallRisk::Unknown,
                format!("runs {path}, not a system program"),
            );
        }
        if (EVALUATES_NAMES.contains(&name)
            || (name == "printf" && args.iter().any(|a| a.text == "-v")))
            && args
                .iter()
                .any(|a| a.text.contains("$(") || a.text.contains('`'))
        {
            f.add(
                CallRisk::High,
                format!("{name} evaluates a quoted command substitution"),
            );
        }
        self.program(f, name, args, input, dynamic_args);
        // A computed argument can be any flag (`rm $x` with x=-rf, a file named `-delete`
        // matched by a glob): only commands no flag makes dangerous, and wrappers (which judge
        // what they run), keep their level.
        let dynamic = dynamic_args || args.iter().any(|a| a.dynamic);
        if dynamic && !READ_ONLY.contains(&name) && !JUDGE_OWN_ARGUMENTS.contains(&name) {
            f.add(
                CallRisk::Unknown,
                format!("{name} gets arguments only known at run time"),
            );
        }
    }
}
