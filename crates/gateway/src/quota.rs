//! Storage quotas at the gateway: the answer to an upload past the user's file quota
//! (`[server.state] max_file_bytes_per_user`) or into a workspace past its quota
//! (`[tools.workspaces] max_size_mb`).
//!
//! Both are 400 `invalid_request_error` with code `storage_quota_exceeded`, and the message
//! names the quota and the current use. Not 413: the request is not too large, the user's
//! storage is full. Not 429: OpenAI's SDKs retry 429 by themselves, and this answer does not
//! change with time, only when files are deleted; OpenAI answers uploads past its own storage
//! limits with a 400 too.

use std::sync::Arc;

use crate::error::ApiError;
use crate::state::AppState;

const CODE: &str = "storage_quota_exceeded";

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

fn quota_error(message: String) -> ApiError {
    let mut e = ApiError::bad_param("file", message);
    e.code = Some(CODE.into());
    e
}

/// An upload past the user's file quota.
pub(crate) fn files_full(used: u64, wanted: u64, quota: u64) -> ApiError {
    quota_error(format!(
        "Storage quota exceeded: your files use {used} bytes ({}) of the {quota} bytes ({}) \
         allowed per user (server.state.max_file_bytes_per_user), and this file needs {wanted} \
         more. Delete files (DELETE /v1/files/{{file_id}}) and try again.",
        mib(used),
        mib(quota)
    ))
}

/// A file staged into a conversation's workspace past the workspace's quota.
pub(crate) fn workspace_full(used: u64, wanted: u64, quota: u64) -> ApiError {
    let mut e = quota_error(format!(
        "Storage quota exceeded: this conversation's workspace holds {used} bytes ({}) of the \
         {quota} bytes ({}) it may hold (tools.workspaces.max_size_mb), and this file needs \
         {wanted} more. Delete files in the workspace (ask the model to remove ones it no longer \
         needs) or start a new conversation.",
        mib(used),
        mib(quota)
    ));
    e.param = Some("input".into());
    e
}

/// The per-user quota on stored files, `None` when off.
pub(crate) fn file_quota(state: &AppState) -> Option<u64> {
    state.responses.file_quota()
}

/// The per-workspace quota of the runtime's tools, `None` when off or without a runtime.
pub(crate) fn workspace_quota(state: &Arc<AppState>) -> Option<u64> {
    state
        .runtime
        .as_ref()
        .and_then(|r| r.tools().workspaces.max_bytes())
}
