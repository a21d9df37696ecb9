//! The stored objects of toolbridge's HTTP agent runtime: responses (with their paused runs),
//! conversations and uploaded files, in SQLite by default or in PostgreSQL so that several gateway
//! instances behind a load balancer share them.
//!
//! The store is plain data: JSON values in, JSON values out; it knows nothing of the Responses API
//! beyond the few fields it must act on (`status`, and `body.status`/`body.error` when it marks a
//! dead run failed). Every read, delete and list is scoped by `owner` in the query itself: a record
//! of another owner is simply not found (docs/src/security.md, "Stored objects and tenancy": 404,
//! never 403).
//!
//! Backends: [`SqliteStore`] (one file, WAL), [`PostgresStore`] (a small pool of connections) and
//! [`MemoryStore`] (in-process, for tests). [`open`] picks one from a [`StoreConfig`].

mod codec;
mod limits;
mod memory;
mod page;
pub mod postgres;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use limits::{SharedLimits, SlotId};
pub use memory::MemoryStore;
pub use page::{page_of, Order, Page, PageRequest, MAX_PAGE};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// Unix time in seconds.
pub type Unix = i64;

/// The most JSON one record may hold (a response's body, input items, context and run together; a
/// conversation's metadata, items and context together), so that a runaway body cannot fill the
/// database.
pub const MAX_RECORD_JSON_BYTES: usize = 64 << 20;

/// The statuses of a response whose run has not ended: what [`Store::heartbeat`] keeps alive and
/// [`Store::recover`] marks failed.
pub const RUNNING_STATUSES: [&str; 2] = ["queued", "in_progress"];

/// A random object id: `prefix` + "_" + 32 lowercase hex digits (128 bits from the OS RNG).
pub fn new_id(prefix: &str) -> String {
    random_id(prefix, '_')
}

/// A random file id in OpenAI's form: "file-" + 32 lowercase hex digits (128 bits).
pub fn new_file_id() -> String {
    random_id("file", '-')
}

fn random_id(prefix: &str, separator: char) -> String {
    use rand::{RngCore, TryRngCore};
    let mut bytes = [0u8; 16];
    if rand::rngs::OsRng.try_fill_bytes(&mut bytes).is_err() {
        // The thread RNG is a CSPRNG seeded from the OS; it stands in only if the OS source
        // fails at this moment, so an id is never predictable and `new_id` never fails.
        rand::rng().fill_bytes(&mut bytes);
    }
    let mut id = String::with_capacity(prefix.len() + 33);
    id.push_str(prefix);
    id.push(separator);
    for b in bytes {
        id.push(hex_digit(b >> 4));
        id.push(hex_digit(b & 0x0f));
    }
    id
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}

/// The ids of a claim, sorted and without repeats: transactions that claim overlapping ids take
/// their row locks in one order, so two of them never deadlock.
fn claim_order(request_ids: &[String]) -> Vec<String> {
    let mut ids = request_ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Unix seconds now (0 if the clock is before 1970).
pub fn now() -> Unix {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A stored response (`POST /v1/responses`), with what a continuation or a resumed run needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseRecord {
    /// "resp_…"
    pub id: String,
    /// The user (the API key's user); every read and write is scoped by it.
    pub owner: String,
    /// "queued" | "in_progress" | "completed" | "failed" | "incomplete" | "cancelled"
    pub status: String,
    pub created_at: Unix,
    /// The heartbeat while the run is in progress ([`Store::heartbeat`]).
    pub updated_at: Unix,
    /// Retention: deleted by [`Store::expire`] after this; `None` = kept.
    pub expires_at: Option<Unix>,
    /// The gateway instance that runs (or ran) it.
    pub instance: String,
    pub previous_response_id: Option<String>,
    pub conversation_id: Option<String>,
    /// The Response object exactly as the API returns it.
    pub body: serde_json::Value,
    /// A JSON array: this request's input items (as `GET …/input_items` lists them).
    pub input_items: serde_json::Value,
    /// Opaque to the store: what a continuation needs (messages); may be `Null`.
    pub context: serde_json::Value,
    /// Opaque: a paused run machine waiting for client function outputs.
    pub run: Option<serde_json::Value>,
}

/// A stored conversation (`conversation` in a Responses request).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationRecord {
    pub id: String,
    pub owner: String,
    /// Set when the conversation is created; later puts do not change it.
    pub created_at: Unix,
    pub updated_at: Unix,
    pub metadata: serde_json::Value,
    /// A JSON array of items, oldest first.
    pub items: serde_json::Value,
    /// Opaque to the store.
    pub context: serde_json::Value,
    /// Bumped by every successful put (optimistic concurrency); set by the store, not the caller.
    pub version: i64,
}

/// An uploaded file's metadata (`POST /v1/files`), or a file written by code in a container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// "file-…" (OpenAI's file ids use a dash).
    pub id: String,
    pub owner: String,
    /// The sanitized display name (the caller sanitizes; the store does not).
    pub filename: String,
    pub purpose: String,
    /// The content's length. [`Store::put_file`] stores the length of the content it is given,
    /// whatever this said.
    pub bytes: u64,
    pub created_at: Unix,
    pub expires_at: Option<Unix>,
    /// Sniffed by the caller.
    pub media_type: String,
    /// Set for files written by code in a container (a conversation's workspace).
    pub container: Option<String>,
}

