//! What `-v` shows of a run (target `toolbridge::run`): each model request, how long its first
//! token took, each tool call with its status and duration, and the run's outcome; `-vv` adds
//! the calls' arguments. The terminal's notes show the same things to a person; these are the
//! log's timestamped lines, for finding where the time went.

use std::time::Instant;

use toolbridge_agent::RunEvent;

#[derive(Default)]
pub struct RunLog {
    started: Option<Instant>,
    /// The round waiting for its first token, and since when.
    waiting: Option<(usize, Instant)>,
    rounds: usize,
}

impl RunLog {
    pub fn event(&mut self, event: &RunEvent) {
        let now = Instant::now();
        let started = *self.started.get_or_insert(now);
        match event {
            RunEvent::RoundStarted { round } => {
                self.rounds += 1;
                self.waiting = Some((*round, now));
                tracing::info!(target: "toolbridge::run", round, "model request");
            }
            RunEvent::Text { .. } | RunEvent::Reasoning { .. } | RunEvent::CallStarted { .. } => {
                if let Some((round, since)) = self.waiting.take() {
                    tracing::info!(target: "toolbridge::run", round, first_token_ms = millis(since, now), "first token");
                }
                if let RunEvent::CallStarted {
                    name, arguments, ..
                } = event
                {
                    tracing::debug!(target: "toolbridge::run", tool = %name, %arguments, "tool call started");
                }
            }
            RunEvent::CallFinished {
                name,
                status,
                duration_ms,
                ..
            } => {
                tracing::info!(target: "toolbridge::run", tool = %name, ?status, duration_ms, "tool call");
            }
            RunEvent::Retry { attempt, reason } => {
                tracing::info!(target: "toolbridge::run", attempt, %reason, "malformed tool call, asking again");
            }
            RunEvent::Finalization { reason } => {
                tracing::info!(target: "toolbridge::run", ?reason, "asking for a final answer without tools");
            }
            RunEvent::Outcome { outcome, .. } => {
                tracing::info!(target: "toolbridge::run", outcome = outcome.as_str(), rounds = self.rounds, duration_ms = millis(started, now), "run finished");
            }
        }
    }
}

fn millis(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.duration_since(from).as_millis()).unwrap_or(u64::MAX)
}
