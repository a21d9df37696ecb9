//! A spinner on standard error (indicatif, already the tool spinner's crate): shown only on a
//! terminal, drawn at once when it starts (so even a quick answer shows that something was
//! waited for, and a test can see it without timing), and cleared without a trace when it
//! stops.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What the spinner says while a request is out and nothing has come back.
pub const WAITING: &str = "waiting for the model";

pub struct Spinner(ProgressBar);

impl Spinner {
    /// Starts a spinner with `message` and the time spent.
    pub fn start(message: &str) -> Spinner {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(message.to_owned());
        bar.tick();
        bar.enable_steady_tick(Duration::from_millis(100));
        Spinner(bar)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
