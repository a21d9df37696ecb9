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

/// The value of the first of `names` (`-o FILE`, `-oFILE`, `--output FILE`, `--output=FILE`).
pub(super) fn option_value<'a>(args: &'a [Word], names: &[&str]) -> Option<&'a Word> {
    for (i, a) in args.iter().enumerate() {
        if a.text == "--" {
            return None;
        }
        if names.contains(&a.text.as_str()) {
            return args.get(i + 1);
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
