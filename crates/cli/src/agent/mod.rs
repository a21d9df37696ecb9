//! The agent on the command line: set-up, rendering and approval shared by `run` and `chat`.

pub mod approve;
pub mod mcp;
pub mod render;
pub mod session;
pub mod setup;
pub mod workspace;
