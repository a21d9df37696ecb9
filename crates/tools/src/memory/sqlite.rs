//! The embedded store: one SQLite file, created on first use.
//!
//! Durability: WAL journal with `synchronous=FULL`, so a transaction is on disk (the WAL is
//! fsynced) when `add` returns — a killed process, or a power loss, loses no committed fact, and
//! SQLite's journal means an interrupted write never corrupts the file. (`NORMAL` with WAL would
//! survive a killed process too but may lose the last transactions on power loss.) Several
//! processes may share the file: writers wait up to 5 s for each other (`busy_timeout`).
//!
//! The file is owner-only (0600), and so are the folders made for it, except on the way to the
//! workspaces (see [`toolbridge_sandbox::private`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension};
use toolbridge_sandbox::private;

use super::{now, Memory, MemoryError, MemoryStore, NewMemory, ACTIVE, SUPERSEDED};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    slot TEXT,
    value TEXT,
    memory_text TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'ACTIVE',
    conversation TEXT,
    tool_call TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_user_status ON memories (user_id, status);
";

/// A SQLite file of memories.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Arc<Mutex<Option<Connection>>>,
}

impl SqliteStore {
    pub fn new(path: PathBuf) -> Self {
        SqliteStore {
            path,
            conn: Arc::new(Mutex::new(None)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open(path: &Path) -> Result<Connection, MemoryError> {
        // Created here, owner-only from the start, rather than by SQLite with the umask's mode
        // (SQLite gives the -wal and -shm files the database file's mode).
        private::create_parent(path)?;
        private::file_options()
            .create(true)
            .append(true)
            .open(path)?;
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(MemoryError::Other(format!("journal mode {mode}, not WAL")));
        }
        conn.execute_batch("PRAGMA synchronous=FULL;")?;
        conn.execute_batch(SCHEMA)?;
        Ok(conn)
    }

    /// Runs `f` on the connection in the blocking pool, opening the file first if needed.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, MemoryError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, MemoryError>> {
        let path = self.path.clone();
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn.lock().unwrap_or_else(|e| e.into_inner());
                if guard.is_none() {
                    *guard = Some(Self::open(&path)?);
                }
                match guard.as_mut() {
                    Some(c) => f(c),
                    None => Err(MemoryError::Other("not open".into())),
                }
            })
            .await
            .map_err(|e| MemoryError::Other(e.to_string()))?
        })
    }

    /// `PRAGMA integrity_check`'s answer (`ok` when the file is sound).
    pub fn integrity_check(&self) -> BoxFuture<'static, Result<String, MemoryError>> {
        self.with(|c| Ok(c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?))
    }
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    Ok(memory_from_row!(r.get))
}

impl MemoryStore for SqliteStore {
    fn add(&self, m: NewMemory) -> BoxFuture<'static, Result<i64, MemoryError>> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if let Some(slot) = &m.slot {
                tx.execute(
                    "UPDATE memories SET status = ?1 WHERE user_id = ?2 AND slot = ?3 AND status = ?4",
                    params![SUPERSEDED, m.user, slot, ACTIVE],
                )?;
            }
            tx.execute(
                "INSERT INTO memories (user_id, slot, value, memory_text, status, conversation, tool_call, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    m.user,
                    m.slot,
                    m.value,
                    m.memory_text,
                    m.status.as_deref().unwrap_or(ACTIVE),
                    m.conversation,
                    m.tool_call,
                    now()
                ],
            )?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            Ok(id)
        })
    }

    fn list(
        &self,
        user: Option<String>,
        status: Option<String>,
    ) -> BoxFuture<'static, Result<Vec<Memory>, MemoryError>> {
        self.with(move |c| {
            let mut stmt = c.prepare(
                "SELECT id, user_id, slot, value, memory_text, status, conversation, tool_call, created_at
                 FROM memories
                 WHERE (?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR status = ?2)
                 ORDER BY id",
            )?;
            let rows = stmt
                .query_map(params![user, status], row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn remove(&self, id: i64) -> BoxFuture<'static, Result<bool, MemoryError>> {
        self.with(move |c| {
            let found: Option<i64> = c
                .query_row("SELECT id FROM memories WHERE id = ?1", [id], |r| r.get(0))
                .optional()?;
            if found.is_none() {
                return Ok(false);
            }
            Ok(c.execute("DELETE FROM memories WHERE id = ?1", [id])? > 0)
        })
    }
}
