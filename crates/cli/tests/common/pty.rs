//! A program on a pseudo-terminal, for what `toolbridge` does only on a terminal (spinners,
//! Markdown rendering, echo control, Ctrl-C). The terminal is util-linux's `script` (in Debian's
//! essential set): it runs the command on a new pseudo-terminal of 80×24, copies what the test
//! writes to the terminal's input — so Ctrl-C is a real SIGINT from the terminal — and what the
//! program writes (stdout and stderr alike) to its own stdout, which is read here as it comes.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long `expect` waits before failing the test (a bound, not a measurement).
const PATIENCE: Duration = Duration::from_secs(90);

pub struct Pty {
    child: Child,
    stdin: Option<ChildStdin>,
    output: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// `arg` quoted for `sh`.
fn quoted(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

impl Pty {
    /// Runs `toolbridge ARGS` on a terminal in `dir` (HOME and XDG_DATA_HOME there), with `env`
    /// added. `after` is a shell command run on the same terminal once toolbridge has exited
    /// (its exit code is kept in the output as `exit=N`).
    pub fn toolbridge(args: &[&str], dir: &Path, env: &[(&str, &str)], after: &str) -> Pty {
        // The shell shares the terminal's foreground group, so Ctrl-C reaches it too; dash (the
        // `/bin/sh` CI has) then ends itself once toolbridge returns and `exit=N` and `after`
        // never run. A trap keeps it going; the trap's action is reset in toolbridge on exec.
        let mut line = String::from("trap : INT; stty cols 80 rows 24; ");
        line.push_str(&quoted(env!("CARGO_BIN_EXE_toolbridge")));
        for arg in args {
            line.push(' ');
            line.push_str(&quoted(arg));
        }
        line.push_str(&format!("; echo \"exit=$?\"; {after}"));
        let mut command = Command::new("script");
        command
            .args(["-q", "-e", "-f", "-c", &line, "/dev/null"])
            .current_dir(dir)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("TERM", "xterm-256color")
            // `script` runs the line with $SHELL: the same shell here as on CI.
            .env("SHELL", "/bin/sh")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("NO_COLOR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command
            .spawn()
            .expect("util-linux `script` runs the terminal tests (Debian package bsdutils)");
        let mut stdout = child.stdout.take().unwrap();
        let output = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&output);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Pty {
            stdin: child.stdin.take(),
            child,
            output,
            reader: Some(reader),
        }
    }

    /// Types `bytes` on the terminal.
    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Everything the terminal showed so far.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits until the terminal has shown `needle` (after byte `from` of the output); returns
    /// where it starts.
    pub fn expect_from(&mut self, from: usize, needle: &str) -> usize {
        let start = Instant::now();
        loop {
            let ended = self.child.try_wait().unwrap().is_some();
            if ended {
                // Everything it wrote is read once the reader sees the end.
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
            }
            let out = self.output();
            if let Some(at) = out.get(from..).and_then(|rest| rest.find(needle)) {
                return from + at;
            }
            if ended || start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the terminal never showed {needle:?}; it showed:\n{out}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn expect(&mut self, needle: &str) -> usize {
        self.expect_from(0, needle)
    }

    /// Waits for the end; everything the terminal showed.
    ///
    /// The terminal's input stays open until the program has ended: `script` treats the end of
    /// its input as the end of the session and can hang the terminal up before the last lines
    /// (`exit=N`, the `after` command's output) were written — what made this racy once.
    pub fn finish(mut self) -> String {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the program did not end; it showed:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(self.stdin.take());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.output()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        // A failed test does not leave the terminal and its program behind.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