/// Which of an owner's files [`Store::list_files`] lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileFilter {
    /// Uploaded files: those of no container (`container` is `None`).
    Uploads,
    /// The files of this container.
    Container(String),
    /// Every file of the owner.
    All,
}

/// Store failures. `Database` carries detail for the operator's log, never for an API client.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state database: {0}")]
    Database(String),
    /// An optimistic put lost (or a put would have overwritten another owner's record).
    #[error("conflict: {0} changed since it was read")]
    Conflict(String),
    #[error("too large: {0}")]
    TooLarge(String),
    #[error("bad state url: {0}")]
    Config(String),
    /// A list's `after` names no object of the owner in that list.
    #[error("no such cursor: {0}")]
    UnknownCursor(String),
    /// A write that would take the owner's stored files past their quota.
    #[error("over quota: {used} bytes stored, {wanted} more wanted, quota {quota} bytes")]
    OverQuota { used: u64, wanted: u64, quota: u64 },
}

/// Where the runtime's objects live. Every method is scoped by `owner` where it takes one.
pub trait Store: Send + Sync + 'static {
    /// Inserts or replaces the response with this id. A response of that id owned by someone
    /// else is left alone: [`StoreError::Conflict`].
    fn put_response(&self, r: &ResponseRecord) -> BoxFuture<'_, Result<(), StoreError>>;
    fn get_response(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ResponseRecord>, StoreError>>;
    /// Whether the owner had a response of this id (now deleted).
    fn delete_response(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Sets `updated_at = now` for these responses of `instance` that are still queued or in
    /// progress (a running instance's heartbeat). Returns the ids among them whose stored row
    /// says they are no longer running here — another instance cancelled them, or recovery
    /// marked them failed — so the instance stops them; ids with no row (not stored, deleted)
    /// are not among them.
    fn heartbeat(
        &self,
        instance: &str,
        ids: &[String],
        now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;
    /// Every response still `queued`/`in_progress` whose instance is `instance`, or whose
    /// `updated_at` is older than `stale_before` (any instance): status becomes "failed",
    /// `body.status` = "failed" and `body.error` = `{"code":"server_error","message":message}`;
    /// returns how many. Called at start-up with the instance's own name (it was killed mid-run)
    /// and periodically with an `instance` that runs nothing, e.g. "" (another instance died;
    /// naming itself there would fail its own live runs).
    fn recover(
        &self,
        instance: &str,
        stale_before: Unix,
        message: &str,
    ) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// Deletes the responses and files (content too) whose `expires_at < now`; returns how many
    /// records (responses + files). The answered approvals of responses no longer stored go too.
    fn expire(&self, now: Unix) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Records that the client answered the approval requests `request_ids` of the owner's
    /// paused response `response_id`: all of them, or — when any was answered before — none.
    /// Returns the ids answered before (empty: all are recorded now). Atomic in the database,
    /// so an answer is used once however many requests carry it, sent one after the other or
    /// at the same moment, to one instance or several. A deleted response's answers go with it.
    fn claim_approvals(
        &self,
        owner: &str,
        response_id: &str,
        request_ids: &[String],
        now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;

    /// `expected_version` `None` creates (Conflict if the id exists, whoever owns it); `Some(v)`
    /// updates only if the owner's stored conversation has version `v` (else Conflict). Returns
    /// the record as stored: version bumped (1 when created), `created_at` as first stored.
    fn put_conversation(
        &self,
        c: ConversationRecord,
        expected_version: Option<i64>,
    ) -> BoxFuture<'_, Result<ConversationRecord, StoreError>>;
    fn get_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ConversationRecord>, StoreError>>;
    fn delete_conversation(&self, owner: &str, id: &str)
        -> BoxFuture<'_, Result<bool, StoreError>>;

    /// Inserts or replaces a file and its content. Content over the store's `max_file_bytes` is
    /// [`StoreError::TooLarge`]; a file of that id owned by someone else is Conflict.
    fn put_file(&self, meta: FileRecord, content: Bytes) -> BoxFuture<'_, Result<(), StoreError>>;
    fn get_file(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<FileRecord>, StoreError>>;
    fn file_content(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<Bytes>, StoreError>>;
    /// The owner's files, newest first (by `created_at`, then by when they were stored).
    fn list_files(
        &self,
        owner: &str,
        filter: FileFilter,
    ) -> BoxFuture<'_, Result<Vec<FileRecord>, StoreError>>;
    fn delete_file(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// One page of the owner's files: in `page.order` of `created_at`, then of when they were
    /// first stored, those after the file `page.after` names (a file of the owner in this list,
    /// else [`StoreError::UnknownCursor`]), of `page.purpose` when set, at most `page.limit`
    /// (1 to [`MAX_PAGE`]). Read with `LIMIT` in the query, never by loading the whole list.
    fn list_files_page(
        &self,
        owner: &str,
        filter: FileFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, Result<Page<FileRecord>, StoreError>>;
    /// The bytes of content the owner's files hold (uploads and container files alike).
    fn file_usage(&self, owner: &str) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// [`Store::put_file`] within a quota: [`StoreError::OverQuota`] when the owner's files,
    /// this one included (a replaced file counts at its new size), would hold more than `quota`
    /// bytes. Checked and written in one transaction (PostgreSQL: under a lock per owner), so
    /// uploads at once — on any instance of the database — cannot overshoot it together.
    fn put_file_within(
        &self,
        meta: FileRecord,
        content: Bytes,
        quota: u64,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Rate limits and run slots kept in the database and so shared by every instance on it
    /// (PostgreSQL); `None` where each instance's own limits are the limits (SQLite, memory).
    fn shared_limits(&self) -> Option<Arc<dyn SharedLimits>> {
        None
    }
}

/// Which store [`open`] opens.
#[derive(Clone)]
pub struct StoreConfig {
    /// `None` or "sqlite:PATH" (also "sqlite://PATH") → SQLite; "postgres://…" or
    /// "postgresql://…" → PostgreSQL.
    pub url: Option<String>,
    /// The SQLite file when `url` is `None`.
    pub sqlite_path: PathBuf,
    /// The largest file content [`Store::put_file`] accepts.
    pub max_file_bytes: u64,
}

impl std::fmt::Debug for StoreConfig {
    // The URL may carry a password: only its scheme is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = self
            .url
            .as_deref()
            .map(|u| u.split(':').next().unwrap_or_default());
        f.debug_struct("StoreConfig")
            .field("url_scheme", &scheme)
            .field("sqlite_path", &self.sqlite_path)
            .field("max_file_bytes", &self.max_file_bytes)
            .finish()
    }
}

/// Which backend a configuration names, without opening it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite(PathBuf),
    /// The URL as configured.
    Postgres(String),
}

impl StoreConfig {
    /// The backend `url` names: `None` → SQLite at `sqlite_path`; "sqlite:PATH" or
    /// "sqlite://PATH" → SQLite at PATH; "postgres://…"/"postgresql://…" → PostgreSQL.
    pub fn kind(&self) -> Result<StoreKind, StoreError> {
        let Some(url) = self.url.as_deref().map(str::trim) else {
            return Ok(StoreKind::Sqlite(self.sqlite_path.clone()));
        };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreKind::Postgres(url.to_owned()));
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(StoreError::Config("sqlite: needs a path".into()));
            }
            return Ok(StoreKind::Sqlite(PathBuf::from(path)));
        }
        // Never echo the URL: it may carry a password.
        Err(StoreError::Config(
            "expected sqlite:PATH, postgres://… or postgresql://…".into(),
        ))
    }
}

/// Opens the store a configuration names. SQLite: the file and its parent folder are created
/// (owner-only) if missing, WAL, `busy_timeout` 5 s. PostgreSQL: connects, and creates the schema
/// if missing in one transaction under an advisory lock (safe when two instances start at once).
pub async fn open(config: &StoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    match config.kind()? {
        StoreKind::Sqlite(path) => Ok(Arc::new(
            SqliteStore::open(path, config.max_file_bytes).await?,
        )),
        StoreKind::Postgres(url) => Ok(Arc::new(
            PostgresStore::connect(&url, config.max_file_bytes).await?,
        )),
    }
}
