//! The default store: one SQLite file, no set-up.
//!
//! WAL journal with `synchronous=NORMAL`: a committed transaction survives a killed process (the
//! fault the gateway must survive: kill -9 mid-run); only a power loss may drop the last few
//! commits, never corrupting the file. FULL would fsync on every response write, which the
//! per-request budget cannot afford. Several processes may share the file (two gateway instances on
//! one host): readers never block, writers wait up to 5 s for each other (`busy_timeout`), and every
//! transaction that writes starts IMMEDIATE so that two writers queue instead of failing.
//!
//! One connection behind a mutex; every call runs in the blocking pool (`spawn_blocking`), JSON
//! encoding included, so no database or serialization work happens on the async runtime.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::codec::{
    self, encode_conversation, failed_body, stored_length, StoredConversation, StoredResponse,
    CONVERSATION_COLUMNS, FAILED, FILE_COLUMNS, RESPONSE_COLUMNS,
};
use crate::{
    ConversationRecord, FileFilter, FileRecord, Page, PageRequest, ResponseRecord, Store,
    StoreError, Unix,
};

mod files;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS toolbridge_responses (
    id TEXT PRIMARY KEY NOT NULL,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER,
    instance TEXT NOT NULL,
    previous_response_id TEXT,
    conversation_id TEXT,
    body TEXT NOT NULL,
    input_items TEXT NOT NULL,
    context TEXT NOT NULL,
    run TEXT
);
CREATE INDEX IF NOT EXISTS toolbridge_responses_running
    ON toolbridge_responses (status, updated_at);
CREATE INDEX IF NOT EXISTS toolbridge_responses_expiry
    ON toolbridge_responses (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS toolbridge_conversations (
    id TEXT PRIMARY KEY NOT NULL,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    items TEXT NOT NULL,
    context TEXT NOT NULL,
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS toolbridge_files (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    media_type TEXT NOT NULL,
    container TEXT
);
CREATE INDEX IF NOT EXISTS toolbridge_files_owner ON toolbridge_files (owner, created_at);
CREATE INDEX IF NOT EXISTS toolbridge_files_expiry
    ON toolbridge_files (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS toolbridge_file_contents (
    id TEXT PRIMARY KEY NOT NULL,
    content BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS toolbridge_answered_approvals (
    owner TEXT NOT NULL,
    response_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    answered_at INTEGER NOT NULL,
    PRIMARY KEY (owner, response_id, request_id)
);
";

/// Deletes the answered approvals of responses no longer stored.
const ORPHAN_APPROVALS: &str = "DELETE FROM toolbridge_answered_approvals
     WHERE NOT EXISTS (SELECT 1 FROM toolbridge_responses r
                       WHERE r.id = toolbridge_answered_approvals.response_id)";

/// A failure inside a blocking call: SQLite's or ours, so `?` works on both.
struct Fail(StoreError);

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail(StoreError::Database(e.to_string()))
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail(e)
    }
}

type Sql<T> = Result<T, Fail>;

/// A SQLite file of responses, conversations and files.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    max_file_bytes: u64,
}

impl SqliteStore {
    /// Opens (creating if missing) the file at `path`: its missing parent folders are created
    /// 0700 and the file 0600, since it holds every user's conversations.
    pub async fn open(path: PathBuf, max_file_bytes: u64) -> Result<Self, StoreError> {
        let at = path.clone();
        let conn = tokio::task::spawn_blocking(move || open_file(&at))
            .await
            .map_err(|e| StoreError::Database(e.to_string()))??;
        Ok(SqliteStore {
            path,
            conn: Arc::new(Mutex::new(conn)),
            max_file_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `PRAGMA integrity_check`'s answer ("ok" when the file is sound).
    pub fn integrity_check(&self) -> BoxFuture<'_, Result<String, StoreError>> {
        self.run(|c| Ok(c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?))
    }

    /// Runs `f` on the connection in the blocking pool.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Sql<T> + Send + 'static,
    ) -> BoxFuture<'_, Result<T, StoreError>> {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                // A panic elsewhere while holding the lock leaves no half-done state behind:
                // SQLite rolls back a transaction that was not committed.
                let mut guard = conn.lock().unwrap_or_else(|e| e.into_inner());
                f(&mut guard).map_err(|Fail(e)| e)
            })
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?
        })
    }
}

