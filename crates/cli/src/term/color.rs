//! `--color never|always|auto` and `NO_COLOR` (<https://no-color.org>): one decision per stream.

/// The global `--color` flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set to a non-empty value.
    #[default]
    Auto,
    /// Always colour (and render Markdown), even into a pipe and whatever NO_COLOR says.
    Always,
    /// Never colour (`chat` prints answers as the model wrote them).
    Never,
}

impl ColorChoice {
    /// Whether to write ANSI styles to a stream that is (or is not) a terminal, with NO_COLOR
    /// as this process sees it.
    pub fn enabled(self, is_terminal: bool) -> bool {
        self.decide(is_terminal, no_color())
    }

    /// An explicit `--color always` wins over NO_COLOR: NO_COLOR sets the default, a flag given
    /// on purpose overrides it.
    fn decide(self, is_terminal: bool, no_color: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && !no_color,
        }
    }
}

/// NO_COLOR set and not empty.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::ColorChoice;

    #[test]
    fn auto_needs_a_terminal_and_no_no_color() {
        assert!(ColorChoice::Auto.decide(true, false));
        assert!(!ColorChoice::Auto.decide(false, false));
        assert!(!ColorChoice::Auto.decide(true, true));
        assert!(ColorChoice::Always.decide(false, true));
        assert!(!ColorChoice::Never.decide(true, false));
    }
}
