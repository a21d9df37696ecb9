//! Reading options and operands.

use crate::terminal::shell::Word;

pub(super) fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `-abc` → `abc` (not long options, not `-`).
pub(super) fn short_group(arg: &str) -> Option<&str> {
    arg.strip_prefix('-')
        .filter(|g| !g.is_empty() && !g.starts_with('-'))
}

/// Options (before `--`) and operands.
pub(super) fn split_options(args: &[Word]) -> (Vec<&str>, Vec<&Word>) {
    let mut options = Vec::new();
    let mut operands = Vec::new();
    let mut ended = false;
    for a in args {
        if ended {
            operands.push(a);
        } else if a.text == "--" {
            ended = true;
        } else if a.text.starts_with('-') && a.text.len() > 1 {
            options.push(a.text.as_str());
        } else {
            operands.push(a);
        }
    }
    (options, operands)
}

/// Operands, skipping the values of the options in `with_values`.
pub(super) fn operands_skipping<'a>(args: &'a [Word], with_values: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut ended = false;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if ended {
            out.push(a);
        } else if t == "--" {
            ended = true;
        } else if with_values.contains(&t) {
            i += 1;
        } else if !(t.starts_with('-') && t.len() > 1) {
            out.push(a);
        }
        i += 1;
    }
    out
}

/// `arg` names the long option `long` (`--output`), also abbreviated as GNU `getopt_long`
/// allows (`--out`), with or without `=VALUE`: `Some(inline value)`.
pub(super) fn long_option<'a>(arg: &'a str, long: &str) -> Option<Option<&'a str>> {
    let (name, value) = match arg.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (arg, None),
    };
    let abbreviation = name.strip_prefix("--").filter(|n| !n.is_empty())?;
    let full = long.strip_prefix("--")?;
    full.starts_with(abbreviation).then_some(value)
}

/// Any of `arg`'s forms naming one of `names` (`-o`, `-oVALUE`, `-xo VALUE` in a group,
/// `--output`, `--output=VALUE`, `--out=VALUE`).
fn names_option<'a>(arg: &'a str, names: &[&str]) -> Option<Option<&'a str>> {
    for n in names {
        if n.starts_with("--") {
            if let Some(v) = long_option(arg, n) {
                return Some(v);
            }
        } else if let Some(letter) = n.strip_prefix('-').and_then(|l| {
            let mut c = l.chars();
            c.next().filter(|_| c.next().is_none())
        }) {
            // A short option in a group: the rest of the group (if any) is its value. Another
            // letter's value containing it is read as this option too (the safe direction).
            if let Some(group) = short_group(arg) {
                if let Some(i) = group.find(letter) {
                    let rest = &group[i + letter.len_utf8()..];
                    return Some((!rest.is_empty()).then_some(rest));
                }
            }
        } else if arg == *n {
            return Some(None);
        }
    }
    None
}

/// The value of the first of `names` (`-o FILE`, `-oFILE`, `--output FILE`, `--output=FILE`,
/// `--out=FILE`).
pub(super) fn option_value(args: &[Word], names: &[&str]) -> Option<Word> {
    for (i, a) in args.iter().enumerate() {
        if a.text == "--" {
            return None;
        }
        match names_option(&a.text, names) {
            Some(Some(v)) => return Some(Word::part(v, a.dynamic)),
            Some(None) => return args.get(i + 1).cloned(),
            None => {}
        }
    }
    None
}

/// Index of the first word after a wrapper's options (`--` ends them; `with_values` take the next
/// word).
pub(super) fn skip_options(args: &[Word], with_values: &[&str]) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if !(t.starts_with('-') && t.len() > 1) {
            return i;
        }
        i += if with_values.contains(&t) { 2 } else { 1 };
    }
    args.len()
}