fn open_file(path: &Path) -> Result<Connection, StoreError> {
    let io = |e: std::io::Error| StoreError::Database(format!("{}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let mut dirs = std::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o700);
        dirs.create(parent).map_err(io)?;
    }
    // Create the file ourselves so that it is owner-only from the start (SQLite gives its -wal
    // and -shm files the database file's permissions).
    let mut file = std::fs::OpenOptions::new();
    file.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    file.open(path).map_err(io)?;

    let fail = |e: rusqlite::Error| StoreError::Database(e.to_string());
    let mut conn = Connection::open(path).map_err(fail)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(fail)?;
    // Before WAL: switching writes the header of a new file, which fixes its vacuum mode.
    files::reclaimable(&conn).map_err(fail)?;
    // Switching a fresh file to WAL takes an exclusive lock, and SQLite answers a second
    // connection doing the same at that moment with SQLITE_BUSY without calling the busy handler
    // (two instances starting together on a new file): retry for as long as the busy timeout.
    let mode: String =
        retry_busy(|| conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))).map_err(fail)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Database(format!(
            "{}: journal mode {mode}, not WAL",
            path.display()
        )));
    }
    conn.execute_batch("PRAGMA synchronous=NORMAL;")
        .map_err(fail)?;
    // Room for every statement of this file, so none is parsed twice.
    conn.set_prepared_statement_cache_capacity(64);
    // IMMEDIATE: two instances starting at once create the schema one after the other.
    retry_busy(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        tx.commit()
    })
    .map_err(fail)?;
    Ok(conn)
}

/// Runs `f` again while SQLite says the database is busy or locked, for up to 5 s (the busy
/// timeout): for the steps of opening a file whose locks SQLite does not wait for itself.
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn response_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredResponse> {
    Ok(StoredResponse {
        id: r.get(0)?,
        owner: r.get(1)?,
        status: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
        expires_at: r.get(5)?,
        instance: r.get(6)?,
        previous_response_id: r.get(7)?,
        conversation_id: r.get(8)?,
        body: r.get(9)?,
        input_items: r.get(10)?,
        context: r.get(11)?,
        run: r.get(12)?,
    })
}

fn conversation_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredConversation> {
    Ok(StoredConversation {
        id: r.get(0)?,
        owner: r.get(1)?,
        created_at: r.get(2)?,
        updated_at: r.get(3)?,
        metadata: r.get(4)?,
        items: r.get(5)?,
        context: r.get(6)?,
        version: r.get(7)?,
    })
}

/// A file row; its length column is read as SQLite's i64 and checked by the caller.
fn file_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(FileRecord, i64)> {
    let len: i64 = r.get(4)?;
    Ok((
        FileRecord {
            id: r.get(0)?,
            owner: r.get(1)?,
            filename: r.get(2)?,
            purpose: r.get(3)?,
            bytes: 0,
            created_at: r.get(5)?,
            expires_at: r.get(6)?,
            media_type: r.get(7)?,
            container: r.get(8)?,
        },
        len,
    ))
}

fn file_record((mut meta, len): (FileRecord, i64)) -> Result<FileRecord, StoreError> {
    meta.bytes = stored_length(len)?;
    Ok(meta)
}

fn immediate(c: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    c.transaction_with_behavior(TransactionBehavior::Immediate)
}

impl Store for SqliteStore {
    fn put_response(&self, r: &ResponseRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        // Encoded here rather than in the blocking pool: from a reference, so the caller's
        // record is not deep-copied first (cheaper than the copy it replaces).
        let s = match StoredResponse::encode(r) {
            Ok(s) => s,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        self.run(move |c| {
            // The owner condition makes a put over another owner's id change nothing.
            let changed = c
                .prepare_cached(
                    "INSERT INTO toolbridge_responses (id, owner, status, created_at, updated_at,
                     expires_at, instance, previous_response_id, conversation_id, body,
                     input_items, context, run)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                 ON CONFLICT (id) DO UPDATE SET status = excluded.status,
                     created_at = excluded.created_at, updated_at = excluded.updated_at,
                     expires_at = excluded.expires_at, instance = excluded.instance,
                     previous_response_id = excluded.previous_response_id,
                     conversation_id = excluded.conversation_id, body = excluded.body,
                     input_items = excluded.input_items, context = excluded.context,
                     run = excluded.run
                 WHERE toolbridge_responses.owner = excluded.owner",
                )?
                .execute(params![
                    s.id,
                    s.owner,
                    s.status,
                    s.created_at,
                    s.updated_at,
                    s.expires_at,
                    s.instance,
                    s.previous_response_id,
                    s.conversation_id,
                    s.body,
                    s.input_items,
                    s.context,
                    s.run
                ])?;
            if changed == 0 {
                return Err(StoreError::Conflict(format!("response {}", s.id)).into());
            }
            Ok(())
        })
    }

