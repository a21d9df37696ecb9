//! The texts of `python_execute` (crate `toolbridge-tools`). All ours.

use super::fill;

/// Ours: a `python_execute` call that printed nothing and ended without a value.
pub const PYTHON_NO_OUTPUT: &str = "(no output)";
/// Ours: the interpreter did not answer an interrupt, so it was killed and a fresh one started.
pub const PYTHON_STATE_LOST: &str = "The Python session did not respond and was restarted; variables and imports from earlier calls are gone (files in /workspace are kept). Re-run any setup code you need.";
/// Ours: the interpreter's replies could not be read (unreadable or oversized protocol output,
/// e.g. code writing to the driver's reply channel), so it was killed and a fresh one started.
pub const PYTHON_PROTOCOL_ERROR: &str = "The Python session sent a reply that could not be read (code may have written to its internal reply channel) and was restarted; variables and imports from earlier calls are gone (files in /workspace are kept). Re-run any setup code you need.";
/// Ours: the interpreter died during a call and was restarted; placeholder `<CAUSE>` (one of the
/// `PYTHON_CAUSE_*` texts).
pub const PYTHON_CRASHED: &str = "The Python session stopped because <CAUSE>, and was restarted; variables and imports from earlier calls are gone (files in /workspace are kept). Re-run any setup code you need.";
/// Ours: cause; placeholder `<MB>`.
pub const PYTHON_CAUSE_MEMORY: &str = "it went over the memory limit of <MB> MB";
/// Ours: cause.
pub const PYTHON_CAUSE_CPU: &str = "it used up its CPU time limit";
/// Ours: cause; placeholder `<MB>`.
pub const PYTHON_CAUSE_FILE_SIZE: &str = "it wrote a file larger than the limit of <MB> MB";
/// Ours: cause; placeholder `<COUNT>`.
pub const PYTHON_CAUSE_PROCESSES: &str = "it started more processes than the limit of <COUNT>";
/// Ours: cause; placeholder `<COUNT>`.
pub const PYTHON_CAUSE_OPEN_FILES: &str = "it opened more files than the limit of <COUNT>";
/// Ours: cause when no limit explains the exit.
pub const PYTHON_CAUSE_UNKNOWN: &str = "the interpreter exited unexpectedly";
/// Ours: the session of this conversation was idle too long and was closed; shown before the
/// next call's output; placeholder `<MINUTES>`.
pub const PYTHON_SESSION_EXPIRED: &str = "Note: the Python session was idle for more than <MINUTES> minutes and was restarted; variables and imports from earlier calls are gone (files in /workspace are kept).";
/// Ours: begins the first result of a new Python session in a workspace that had one in an
/// earlier run (another process), whose state could not be kept.
pub const PYTHON_SESSION_NEW_PROCESS: &str = "Note: the Python session was restarted since an earlier run; variables and imports from earlier calls are gone (files in /workspace are kept).";
/// Ours: begins the first result after this conversation's interpreter was closed to make room
/// for another conversation's (the server's cap on live interpreters).
pub const PYTHON_SESSION_EVICTED: &str = "Note: the Python session was closed to make room for other conversations and was restarted; variables and imports from earlier calls are gone (files in /workspace are kept).";
/// Ours: a call that could not start an interpreter because every slot the server allows (for
/// everyone, or for this user) is running a call right now.
pub const PYTHON_BUSY: &str = "Every Python session this server allows is busy running code right now, so this code was not run. Try the call again in a moment.";
/// Ours: a call that ran past its wall-clock budget and was interrupted; placeholder `<SECONDS>`.
pub const PYTHON_CELL_TIMEOUT: &str = "The code ran longer than <SECONDS> seconds and was interrupted. Variables from earlier calls are kept; make the work smaller or faster.";
/// Ours: the error a call gets when it used up its CPU time; placeholder `<SECONDS>`.
pub const PYTHON_CPU_LIMIT: &str =
    "CPU time limit exceeded (<SECONDS> s of CPU per call); variables from earlier calls are kept";
/// Ours: after a `MemoryError`; placeholder `<MB>`.
pub const PYTHON_MEMORY_LIMIT: &str =
    "The sandbox's memory limit is <MB> MB: work on the data in smaller pieces.";
/// Ours: after an `OSError` "File too large"; placeholder `<MB>`.
pub const PYTHON_FILE_SIZE_LIMIT: &str = "The sandbox's file size limit is <MB> MB per file.";
/// Ours: in the middle of a stream whose output was cut; placeholder `<BYTES>`.
pub const PYTHON_OUTPUT_OMITTED: &str = "\n... (<BYTES> bytes of output omitted) ...\n";
/// Ours: the last line of a call that created or changed files in `outputs/`; placeholder
/// `<FILES>` (comma-separated [`PYTHON_FILE_ENTRY`]s).
pub const PYTHON_FILES_WRITTEN: &str = "Files written: <FILES>";
/// Ours: one file of [`PYTHON_FILES_WRITTEN`]; placeholders `<PATH>` (relative to the workspace,
/// e.g. `outputs/report.pdf`), `<BYTES>` (with thousands separators).
pub const PYTHON_FILE_ENTRY: &str = "<PATH> (<BYTES> bytes)";

/// [`PYTHON_CRASHED`] filled with one of the `PYTHON_CAUSE_*` texts (filled).
pub fn python_crashed(cause: &str) -> String {
    fill(PYTHON_CRASHED, &[("<CAUSE>", cause)])
}

/// A `PYTHON_CAUSE_*` text with its one placeholder (`<MB>` or `<COUNT>`) filled.
pub fn python_cause(template: &str, limit: u64) -> String {
    let value = limit.to_string();
    template
        .replacen("<MB>", &value, 1)
        .replacen("<COUNT>", &value, 1)
}

pub fn python_session_expired(minutes: u64) -> String {
    fill(
        PYTHON_SESSION_EXPIRED,
        &[("<MINUTES>", &minutes.to_string())],
    )
}

pub fn python_cell_timeout(seconds: u64) -> String {
    fill(PYTHON_CELL_TIMEOUT, &[("<SECONDS>", &seconds.to_string())])
}

pub fn python_cpu_limit(seconds: u64) -> String {
    fill(PYTHON_CPU_LIMIT, &[("<SECONDS>", &seconds.to_string())])
}

pub fn python_memory_limit(mb: u64) -> String {
    fill(PYTHON_MEMORY_LIMIT, &[("<MB>", &mb.to_string())])
}

pub fn python_file_size_limit(mb: u64) -> String {
    fill(PYTHON_FILE_SIZE_LIMIT, &[("<MB>", &mb.to_string())])
}

/// [`PYTHON_FILES_WRITTEN`] for `(path, bytes)` pairs.
pub fn python_files_written(files: &[(String, u64)]) -> String {
    let entries: Vec<String> = files
        .iter()
        .map(|(path, bytes)| {
            fill(
                PYTHON_FILE_ENTRY,
                &[("<PATH>", path), ("<BYTES>", &thousands(*bytes))],
            )
        })
        .collect();
    fill(PYTHON_FILES_WRITTEN, &[("<FILES>", &entries.join(", "))])
}

/// `12345` → `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
