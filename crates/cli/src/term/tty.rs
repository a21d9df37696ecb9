//! Terminal modes: keys typed while an answer streams are not echoed into it (echo off on
//! standard input for the turn, restored when the guard drops — also on Ctrl-C, which cancels
//! the turn rather than ending the process), echo back on for a question asked mid-turn, and
//! the size of standard output's terminal (for redrawing a rendered line).

#[cfg(unix)]
mod imp {
    use rustix::termios::{
        tcgetattr, tcgetwinsize, tcsetattr, LocalModes, OptionalActions, Termios,
    };

    /// Restores standard input's terminal modes on drop.
    pub struct Restore(Termios);

    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.0);
        }
    }

    /// Sets or clears ECHO on standard input; `None` when it is not a terminal or already so.
    pub fn set_echo(on: bool) -> Option<Restore> {
        let stdin = std::io::stdin();
        let before = tcgetattr(&stdin).ok()?;
        if before.local_modes.contains(LocalModes::ECHO) == on {
            return None;
        }
        let mut changed = before.clone();
        changed.local_modes.set(LocalModes::ECHO, on);
        tcsetattr(&stdin, OptionalActions::Now, &changed).ok()?;
        Some(Restore(before))
    }

    pub fn size() -> Option<(usize, usize)> {
        let size = tcgetwinsize(std::io::stdout()).ok()?;
        (size.ws_col > 0 && size.ws_row > 0).then(|| (size.ws_col.into(), size.ws_row.into()))
    }
}

#[cfg(not(unix))]
mod imp {
    pub struct Restore;

    pub fn set_echo(_on: bool) -> Option<Restore> {
        None
    }

    pub fn size() -> Option<(usize, usize)> {
        None
    }
}

/// While alive, what is typed on the terminal is not shown (it stays in the input buffer and
/// reaches the next prompt); dropping it restores the previous modes.
pub struct EchoOff(#[allow(dead_code)] Option<imp::Restore>);

impl EchoOff {
    pub fn new() -> EchoOff {
        EchoOff(imp::set_echo(false))
    }
}

/// While alive, echo is on (an approval question asked while an [`EchoOff`] is in force);
/// dropping it puts back what was there.
pub struct EchoOn(#[allow(dead_code)] Option<imp::Restore>);

impl EchoOn {
    pub fn new() -> EchoOn {
        EchoOn(imp::set_echo(true))
    }
}

/// Standard output's terminal: (columns, rows).
pub fn size() -> Option<(usize, usize)> {
    imp::size()
}
