//! How a run looks on a terminal: the answer streams to stdout, tool activity goes to stderr (names,
//! an arguments preview, a spinner while a tool runs, durations), and a spinner waits with the
//! user from each request until the model's first token. `chat` renders the answer as Markdown.
//! With `--json`, the events are printed as JSON lines instead.

use std::io::{IsTerminal, Write};

use toolbridge_agent::{CallStatus, FinalizationReason, Outcome, RunEvent};

use crate::agent::runlog::RunLog;
use crate::term::color::ColorChoice;
use crate::term::markdown::{self, MarkdownStream};
use crate::term::spinner::{self, Spinner};

/// What the terminal gets: decided once per command from `--color`, NO_COLOR and which streams
/// are terminals.
#[derive(Clone, Copy, Debug, Default)]
pub struct Look {
    /// ANSI styles in the notes on stderr.
    pub color: bool,
    /// Spinners on stderr (only on a terminal).
    pub spinners: bool,
    /// Render the answer as Markdown (`chat` with colour on stdout).
    pub markdown: bool,
    /// Stdout is a terminal: lines are shown as they stream and redrawn rendered (its size is
    /// read for each answer, so a resized window is followed).
    pub stdout_terminal: bool,
    /// Control characters of the answer shown escaped (stdout is a terminal, or the answer is
    /// rendered).
    pub safe_text: bool,
    /// `chat`: a cancelled turn is dropped, and the note says so.
    pub chat: bool,
}

impl Look {
    /// `run`: the answer as the model wrote it (escaped on a terminal).
    pub fn run(color: ColorChoice) -> Look {
        let stderr = std::io::stderr().is_terminal();
        Look {
            color: color.enabled(stderr),
            spinners: stderr,
            markdown: false,
            stdout_terminal: std::io::stdout().is_terminal(),
            safe_text: std::io::stdout().is_terminal(),
            chat: false,
        }
    }

    /// `chat`: the answer rendered as Markdown where colour is on for stdout.
    pub fn chat(color: ColorChoice) -> Look {
        let stdout = std::io::stdout().is_terminal();
        let rendered = color.enabled(stdout);
        Look {
            markdown: rendered,
            safe_text: stdout || rendered,
            chat: true,
            ..Look::run(color)
        }
    }
}

pub struct Renderer {
    json: bool,
    look: Look,
    /// The spinner of a running tool, or of a request waiting for its first token.
    spinner: Option<Spinner>,
    markdown: Option<MarkdownStream>,
    /// The last character written to stdout (to end the answer with a newline).
    last: Option<char>,
    /// Standard output's reader went away (`| head`): nothing more is written there.
    stdout_closed: bool,
    /// The `-v` log lines of the run.
    log: RunLog,
}

fn preview(text: &str, chars: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if one_line.chars().count() > chars {
        let mut s: String = one_line.chars().take(chars).collect();
        s.push('…');
        s
    } else {
        one_line
    }
}

impl Renderer {
    pub fn new(json: bool, look: Look) -> Self {
        Renderer {
            json,
            look,
            spinner: None,
            markdown: look.markdown.then(|| {
                MarkdownStream::new(if look.stdout_terminal {
                    crate::term::tty::size()
                } else {
                    None
                })
            }),
            last: None,
            stdout_closed: false,
            log: RunLog::default(),
        }
    }

