//! Stop sequences applied on our side: some servers ignore `stop`, and a prompt-mode model that
//! keeps writing after `</tool_call>` invents the tool's result. The scanner makes every upstream
//! behave like one that honours `stop`: output ends before the first stop string, which is not
//! emitted, exactly as OpenAI does.
//!
//! Streaming-safe: only a tail that could still begin a stop string is held back.

/// The scanner.
#[derive(Clone, Debug, Default)]
pub struct StopScanner {
    stops: Vec<String>,
    held: String,
    stopped: bool,
    /// The stop string found, once `stopped`.
    matched: Option<String>,
}

impl StopScanner {
    pub fn new<I, S>(stops: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let stops: Vec<String> = stops
            .into_iter()
            .map(Into::into)
            .filter(|s| !s.is_empty())
            .collect();
        StopScanner {
            stops,
            held: String::new(),
            stopped: false,
            matched: None,
        }
    }

    /// Whether a stop string was found; everything after it is discarded.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The stop string that ended the text (the earliest one found), once [`Self::stopped`].
    pub fn matched(&self) -> Option<&str> {
        self.matched.as_deref()
    }

    /// Pushes text; returns what may be emitted now.
    pub fn push(&mut self, text: &str) -> String {
        if self.stopped {
            return String::new();
        }
        if self.stops.is_empty() {
            return text.to_owned();
        }
        self.held.push_str(text);
        if let Some((at, stop)) = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()).map(|at| (at, s)))
            .min_by_key(|(at, _)| *at)
        {
            self.stopped = true;
            self.matched = Some(stop.clone());
            let out = self.held[..at].to_owned();
            self.held.clear();
            return out;
        }
        // Keep the longest tail that is a proper prefix of some stop string.
        let keep = self
            .stops
            .iter()
            .map(|s| longest_suffix_prefix(&self.held, s))
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        let out = self.held[..cut].to_owned();
        self.held.drain(..cut);
        out
    }

    /// Ends the stream: the held tail was not a stop string after all.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `stop`, at a char boundary.
fn longest_suffix_prefix(text: &str, stop: &str) -> usize {
    let max = (stop.len() - 1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && stop
                    .as_bytes()
                    .starts_with(&text.as_bytes()[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], chunks: &[&str]) -> (String, bool) {
        let mut s = StopScanner::new(stops.iter().copied());
        let mut out = String::new();
        for c in chunks {
            out.push_str(&s.push(c));
        }
        if !s.stopped() {
            out.push_str(&s.finish());
        }
        (out, s.stopped())
    }

    #[test]
    fn stops_before_the_first_stop_string_for_any_split() {
        let text = "call <tool_call>{\"a\":1}</tool_call> invented result </tool_call>";
        let expect = ("call <tool_call>{\"a\":1}".to_string(), true);
        assert_eq!(run(&["</tool_call>"], &[text]), expect);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(&["</tool_call>"], &refs), expect);
        for cut in 1..text.len() {
            assert_eq!(
                run(&["</tool_call>"], &[&text[..cut], &text[cut..]]),
                expect
            );
        }
    }

    #[test]
    fn held_prefixes_are_released_and_unicode_is_safe() {
        assert_eq!(
            run(&["</tool_call>"], &["a </tool", "_xyz"]),
            ("a </tool_xyz".into(), false)
        );
        assert_eq!(run(&["éé"], &["aé", "b"]), ("aéb".into(), false));
        assert_eq!(
            run(&["\n\nUser:", "</x>"], &["hi\n\nUs", "er: no"]),
            ("hi".into(), true)
        );
        assert_eq!(run(&[], &["a", "b"]), ("ab".into(), false));
    }
}
