//! The agent on the command line: flags, session start, rendering and approval shared by `run`
//! and `chat` (the composition itself is toolbridge-runtime's).

pub mod approve;
pub mod args;
pub mod render;
pub mod runlog;
pub mod session;
pub mod workspace;
