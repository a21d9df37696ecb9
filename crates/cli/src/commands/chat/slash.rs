//! `chat`'s commands: a line starting with `/` (a message that starts with `/` is written with
//! two).

use std::path::PathBuf;

/// What `/help` prints.
pub const HELP: &str = "\
Commands:
  /help          this list
  /model [NAME]  show the model, or switch to NAME (a [[models]] name or provider:model)
  /save FILE     save the conversation to FILE, as Markdown when it ends in .md, as
                 JSON when it ends in .json (one file, in the format its name says)
  /clear         start the conversation over (also /reset)
  /tools         the tools the model is offered
  /skills        the skills it can load
  /exit          leave (also /quit, or Ctrl-D)
Ctrl-C while an answer streams cancels it, and that turn is dropped from the conversation.
To send a message that starts with /, write // at its start.
";

#[derive(Debug, PartialEq, Eq)]
pub enum Slash {
    Help,
    Exit,
    Clear,
    /// `/model` (show) or `/model NAME` (switch).
    Model(Option<String>),
    Save(PathBuf),
    Tools,
    Skills,
}

/// What a line asks for: `None` for a message (with a leading `//` made `/`), else a command
/// or what is wrong with it.
pub fn parse(line: &str) -> Option<Result<Slash, String>> {
    if !line.starts_with('/') || line.starts_with("//") {
        return None;
    }
    let (command, rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(c, r)| (c, r.trim()));
    let arg = (!rest.is_empty()).then(|| rest.to_owned());
    Some(match (command, arg) {
        ("/help" | "/?", _) => Ok(Slash::Help),
        ("/exit" | "/quit", _) => Ok(Slash::Exit),
        ("/clear" | "/reset", _) => Ok(Slash::Clear),
        ("/model", name) => Ok(Slash::Model(name)),
        ("/save", Some(file)) => Ok(Slash::Save(PathBuf::from(file))),
        ("/save", None) => Err("/save needs a file: /save chat.md or /save chat.json".to_owned()),
        ("/tools", _) => Ok(Slash::Tools),
        ("/skills", _) => Ok(Slash::Skills),
        (other, _) => Err(format!("unknown command {other}; /help lists the commands")),
    })
}

/// The message a line sends: a leading `//` stands for `/`.
pub fn message(line: &str) -> &str {
    line.strip_prefix('/')
        .filter(|l| l.starts_with('/'))
        .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_messages() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//etc is a folder"), None);
        assert_eq!(message("//etc is a folder"), "/etc is a folder");
        assert_eq!(message("plain"), "plain");
        assert_eq!(parse("/model"), Some(Ok(Slash::Model(None))));
        assert_eq!(
            parse("/model  openai:gpt-4o-mini "),
            Some(Ok(Slash::Model(Some("openai:gpt-4o-mini".into()))))
        );
        assert_eq!(
            parse("/save a b.md"),
            Some(Ok(Slash::Save("a b.md".into())))
        );
        assert!(matches!(parse("/save"), Some(Err(_))));
        assert_eq!(parse("/reset"), Some(Ok(Slash::Clear)));
        assert_eq!(parse("/quit"), Some(Ok(Slash::Exit)));
        assert!(matches!(parse("/frobnicate"), Some(Err(e)) if e.contains("/help")));
    }
}
