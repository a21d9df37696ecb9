//! Shells and interpreters: a `-c` string is judged as a command line; a program read from a pipe
//! is high; a script or inline program cannot be judged (unknown).

use toolbridge_agent::approval::CallRisk;

use super::args::short_group;
use super::{classify_script, Ctx, Findings, Input};
use crate::terminal::shell::Word;

impl Ctx {
    pub(super) fn shell(&mut self, f: &mut Findings, name: &str, args: &[Word], input: Input) {
        if input.args_from_pipe {
            f.add(
                CallRisk::High,
                format!("{name} runs programs named by piped data"),
            );
            return;
        }
        let mut has_c = false;
        let mut reads_stdin = false;
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "--" || t == "-" {
                reads_stdin |= t == "-";
                i += 1;
                break;
            }
            if matches!(t, "-o" | "+o" | "-O" | "+O") {
                i += 2;
                continue;
            }
            if matches!(t, "--rcfile" | "--init-file") {
                f.add(CallRisk::Unknown, format!("{name} {t} runs a file"));
                i += 2;
                continue;
            }
            if let Some(group) = t.strip_prefix('-').filter(|g| !g.starts_with('-')) {
                has_c |= group.contains('c');
                reads_stdin |= group.contains('s');
                i += 1;
                continue;
            }
            if t.starts_with("--") || t.starts_with('+') {
                i += 1;
                continue;
            }
            break;
        }
        let operand = args.get(i);
        if has_c {
            match operand {
                Some(script) if script.dynamic => {
                    f.add(
                        CallRisk::Unknown,
                        format!("{name} -c runs a string computed at run time"),
                    );
                }
                Some(script) => {
                    classify_script(f, &script.text, self.depth + 1, input.piped);
                }
                None => f.add(CallRisk::Unknown, format!("{name} -c without a command")),
            }
            return;
        }
        match operand {
            Some(script) if !reads_stdin => {
                f.add(
                    CallRisk::Unknown,
                    format!("{name} runs the script {}", script.text),
                );
            }
            _ if input.piped => {
                f.add(
                    CallRisk::High,
                    format!("pipes into a shell ({name}): runs whatever arrives"),
                );
            }
            _ if input.redirected => {
                f.add(
                    CallRisk::Unknown,
                    format!("{name} runs commands given on standard input"),
                );
            }
            _ => f.add(CallRisk::Unknown, format!("{name} starts a shell")),
        }
    }

    pub(super) fn interpreter(
        &mut self,
        f: &mut Findings,
        name: &str,
        args: &[Word],
        input: Input,
    ) {
        if input.args_from_pipe {
            f.add(
                CallRisk::High,
                format!("{name} runs programs named by piped data"),
            );
            return;
        }
        let python = name.starts_with("python") || name.starts_with("pypy");
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if python && t == "-m" {
                let module = args.get(i + 1).map(|w| w.text.as_str());
                match module {
                    Some("pip") => self.pip(f, args.get(i + 2..).unwrap_or(&[])),
                    Some("venv" | "virtualenv") => {
                        f.add(CallRisk::Medium, "creates a virtual environment")
                    }
                    Some(m) => f.add(CallRisk::Unknown, format!("{name} -m {m} runs a module")),
                    None => f.add(CallRisk::Unknown, format!("{name} -m without a module")),
                }
                return;
            }
            let inline = if python {
                short_group(t).is_some_and(|g| {
                    g.starts_with('c')
                        || (g.contains('c') && g.chars().all(|c| c.is_ascii_alphabetic()))
                })
            } else {
                matches!(
                    t,
                    "-e" | "-E" | "--eval" | "-p" | "--print" | "-r" | "-x" | "--command"
                )
            };
            if inline {
                f.add(
                    CallRisk::Unknown,
                    format!("{name} runs an inline program that cannot be classified"),
                );
                return;
            }
            if t == "-" {
                break;
            }
            if t.starts_with('-') && t.len() > 1 {
                // Options taking a separate value.
                let takes_value = if python {
                    matches!(t, "-W" | "-X" | "-Q")
                } else {
                    matches!(t, "-I" | "-r" | "--require" | "-M")
                };
                i += if takes_value { 2 } else { 1 };
                continue;
            }
            f.add(CallRisk::Unknown, format!("{name} runs the program {t}"));
            return;
        }
        if input.piped {
            f.add(
                CallRisk::High,
                format!("pipes into an interpreter ({name}): runs whatever arrives"),
            );
        } else if input.redirected {
            f.add(
                CallRisk::Unknown,
                format!("{name} runs a program given on standard input"),
            );
        } else {
            f.add(CallRisk::Unknown, format!("{name} starts an interpreter"));
        }
    }
}
