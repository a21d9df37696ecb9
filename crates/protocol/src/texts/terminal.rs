//! The texts of `run_in_terminal` (crate `toolbridge-tools`). Ours, except `TERMINAL_TIMEOUT`
//! and the truncation note (seed 002), which the tool uses as they are.

use super::fill;
use super::reference::TERMINAL_TIMEOUT;

/// Ours: the description of `run_in_terminal` (seed 002 gives its arguments, not a description).
pub const RUN_IN_TERMINAL_DESCRIPTION: &str = "Run a shell command with bash in this conversation's sandbox. The working directory is /workspace (with uploads/, downloads/ and outputs/, kept across calls); there is no network access and the rest of the file system is read-only. Declare the risk honestly: low for read-only commands, medium for commands that change files in /workspace, high for anything destructive or hard to undo. The runtime also classifies the command itself: high-risk and unrecognised commands need the user's approval and may be refused. Returns stdout and stderr (long output is cut) and the exit code when it is not 0; a command that runs too long is stopped.";

/// [`TERMINAL_TIMEOUT`] with the real timeout in place of the seed's 120 (so the default is
/// the seed's text byte for byte).
pub fn terminal_timeout(seconds: u64) -> String {
    TERMINAL_TIMEOUT.replacen("120", &seconds.to_string(), 1)
}

/// Ours: the input schema of `run_in_terminal`: seed 002's `command` and `risk` (required) and
/// `explanation` (recommended).
pub const RUN_IN_TERMINAL_SCHEMA: &str = r##"{"type":"object","properties":{"command":{"type":"string","description":"The complete shell command line to run in /workspace."},"risk":{"type":"string","enum":["low","medium","high"],"description":"low: only reads; medium: changes files in /workspace; high: destructive or hard to undo."},"explanation":{"type":"string","description":"One sentence on why this command is run."}},"required":["command","risk"]}"##;

/// Ours: a command that printed nothing and exited with 0.
pub const TERMINAL_NO_OUTPUT: &str = "(no output)";
/// Ours: appended when the command exited with a status other than 0; placeholder `<CODE>`.
pub const TERMINAL_EXIT_CODE: &str = "[exit code <CODE>]";
/// Ours: appended when the command was ended by a signal; placeholder `<SIGNAL>`.
pub const TERMINAL_SIGNAL: &str = "[terminated by signal <SIGNAL>]";
/// Ours: appended when the command ran into a sandbox limit; placeholder `<LIMIT>` (memory, CPU
/// time, file size, processes, open files).
pub const TERMINAL_LIMIT_HIT: &str = "[stopped by the sandbox's <LIMIT> limit]";
/// Ours: the `<LIMIT>` names of [`TERMINAL_LIMIT_HIT`].
pub const LIMIT_MEMORY: &str = "memory";
pub const LIMIT_CPU: &str = "CPU time";
pub const LIMIT_FILE_SIZE: &str = "file size";
pub const LIMIT_PROCESSES: &str = "processes";
pub const LIMIT_OPEN_FILES: &str = "open files";
/// Ours: appended when the output was larger than what is kept; placeholder `<BYTES>`.
pub const TERMINAL_OUTPUT_DROPPED: &str = "[<BYTES> more bytes of output were not kept]";

/// [`TERMINAL_EXIT_CODE`] filled.
pub fn terminal_exit_code(code: i32) -> String {
    fill(TERMINAL_EXIT_CODE, &[("<CODE>", &code.to_string())])
}

/// [`TERMINAL_SIGNAL`] filled.
pub fn terminal_signal(signal: i32) -> String {
    fill(TERMINAL_SIGNAL, &[("<SIGNAL>", &signal.to_string())])
}

/// [`TERMINAL_LIMIT_HIT`] filled.
pub fn terminal_limit_hit(limit: &str) -> String {
    fill(TERMINAL_LIMIT_HIT, &[("<LIMIT>", limit)])
}

/// [`TERMINAL_OUTPUT_DROPPED`] filled.
pub fn terminal_output_dropped(bytes: u64) -> String {
    fill(TERMINAL_OUTPUT_DROPPED, &[("<BYTES>", &bytes.to_string())])
}
