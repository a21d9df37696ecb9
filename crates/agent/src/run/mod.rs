//! A run of the tool loop: the sans-IO [`machine`] (its inputs and outputs in `io`), the async [`driver`] that does its I/O, and what a run leaves ([`state`]).

pub(crate) mod driver;
mod free_text;
mod io;
pub mod machine;
pub mod state;

pub use driver::PauseWhen;
pub use io::{Action, Limits, RequestOptions, ToolJobs};
pub use machine::RunMachine;
pub use state::RunState;
