//! Tests as data: a result compared with its blessed file, which `TOOLBRIDGE_BLESS=1` rewrites.

use std::path::Path;

/// Whether this run rewrites the blessed files (`TOOLBRIDGE_BLESS` set).
pub fn blessing() -> bool {
    std::env::var_os("TOOLBRIDGE_BLESS").is_some()
}

/// Compares `got` with the file at `expected` (or, when [`blessing`], writes it there). `None`
/// when they agree; else a line saying where they first differ, for the test's failure list.
pub fn compare(expected: &Path, got: &str) -> Option<String> {
    if blessing() {
        if let Err(e) = std::fs::write(expected, got) {
            return Some(format!("{}: cannot bless: {e}", expected.display()));
        }
        return None;
    }
    let want = match std::fs::read_to_string(expected) {
        Ok(s) => s,
        Err(e) => {
            return Some(format!(
                "{}: {e} (run with TOOLBRIDGE_BLESS=1 to create)",
                expected.display()
            ))
        }
    };
    if want == got {
        return None;
    }
    let first = want
        .lines()
        .zip(got.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(0);
    Some(format!(
        "{}: differs from line {}:\n  expected: {}\n  got:      {}",
        expected.display(),
        first + 1,
        want.lines().nth(first).unwrap_or(""),
        got.lines().nth(first).unwrap_or("")
    ))
}
