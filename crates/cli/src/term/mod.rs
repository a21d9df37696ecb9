//! The terminal side of `run` and `chat`: whether to colour, the spinner while the model
//! thinks, Markdown rendering of a streamed answer, and the terminal modes (echo, size).

pub mod color;
pub mod markdown;
pub mod spinner;
pub mod tty;
