pub mod chat;
pub mod parse;
pub mod prompt;
pub mod run;
pub mod serve;
pub mod tools;
