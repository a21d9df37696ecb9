//! Rules of single programs with dangerous flags: `kill`, `find`, `tar`, `pip`, `sed`.

use toolbridge_agent::approval::CallRisk;

use super::args::{long_option, option_value, short_group};
use super::{Ctx, Findings, Input};
use crate::terminal::shell::Word;

/// `-i`, `-ni`, `-i.bak`, `--in-place`: sed edits in place (`-e`, `-f`, `-l` take the rest of
/// their group as a value).
pub(super) fn sed_in_place(arg: &str) -> bool {
    if arg.starts_with("--in-place") {
        return true;
    }
    let Some(group) = short_group(arg) else {
        return false;
    };
    for c in group.chars() {
        match c {
            'i' => return true,
            'e' | 'f' | 'l' => return false,
            _ => {}
        }
    }
    false
}

/// `sed -n '1,20p' f` and the like: options `-n`/`-E`/`-r`/`-s`/`-u`/`-z`, and every script only
/// a line address or range with `p`, `d`, `q` or `=` (the commands that write files or run
/// programs — `w`, `W`, `e`, `r`, `s///w`, `s///e` — cannot appear).
pub(super) fn sed_prints_lines(args: &[Word]) -> bool {
    fn simple(script: &str) -> bool {
        let Some(body) = script.strip_suffix(['p', 'd', 'q', '=']) else {
            return false;
        };
        let address =
            |a: &str| a == "$" || (!a.is_empty() && a.chars().all(|c| c.is_ascii_digit()));
        match body.split_once(',') {
            Some((from, to)) => address(from) && address(to),
            None => body.is_empty() || address(body),
        }
    }
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if a.dynamic {
            return false;
        }
        match t {
            "-n" | "-E" | "-r" | "-s" | "-u" | "-z" | "--quiet" | "--silent" => {}
            "-e" | "--expression" => {
                match args.get(i + 1) {
                    Some(w) if !w.dynamic => scripts.push(w.text.as_str()),
                    _ => return false,
                }
                i += 1;
            }
            _ if t.starts_with('-') && t.len() > 1 => return false,
            _ => operands.push(t),
        }
        i += 1;
    }
    if scripts.is_empty() {
        match operands.first() {
            Some(first) => scripts.push(first),
            None => return false,
        }
    }
    scripts
        .iter()
        .all(|s| s.split(';').all(|part| simple(part.trim())))
}

impl Ctx {
    pub(super) fn kill(&mut self, f: &mut Findings, texts: &[&str]) {
        let mut i = 0;
        if texts.first() == Some(&"-l") || texts.first() == Some(&"-L") {
            f.add(CallRisk::Low, "kill -l lists signals");
            return;
        }
        if matches!(texts.first(), Some(&("-s" | "-n"))) {
            i = 2;
        } else if texts
            .first()
            .is_some_and(|t| t.starts_with('-') && *t != "--")
        {
            i = 1;
        }
        if texts.get(i) == Some(&"--") {
            i += 1;
        }
        if texts.iter().skip(i).any(|t| *t == "-1") {
            f.add(CallRisk::High, "kill -1 signals every process");
        } else {
            f.add(CallRisk::Medium, "kill stops processes");
        }
    }