    /// Whether standard output's reader went away: the caller stops the run (see out.rs).
    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    /// Writes to standard output unless its reader has gone; a failed write means it has.
    fn write_stdout(&mut self, bytes: &[u8]) {
        if self.stdout_closed {
            return;
        }
        let mut out = std::io::stdout().lock();
        if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
            self.stdout_closed = true;
        }
    }

    fn note(&self, symbol: &str, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.look.color {
            let _ = writeln!(err, "\x1b[2m{symbol} {text}\x1b[0m");
        } else {
            let _ = writeln!(err, "{symbol} {text}");
        }
    }

    fn start_spinner(&mut self, message: &str) {
        // The old one is cleared first: two would draw over each other.
        self.spinner = None;
        if self.look.spinners {
            self.spinner = Some(Spinner::start(message));
        }
    }

    fn stop_spinner(&mut self) {
        self.spinner = None;
    }

    fn write_out(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.write_stdout(text.as_bytes());
        if let Some(c) = text.chars().last() {
            self.last = Some(c);
        }
    }

    fn newline_before_notes(&mut self) {
        if let Some(md) = self.markdown.as_mut() {
            let rest = md.finish();
            self.write_out(&rest);
        }
        if self.last.is_some_and(|c| c != '\n') {
            self.write_out("\n");
        }
    }

    /// Says that the answer stops where the model reached its token limit.
    pub fn note_cut(&mut self) {
        self.newline_before_notes();
        self.note(
            "✂",
            "the answer was cut at the token limit (finish reason `length`)",
        );
    }

    pub fn event(&mut self, event: &RunEvent) {
        self.log.event(event);
        if self.json {
            // The waiting spinner is on stderr, so it may go with JSON on stdout too.
            match event {
                RunEvent::RoundStarted { .. } => self.start_spinner(spinner::WAITING),
                _ => self.stop_spinner(),
            }
            if let Ok(line) = serde_json::to_string(event) {
                self.write_stdout(format!("{line}\n").as_bytes());
            }
            return;
        }
        match event {
            RunEvent::RoundStarted { .. } => self.start_spinner(spinner::WAITING),
            RunEvent::Text { text } => {
                self.stop_spinner();
                let shown = match self.markdown.as_mut() {
                    Some(md) => md.push(text),
                    None if self.look.safe_text => markdown::safe(text),
                    None => text.clone(),
                };
                self.write_out(&shown);
            }
            RunEvent::Reasoning { text } => {
                self.stop_spinner();
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
            }
            RunEvent::CallStarted {
                name, arguments, ..
            } => {
                self.stop_spinner();
                self.newline_before_notes();
                self.note("→", &format!("{name} {}", preview(arguments, 80)));
                self.start_spinner(name);
            }
            RunEvent::CallFinished {
                name,
                status,
                duration_ms,
                preview: shown,
                ..
            } => {
                self.stop_spinner();
                let mark = if *status == CallStatus::Ok {
                    "✓"
                } else {
                    "✗"
                };
                let status = serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                self.note(
                    mark,
                    &format!(
                        "{name} {status} ({duration_ms} ms): {}",
                        preview(shown, 100)
                    ),
                );
            }
            RunEvent::Retry { attempt, reason } => {
                self.stop_spinner();
                self.newline_before_notes();
                self.note(
                    "↻",
                    &format!("malformed tool call, asking again ({attempt}/2): {reason}"),
                );
            }
            RunEvent::Finalization { reason } => {
                self.stop_spinner();
                self.newline_before_notes();
                let why = match reason {
                    FinalizationReason::Budget => "the tool budget is spent",
                    FinalizationReason::NoProgress => "the model repeats itself",
                };
                self.note(
                    "■",
                    &format!("{why}: asking for a final answer without tools"),
                );
            }
            RunEvent::Outcome { outcome, error, .. } => {
                self.stop_spinner();
                self.newline_before_notes();
                if *outcome == Outcome::Cancelled && self.look.chat {
                    self.note("!", "cancelled: this turn is dropped from the conversation");
                } else if *outcome != Outcome::Answered {
                    let detail = error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    self.note("!", &format!("run ended: {}{detail}", outcome.as_str()));
                }
            }
        }
    }
}

/// The exit code of an outcome.
pub fn exit_code(outcome: Option<Outcome>) -> u8 {
    match outcome {
        Some(Outcome::Answered) => 0,
        Some(Outcome::ToolBudgetExceeded) => 3,
        Some(Outcome::ToolNoProgress) => 4,
        Some(Outcome::MalformedGaveUp) => 5,
        Some(Outcome::Overloaded) => 6,
        Some(Outcome::Cancelled) => 130,
        Some(Outcome::Error) | None => 1,
    }
}
