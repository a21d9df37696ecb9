//! A run of the tool loop: the sans-IO [`machine`], the async [`driver`] that does its I/O, and what a run leaves ([`state`]).

pub(crate) mod driver;
mod free_text;
pub mod machine;
pub mod state;

pub use driver::PauseWhen;
pub use machine::{Action, Limits, RequestOptions, RunMachine, ToolJobs};
pub use state::RunState;
