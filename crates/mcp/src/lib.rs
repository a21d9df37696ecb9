//! # toolbridge-mcp
//!
//! MCP servers as toolbridge tools, through the official Rust SDK (`rmcp`). Servers are reached
//! over stdio (a child process) or streamable HTTP; their tools join the toolbox as
//! `mcp__<server>__<tool>` with the server's descriptions and input schemas. The
//! [`McpManager`] starts the servers concurrently, offers their tools as a dynamic tool source
//! (a server's `notifications/tools/list_changed` refreshes the list between rounds), restarts a
//! crashed server on its next use and shuts the servers down.

pub mod config;
pub mod content;
pub mod manager;
pub mod names;
pub mod remote;
pub mod server;
pub mod stderr;
pub mod tool;

pub use config::{parse_flag, ConfigError, McpApproval, McpServerConfig};
pub use manager::{McpManager, StartFailure, Started};
pub use remote::connect_remote;
pub use tool::McpTool;
