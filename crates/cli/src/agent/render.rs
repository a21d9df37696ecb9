//! How a run looks on a terminal: the answer streams to stdout, tool activity goes to stderr (names,
//! an arguments preview, a spinner while a tool runs, durations). With `--json`, the events are
//! printed as JSON lines instead.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use toolbridge_agent::{CallStatus, FinalizationReason, Outcome, RunEvent};

pub struct Renderer {
    json: bool,
    color: bool,
    spinner: Option<ProgressBar>,
    /// The last character written to stdout (to end the answer with a newline).
    last: Option<char>,
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
    pub fn new(json: bool) -> Self {
        Renderer {
            json,
            color: std::io::stderr().is_terminal(),
            spinner: None,
            last: None,
        }
    }

    fn note(&self, symbol: &str, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.color {
            let _ = writeln!(err, "\x1b[2m{symbol} {text}\x1b[0m");
        } else {
            let _ = writeln!(err, "{symbol} {text}");
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }

    fn newline_before_notes(&mut self) {
        if self.last.is_some_and(|c| c != '\n') {
            println!();
            self.last = Some('\n');
        }
    }

    pub fn event(&mut self, event: &RunEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        match event {
            RunEvent::RoundStarted { .. } => {}
            RunEvent::Text { text } => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                if let Some(c) = text.chars().last() {
                    self.last = Some(c);
                }
            }
            RunEvent::Reasoning { text } => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
            }
            RunEvent::CallStarted {
                name, arguments, ..
            } => {
                self.newline_before_notes();
                self.note("→", &format!("{name} {}", preview(arguments, 80)));
                if self.color {
                    let spinner = ProgressBar::new_spinner();
                    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                        spinner.set_style(style);
                    }
                    spinner.set_message(name.clone());
                    spinner.enable_steady_tick(Duration::from_millis(100));
                    self.stop_spinner();
                    self.spinner = Some(spinner);
                }
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
                self.newline_before_notes();
                self.note(
                    "↻",
                    &format!("malformed tool call, asking again ({attempt}/2): {reason}"),
                );
            }
            RunEvent::Finalization { reason } => {
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
                if *outcome != Outcome::Answered {
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
        Some(Outcome::Cancelled) => 130,
        Some(Outcome::Error) | None => 1,
    }
}
