pub mod parse;
pub mod prompt;