    fn get_response(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ResponseRecord>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            let row = c
                .prepare_cached(&format!(
                    "SELECT {RESPONSE_COLUMNS} FROM toolbridge_responses
                         WHERE id = ?1 AND owner = ?2"
                ))?
                .query_row(params![id, owner], response_row)
                .optional()?;
            Ok(row.map(StoredResponse::decode).transpose()?)
        })
    }

    fn delete_response(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            let tx = immediate(c)?;
            let deleted = tx
                .prepare_cached("DELETE FROM toolbridge_responses WHERE id = ?1 AND owner = ?2")?
                .execute(params![id, owner])?
                > 0;
            tx.prepare_cached(
                "DELETE FROM toolbridge_answered_approvals WHERE response_id = ?1 AND owner = ?2",
            )?
            .execute(params![id, owner])?;
            tx.commit()?;
            Ok(deleted)
        })
    }

    fn heartbeat(
        &self,
        instance: &str,
        ids: &[String],
        now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let (instance, ids) = (instance.to_owned(), ids.to_vec());
        self.run(move |c| {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let tx = immediate(c)?;
            let mut stopped = Vec::new();
            {
                let mut beat = tx.prepare_cached(
                    "UPDATE toolbridge_responses SET updated_at = ?1
                     WHERE id = ?2 AND instance = ?3 AND status IN ('queued', 'in_progress')",
                )?;
                let mut exists =
                    tx.prepare_cached("SELECT 1 FROM toolbridge_responses WHERE id = ?1")?;
                for id in &ids {
                    if beat.execute(params![now, id, instance])? == 0
                        && exists.exists(params![id])?
                    {
                        stopped.push(id.clone());
                    }
                }
            }
            tx.commit()?;
            Ok(stopped)
        })
    }

    fn recover(
        &self,
        instance: &str,
        stale_before: Unix,
        message: &str,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        let (instance, message) = (instance.to_owned(), message.to_owned());
        self.run(move |c| {
            let tx = immediate(c)?;
            let dead: Vec<(String, String)> = tx
                .prepare_cached(
                    "SELECT id, body FROM toolbridge_responses
                     WHERE status IN ('queued', 'in_progress')
                       AND (instance = ?1 OR updated_at < ?2)",
                )?
                .query_map(params![instance, stale_before], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect::<Result<_, _>>()?;
            {
                let mut fail = tx.prepare_cached(
                    "UPDATE toolbridge_responses SET status = ?1, body = ?2 WHERE id = ?3",
                )?;
                for (id, body) in &dead {
                    let body = failed_body(codec::decode(body, "response body")?, &message);
                    let [body] = codec::encode_all([&body], &format!("response {id}"))?;
                    fail.execute(params![FAILED, body, id])?;
                }
            }
            tx.commit()?;
            Ok(dead.len() as u64)
        })
    }

    fn expire(&self, now: Unix) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.run(move |c| {
            let tx = immediate(c)?;
            tx.prepare_cached(
                "DELETE FROM toolbridge_file_contents WHERE id IN
                     (SELECT id FROM toolbridge_files WHERE expires_at < ?1)",
            )?
            .execute([now])?;
            let files = tx
                .prepare_cached("DELETE FROM toolbridge_files WHERE expires_at < ?1")?
                .execute([now])?;
            let responses = tx
                .prepare_cached("DELETE FROM toolbridge_responses WHERE expires_at < ?1")?
                .execute([now])?;
            tx.prepare_cached(ORPHAN_APPROVALS)?.execute([])?;
            tx.commit()?;
            if files + responses > 0 {
                files::reclaim(c);
            }
            Ok((files + responses) as u64)
        })
    }

    fn claim_approvals(
        &self,
        owner: &str,
        response_id: &str,
        request_ids: &[String],
        now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let (owner, response_id) = (owner.to_owned(), response_id.to_owned());
        let ids = crate::claim_order(request_ids);
        self.run(move |c| {
            // IMMEDIATE: a second claim waits for this one to commit, then finds its rows.
            let tx = immediate(c)?;
            let mut answered_before = Vec::new();
            {
                let mut claim = tx.prepare_cached(
                    "INSERT INTO toolbridge_answered_approvals
                         (owner, response_id, request_id, answered_at)
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                )?;
                for id in &ids {
                    if claim.execute(params![owner, response_id, id, now])? == 0 {
                        answered_before.push(id.clone());
                    }
                }
            }
            // All or none: dropping the transaction rolls the new rows back.
            if answered_before.is_empty() {
                tx.commit()?;
            }
            Ok(answered_before)
        })
    }

    fn put_conversation(
        &self,
        conv: ConversationRecord,
        expected_version: Option<i64>,
    ) -> BoxFuture<'_, Result<ConversationRecord, StoreError>> {
        self.run(move |c| {
            let [metadata, items, context] = encode_conversation(&conv)?;
            let stored: Option<(i64, i64)> = match expected_version {
                None => c
                    .prepare_cached(
                        "INSERT INTO toolbridge_conversations (id, owner, created_at, updated_at,
                             metadata, items, context, version)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)
                         ON CONFLICT (id) DO NOTHING
                         RETURNING created_at, version",
                    )?
                    .query_row(
                        params![
                            conv.id,
                            conv.owner,
                            conv.created_at,
                            conv.updated_at,
                            metadata,
                            items,
                            context
                        ],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?,
                Some(version) => c
                    .prepare_cached(
                        "UPDATE toolbridge_conversations
                         SET updated_at = ?1, metadata = ?2, items = ?3, context = ?4,
                             version = version + 1
                         WHERE id = ?5 AND owner = ?6 AND version = ?7
                         RETURNING created_at, version",
                    )?
                    .query_row(
                        params![
                            conv.updated_at,
                            metadata,
                            items,
                            context,
                            conv.id,
                            conv.owner,
                            version
                        ],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?,
            };
            let Some((created_at, version)) = stored else {
                return Err(StoreError::Conflict(format!("conversation {}", conv.id)).into());
            };
            Ok(ConversationRecord {
                created_at,
                version,
                ..conv
            })
        })
    }

    fn get_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ConversationRecord>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            let row = c
                .prepare_cached(&format!(
                    "SELECT {CONVERSATION_COLUMNS} FROM toolbridge_conversations
                         WHERE id = ?1 AND owner = ?2"
                ))?
                .query_row(params![id, owner], conversation_row)
                .optional()?;
            Ok(row.map(StoredConversation::decode).transpose()?)
        })
    }

    fn delete_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            Ok(c.prepare_cached(
                "DELETE FROM toolbridge_conversations WHERE id = ?1 AND owner = ?2",
            )?
            .execute(params![id, owner])?
                > 0)
        })
    }

    fn put_file(&self, meta: FileRecord, content: Bytes) -> BoxFuture<'_, Result<(), StoreError>> {
        self.put_file_quota(meta, content, None)
    }

    fn get_file(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<FileRecord>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            let row = c
                .prepare_cached(&format!(
                    "SELECT {FILE_COLUMNS} FROM toolbridge_files WHERE id = ?1 AND owner = ?2"
                ))?
                .query_row(params![id, owner], file_row)
                .optional()?;
            Ok(row.map(file_record).transpose()?)
        })
    }

    fn file_content(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<Bytes>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            let content: Option<Vec<u8>> = c
                .prepare_cached(
                    "SELECT c.content FROM toolbridge_file_contents c
                     JOIN toolbridge_files f ON f.id = c.id
                     WHERE f.id = ?1 AND f.owner = ?2",
                )?
                .query_row(params![id, owner], |r| r.get(0))
                .optional()?;
            Ok(content.map(Bytes::from))
        })
    }

    fn list_files(
        &self,
        owner: &str,
        filter: FileFilter,
    ) -> BoxFuture<'_, Result<Vec<FileRecord>, StoreError>> {
        let owner = owner.to_owned();
        self.run(move |c| {
            let (condition, container) = match filter {
                FileFilter::Uploads => ("container IS NULL", None),
                FileFilter::Container(name) => ("container = ?2", Some(name)),
                FileFilter::All => ("TRUE", None),
            };
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {FILE_COLUMNS} FROM toolbridge_files
                 WHERE owner = ?1 AND {condition}
                 ORDER BY created_at DESC, seq DESC"
            ))?;
            let rows = match &container {
                Some(name) => stmt.query_map(params![owner, name], file_row)?,
                None => stmt.query_map(params![owner], file_row)?,
            }
            .collect::<Result<Vec<_>, _>>()?;
            Ok(rows
                .into_iter()
                .map(file_record)
                .collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn delete_file(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.run(move |c| {
            let tx = immediate(c)?;
            let deleted = tx
                .prepare_cached("DELETE FROM toolbridge_files WHERE id = ?1 AND owner = ?2")?
                .execute(params![id, owner])?
                > 0;
            if deleted {
                tx.prepare_cached("DELETE FROM toolbridge_file_contents WHERE id = ?1")?
                    .execute([&id])?;
            }
            tx.commit()?;
            if deleted {
                files::reclaim(c);
            }
            Ok(deleted)
        })
    }

    fn list_files_page(
        &self,
        owner: &str,
        filter: FileFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, Result<Page<FileRecord>, StoreError>> {
        let owner = owner.to_owned();
        self.run(move |c| files::list_page(c, &owner, &filter, &page))
    }

    fn file_usage(&self, owner: &str) -> BoxFuture<'_, Result<u64, StoreError>> {
        let owner = owner.to_owned();
        self.run(move |c| files::usage(c, &owner, None))
    }

    fn put_file_within(
        &self,
        meta: FileRecord,
        content: Bytes,
        quota: u64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.put_file_quota(meta, content, Some(quota))
    }
}
