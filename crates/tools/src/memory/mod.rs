//! Durable facts about a user (`save_memory`), in an embedded SQLite database by default or in
//! PostgreSQL for deployments that run several gateway instances.
//!
//! Each entry belongs to one user and carries its provenance: the conversation and the tool call
//! that wrote it, and when. A new entry with a `slot` supersedes the user's ACTIVE entries of the
//! same slot (their status becomes `SUPERSEDED`), in the same transaction. ACTIVE entries are given
//! to the model in the user's later runs ([`active_lines`]); `toolbridge memory list|rm` shows and
//! removes them.

/// A [`Memory`] from a row whose columns are `id, user_id, slot, value, memory_text, status,
/// conversation, tool_call, created_at`, in that order (what both stores select), each read with
/// the driver's `$row.$get(index)?`. A macro because the two drivers' getters are generic over
/// different traits.
macro_rules! memory_from_row {
    ($row:ident . $get:ident) => {
        $crate::memory::Memory {
            id: $row.$get(0)?,
            user: $row.$get(1)?,
            slot: $row.$get(2)?,
            value: $row.$get(3)?,
            memory_text: $row.$get(4)?,
            status: $row.$get(5)?,
            conversation: $row.$get(6)?,
            tool_call: $row.$get(7)?,
            created_at: $row.$get(8)?,
        }
    };
}

pub mod postgres;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// The status of a new entry.
pub const ACTIVE: &str = "ACTIVE";
/// The status of an entry replaced by a newer one of the same slot.
pub const SUPERSEDED: &str = "SUPERSEDED";

/// A stored entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Memory {
    pub id: i64,
    pub user: String,
    pub slot: Option<String>,
    pub value: Option<String>,
    pub memory_text: String,
    pub status: String,
    /// The conversation whose run wrote it.
    pub conversation: Option<String>,
    /// The tool call that wrote it.
    pub tool_call: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
}

/// An entry to store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewMemory {
    pub user: String,
    pub slot: Option<String>,
    pub value: Option<String>,
    pub memory_text: String,
    /// `None` is ACTIVE.
    pub status: Option<String>,
    pub conversation: Option<String>,
    pub tool_call: Option<String>,
}

/// Store failures (operator-facing; the model only sees the sanitized sentence).
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("memory database: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("memory database: {0}")]
    Io(#[from] std::io::Error),
    #[error("memory database: {0}")]
    Other(String),
}

/// Where memories live.
pub trait MemoryStore: Send + Sync + 'static {
    /// Stores an entry (durably: committed when this returns) and returns its id.
    fn add(&self, memory: NewMemory) -> BoxFuture<'static, Result<i64, MemoryError>>;
    /// Entries, oldest first, of one user or of everyone, with one status or any.
    fn list(
        &self,
        user: Option<String>,
        status: Option<String>,
    ) -> BoxFuture<'static, Result<Vec<Memory>, MemoryError>>;
    /// Deletes an entry; whether it existed.
    fn remove(&self, id: i64) -> BoxFuture<'static, Result<bool, MemoryError>>;
}

/// `[tools.memory]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// A SQLite file (`/path/memory.sqlite3` or `sqlite:///path`) or a PostgreSQL URL
    /// (`postgres://user:pass@host/db`). Default: `$XDG_DATA_HOME/toolbridge/memory.sqlite3`
    /// (`~/.local/share/toolbridge/memory.sqlite3`; `/var/lib/toolbridge/memory.sqlite3` as root),
    /// created on first use.
    pub url: Option<String>,
}

/// The default SQLite file: `memory.sqlite3` in the data folder ([`toolbridge_sandbox::paths`]).
pub fn default_sqlite_path() -> Option<PathBuf> {
    Some(toolbridge_sandbox::data_dir()?.join("memory.sqlite3"))
}

/// The store a URL names (nothing is opened before first use).
pub fn open_store(url: Option<&str>) -> Result<Arc<dyn MemoryStore>, MemoryError> {
    match url.map(str::trim) {
        Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
            Ok(Arc::new(PostgresStore::new(u)))
        }
        Some(u) => {
            let path = u
                .strip_prefix("sqlite://")
                .or_else(|| u.strip_prefix("sqlite:"))
                .unwrap_or(u);
            if path.is_empty() {
                return Err(MemoryError::Other("empty SQLite path".into()));
            }
            Ok(Arc::new(SqliteStore::new(PathBuf::from(path))))
        }
        None => {
            let path = default_sqlite_path().ok_or_else(|| {
                MemoryError::Other(
                    "no data folder: set XDG_DATA_HOME or HOME, or [tools.memory] url".into(),
                )
            })?;
            Ok(Arc::new(SqliteStore::new(path)))
        }
    }
}

/// The user's ACTIVE memories as lines for the system prompt, oldest first.
pub async fn active_lines(store: &dyn MemoryStore, user: &str) -> Result<Vec<String>, MemoryError> {
    let list = store
        .list(Some(user.to_owned()), Some(ACTIVE.to_owned()))
        .await?;
    Ok(list.into_iter().map(|m| line(&m)).collect())
}

fn line(m: &Memory) -> String {
    match (&m.slot, &m.value) {
        (Some(slot), Some(value)) if !m.memory_text.contains(value.as_str()) => {
            format!("{} ({slot}: {value})", m.memory_text)
        }
        _ => m.memory_text.clone(),
    }
}

/// Unix seconds now.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