    pub(super) fn find(&mut self, f: &mut Findings, args: &[Word]) {
        let mut i = 0;
        let mut acted = false;
        while let Some(a) = args.get(i) {
            match a.text.as_str() {
                "-delete" => {
                    f.add(CallRisk::High, "find -delete deletes every match");
                    acted = true;
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = args[i + 1..]
                        .iter()
                        .position(|w| w.text == ";" || w.text == "+")
                        .map_or(args.len(), |p| i + 1 + p);
                    let inner = &args[i + 1..end];
                    f.add(CallRisk::Medium, "find -exec runs a command per match");
                    if inner.is_empty() {
                        f.add(CallRisk::Unknown, "find -exec without a command");
                    } else {
                        self.run(f, inner, Input::default(), true);
                    }
                    acted = true;
                    i = end;
                }
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    f.add(CallRisk::Medium, "find writes a file");
                    if let Some(out) = args.get(i + 1) {
                        self.written(f, out, "find writes");
                    }
                    acted = true;
                }
                _ => {}
            }
            i += 1;
        }
        if !acted {
            f.add(CallRisk::Low, "find (read-only)");
        }
    }

    pub(super) fn tar(&mut self, f: &mut Findings, args: &[Word]) {
        #[rustfmt::skip]
        const RUNS: &[&str] = &[
            "--to-command", "--checkpoint-action", "--use-compress-program", "--info-script",
            "--new-volume-script", "--rsh-command", "--rmt-command",
        ];
        /// Long options that are also prefixes of one in `RUNS` (exact matches win).
        const EXACT: &[&str] = &["--checkpoint", "--to-stdout"];
        #[rustfmt::skip]
        const WRITES: &[&str] = &[
            "--extract", "--get", "--create", "--append", "--update", "--catenate",
            "--concatenate", "--diff", "--compare", "--delete",
        ];
        /// Short options taking a value (the rest of the group, or the next word).
        const VALUED: &str = "bCfFgHIKLNTVX";
        #[derive(Default)]
        struct Mode {
            runs: bool,
            list: bool,
            write: bool,
        }
        /// Reads a group of short options; how many following words they take as values.
        fn letters(m: &mut Mode, group: &str, old_style: bool) -> usize {
            let mut takes = 0;
            for (i, c) in group.char_indices() {
                match c {
                    'I' | 'F' => m.runs = true,
                    't' => m.list = true,
                    'x' | 'c' | 'r' | 'u' | 'A' | 'd' => m.write = true,
                    _ => {}
                }
                if VALUED.contains(c) {
                    if old_style {
                        takes += 1;
                    } else {
                        return usize::from(i + c.len_utf8() == group.len());
                    }
                }
            }
            takes
        }
        let mut m = Mode::default();
        let mut i = 0;
        if let Some(first) = args.first() {
            if !first.text.starts_with('-') {
                i = 1 + letters(&mut m, &first.text, true);
            }
        }
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            i += 1;
            if t == "--" {
                break;
            }
            if t.starts_with("--") {
                let name = t.split_once('=').map_or(t, |(n, _)| n);
                if !EXACT.contains(&name) && RUNS.iter().any(|r| long_option(t, r).is_some()) {
                    m.runs = true;
                }
                if WRITES.iter().any(|w| long_option(t, w).is_some()) {
                    m.write = true;
                }
                if long_option(t, "--list").is_some() {
                    m.list = true;
                }
            } else if let Some(group) = short_group(t) {
                i += letters(&mut m, group, false);
            }
        }
        if m.runs {
            f.add(CallRisk::High, "a tar option runs a program");
            return;
        }
        if m.list && !m.write {
            f.add(CallRisk::Low, "tar lists an archive");
        } else {
            f.add(CallRisk::Medium, "tar writes files");
            if let Some(d) = option_value(args, &["-C", "--directory"]) {
                self.written(f, &d, "tar writes");
            }
        }
    }

    pub(super) fn pip(&mut self, f: &mut Findings, args: &[Word]) {
        let sub = args
            .iter()
            .map(|a| a.text.as_str())
            .find(|t| !t.starts_with('-'));
        match sub {
            Some("install" | "uninstall" | "download" | "wheel") => {
                f.add(CallRisk::Medium, "pip installs packages (their code runs)");
            }
            Some("list" | "show" | "freeze" | "check" | "help" | "index" | "inspect") => {
                f.add(CallRisk::Low, "pip lists packages");
            }
            None if args.iter().any(|a| a.text == "--version" || a.text == "-V") => {
                f.add(CallRisk::Low, "pip --version");
            }
            _ => f.add(CallRisk::Unknown, "pip"),
        }
    }
}
