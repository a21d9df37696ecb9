//! Programs that run another program (`env`, `xargs`, `watch`, `timeout`, …) or a file of commands
//! (`source`): what they run is judged.

use toolbridge_agent::approval::CallRisk;

use super::args::skip_options;
use super::names::{code_loading_variable, harmless_variable};
use super::{classify_script, Ctx, Findings, Input};
use crate::terminal::shell::Word;

impl Ctx {
    /// What a wrapper runs (`nice CMD`, `timeout 5 CMD`); nothing: harmless.
    pub(super) fn rest(&mut self, f: &mut Findings, words: &[Word], input: Input, dynamic: bool) {
        if words.is_empty() {
            f.add(CallRisk::Low, "prints information");
        } else {
            self.run(f, words, input, dynamic);
        }
    }

    pub(super) fn env(&mut self, f: &mut Findings, args: &[Word], input: Input, dynamic: bool) {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            // `env -S 'cmd args'` splits a string into the command line.
            let split = match t {
                "-S" | "--split-string" => {
                    Some((args.get(i + 1).map(|w| (w.text.as_str(), w.dynamic)), i + 2))
                }
                _ => t
                    .strip_prefix("--split-string=")
                    .or_else(|| {
                        t.strip_prefix("-S")
                            .filter(|v| !v.is_empty() && !t.starts_with("--"))
                    })
                    .map(|v| (Some((v, a.dynamic)), i + 1)),
            };
            if let Some((string, next)) = split {
                let rest = args.get(next..).unwrap_or(&[]);
                match string {
                    Some((_, true)) => {
                        f.add(
                            CallRisk::Unknown,
                            "env -S runs a string computed at run time",
                        );
                    }
                    _ if rest.iter().any(|w| w.dynamic) => {
                        f.add(
                            CallRisk::Unknown,
                            "env -S runs a string computed at run time",
                        );
                    }
                    Some((text, false)) => {
                        let mut line = text.to_owned();
                        for w in rest {
                            line.push(' ');
                            line.push_str(&w.text);
                        }
                        classify_script(f, &line, self.depth + 1, input.piped);
                    }
                    None => f.add(CallRisk::Unknown, "env -S without a string"),
                }
                return;
            }
            if t == "--" {
                i += 1;
                break;
            }
            if matches!(t, "-u" | "--unset" | "-C" | "--chdir") {
                i += 2;
                continue;
            }
            if t.starts_with('-') && t.len() > 1 {
                i += 1;
                continue;
            }
            // env takes any `NAME=value` (also names bash would not accept).
            if let Some((name, value)) = t.split_once('=') {
                if harmless_variable(name, value) && !a.dynamic {
                    // Locale, time zone, terminal size.
                } else if code_loading_variable(name) {
                    f.add(
                        CallRisk::High,
                        format!("sets {name}, which can make programs run other code"),
                    );
                } else {
                    f.add(
                        CallRisk::Unknown,
                        format!("{name} set for the command can change what it does"),
                    );
                }
                i += 1;
                continue;
            }
            break;
        }
        self.rest(f, args.get(i..).unwrap_or(&[]), input, dynamic);
    }

    pub(super) fn xargs(&mut self, f: &mut Findings, args: &[Word], input: Input) {
        let skip = skip_options(
            args,
            &[
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-d",
                "-E",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--max-lines",
                "--replace",
                "--eof",
                "--process-slot-var",
            ],
        );
        let inner = Input {
            piped: false,
            redirected: false,
            args_from_pipe: input.piped || input.redirected,
        };
        match args.get(skip..) {
            Some(rest) if !rest.is_empty() => self.run(f, rest, inner, true),
            _ => f.add(CallRisk::Low, "xargs echoes its input"),
        }
    }

    pub(super) fn watch(&mut self, f: &mut Findings, args: &[Word]) {
        let skip = skip_options(args, &["-n", "--interval"]);
        let rest = args.get(skip..).unwrap_or(&[]);
        if rest.is_empty() {
            f.add(CallRisk::Unknown, "watch without a command");
        } else if args
            .iter()
            .any(|a| matches!(a.text.as_str(), "-x" | "--exec"))
        {
            self.run(f, rest, Input::default(), false);
        } else if rest.iter().any(|w| w.dynamic) {
            f.add(
                CallRisk::Unknown,
                "watch runs a string computed at run time",
            );
        } else {
            let line: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
            classify_script(f, &line.join(" "), self.depth + 1, false);
        }
    }

    pub(super) fn source(&mut self, f: &mut Findings, texts: &[&str], input: Input) {
        match texts.first() {
            Some(&("/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-")) => {
                f.add(CallRisk::High, "sources commands from standard input");
            }
            Some(_) if input.piped => f.add(CallRisk::High, "sources commands fed by a pipe"),
            Some(_) if self.downloads => {
                f.add(
                    CallRisk::High,
                    "sources a file in a command line that downloads",
                );
            }
            Some(file) => f.add(CallRisk::Unknown, format!("runs the commands in {file}")),
            None => f.add(CallRisk::Unknown, "source without a file"),
        }
    }
}
