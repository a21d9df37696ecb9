//! A stdio server's stderr: forwarded to our log (debug level) line by line, and its last lines
//! kept in a bounded ring so a start that fails can show the server's own message.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

/// At most this many lines are kept…
pub const TAIL_LINES: usize = 20;
/// …and at most this many bytes of them (a longer line is cut).
pub const TAIL_BYTES: usize = 4096;

/// The last lines a server wrote to stderr.
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    /// Adds a line, dropping the oldest ones beyond the bounds.
    pub fn push(&self, line: &str) {
        let line = cut(line.trim_end(), TAIL_BYTES);
        let Ok(mut lines) = self.lines.lock() else {
            return;
        };
        lines.push_back(line.to_owned());
        let mut bytes: usize = lines.iter().map(String::len).sum();
        while lines.len() > TAIL_LINES || bytes > TAIL_BYTES {
            match lines.pop_front() {
                Some(old) => bytes -= old.len(),
                None => break,
            }
        }
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// `message`, followed by the kept lines (when there are any), each indented.
    pub fn explain(&self, message: &str) -> String {
        let lines = self.lines();
        if lines.is_empty() {
            return format!("{message} (the server wrote nothing to stderr)");
        }
        let mut out = format!("{message}; the server's last stderr lines:");
        for line in lines {
            out.push_str("\n    ");
            out.push_str(&line);
        }
        out
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Reads `stderr` to its end on its own task: every line goes to the log at debug level and into
/// `tail`. Bytes that are not UTF-8 are replaced, never a reason to stop reading (a server whose
/// stderr is no longer read would block once the pipe is full).
pub fn forward(
    server: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<StderrTail>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let line = line.trim_end_matches(['\n', '\r']);
                    tracing::debug!(server = %server, "{line}");
                    tail.push(line);
                }
            }
        }
    })
}

/// Waits (at most `limit`) for the stderr reader to reach the end, so the lines a server wrote
/// just before exiting are in the tail.
pub async fn settle(reader: Option<tokio::task::JoinHandle<()>>, limit: Duration) {
    if let Some(reader) = reader {
        let _ = tokio::time::timeout(limit, reader).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_bounded_in_lines_and_bytes() {
        let tail = StderrTail::default();
        for i in 0..100 {
            tail.push(&format!("line {i}\n"));
        }
        let lines = tail.lines();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines.last().map(String::as_str), Some("line 99"));
        assert_eq!(lines.first().map(String::as_str), Some("line 80"));

        let long = "é".repeat(3000);
        tail.push(&long);
        tail.push("last");
        let lines = tail.lines();
        assert!(lines.iter().map(String::len).sum::<usize>() <= TAIL_BYTES);
        assert_eq!(lines.last().map(String::as_str), Some("last"));
        assert!(tail
            .explain("failed")
            .starts_with("failed; the server's last stderr lines:"));
        assert_eq!(
            StderrTail::default().explain("failed"),
            "failed (the server wrote nothing to stderr)"
        );
    }
}
