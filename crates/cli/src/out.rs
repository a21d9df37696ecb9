//! Standard output for every command: `outln!` and `out!` write as `println!` and `print!` do,
//! but return the write's error instead of panicking, so a reader that stopped early
//! (`toolbridge workspaces list | head -5`) ends the command through its `?` like any other
//! error, and `main` turns a closed pipe into a quiet exit ([`is_broken_pipe`]).
//!
//! Why not SIGPIPE's default action (the way C programs end under `| head`): the process
//! writes to sockets (the gateway, upstreams) and to its children's pipes (MCP servers, the
//! sandbox), where a peer that went away must be an error to handle, not the end of the
//! process. Rust leaves SIGPIPE ignored, and this module handles standard output's EPIPE.
//! `print!`/`println!` are denied in this crate (clippy's `print_stdout`, in main.rs), so no
//! path writes to standard output around it.

use std::io::Write;

/// Writes `args` to standard output and flushes it (a closed pipe is reported by the write
/// that meets it, not by a flush at exit that nobody sees).
pub fn write(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_fmt(args)?;
    stdout.flush()
}

/// `print!` that returns the write's error.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// `println!` that returns the write's error.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Whether an error (or any of its causes) is a write into a pipe whose reader has gone.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error a command returns when standard output's reader went away mid-way.
pub fn broken_pipe() -> anyhow::Error {
    anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;

    #[test]
    fn a_broken_pipe_is_found_under_context() {
        let err = Err::<(), _>(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("writing standard output")
            .unwrap_err();
        assert!(is_broken_pipe(&err));
        assert!(is_broken_pipe(&broken_pipe()));
        assert!(!is_broken_pipe(&anyhow::anyhow!("Broken pipe")));
    }
}
