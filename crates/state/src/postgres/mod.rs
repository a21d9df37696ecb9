//! The PostgreSQL store, for several gateway instances sharing one database.
//!
//! Selected by a `postgres://` or `postgresql://` URL. JSON columns are `text`, not `jsonb`: jsonb
//! reorders object keys and refuses `\u0000` in strings, while the store must give back the body
//! exactly as stored and never queries inside it; text also spares the server a parse on every
//! write. File content is `bytea`.
//!
//! Connections: a small pool (`pool.rs`). Connecting gives up after 10 s unless the URL sets
//! `connect_timeout`. TLS is not supported yet: use a local socket, a private network or a
//! tunnel (`sslmode=disable`).
//!
//! A deployment may keep the tables in a schema of its own with the URL's `options`, e.g.
//! `postgres://…/db?options=-csearch_path%3Dtoolbridge` (the tests do this).

mod files;
mod limits;
mod pool;

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio_postgres::{Client, Config, Row};

pub use pool::POOL_SIZE;
use pool::{connect, Conn, Fail, Pg, Pool};

use crate::codec::{
    self, encode_conversation, failed_body, stored_length, StoredConversation, StoredResponse,
    CONVERSATION_COLUMNS, FAILED, FILE_COLUMNS, RESPONSE_COLUMNS,
};
use crate::{
    ConversationRecord, FileFilter, FileRecord, Page, PageRequest, ResponseRecord, Store,
    StoreError, Unix,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS toolbridge_responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    expires_at BIGINT,
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
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    metadata TEXT NOT NULL,
    items TEXT NOT NULL,
    context TEXT NOT NULL,
    version BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS toolbridge_files (
    seq BIGSERIAL,
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    media_type TEXT NOT NULL,
    container TEXT
);
CREATE INDEX IF NOT EXISTS toolbridge_files_owner ON toolbridge_files (owner, created_at);
CREATE INDEX IF NOT EXISTS toolbridge_files_expiry
    ON toolbridge_files (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS toolbridge_file_contents (
    id TEXT PRIMARY KEY,
    content BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS toolbridge_answered_approvals (
    owner TEXT NOT NULL,
    response_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    answered_at BIGINT NOT NULL,
    PRIMARY KEY (owner, response_id, request_id)
);
";

/// An arbitrary constant for the schema's advisory lock ("tbstate").
const SCHEMA_LOCK: i64 = 0x0074_6273_7461_7465;

/// A PostgreSQL database of responses, conversations and files. Clones share one pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Arc<Pool>,
    max_file_bytes: u64,
}

impl PostgresStore {
    /// Connects to `url` and creates the tables if missing: in one transaction under an advisory
    /// lock, so instances starting together do not race (concurrent `CREATE … IF NOT EXISTS` can
    /// otherwise fail on PostgreSQL's catalog).
    pub async fn connect(url: &str, max_file_bytes: u64) -> Result<Self, StoreError> {
        // The parser's errors name the option, never its value (the URL may carry a password).
        let mut config: Config = url
            .parse()
            .map_err(|e| StoreError::Config(format!("not a PostgreSQL URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            // A server that does not answer must not hold a request for the OS's TCP timeout.
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        let mut first = connect(&config).await?;
        create_schema(&mut first).await.map_err(|Fail(e)| e)?;
        Ok(PostgresStore {
            pool: Arc::new(Pool::new(config, first).await),
            max_file_bytes,
        })
    }

    /// Runs `f` with a client of the pool.
    fn with<T, F>(&self, f: F) -> BoxFuture<'_, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Conn) -> BoxFuture<'c, Pg<T>> + Send + 'static,
    {
        self.pool.with(f)
    }
}

async fn create_schema(client: &mut Client) -> Pg<()> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await?;
    tx.batch_execute(SCHEMA).await?;
    tx.batch_execute(limits::SCHEMA).await?;
    tx.commit().await?;
    Ok(())
}

fn response_row(r: &Row) -> Pg<ResponseRecord> {
    Ok(StoredResponse {
        id: r.try_get(0)?,
        owner: r.try_get(1)?,
        status: r.try_get(2)?,
        created_at: r.try_get(3)?,
        updated_at: r.try_get(4)?,
        expires_at: r.try_get(5)?,
        instance: r.try_get(6)?,
        previous_response_id: r.try_get(7)?,
        conversation_id: r.try_get(8)?,
        body: r.try_get(9)?,
        input_items: r.try_get(10)?,
        context: r.try_get(11)?,
        run: r.try_get(12)?,
    }
    .decode()?)
}

fn conversation_row(r: &Row) -> Pg<ConversationRecord> {
    Ok(StoredConversation {
        id: r.try_get(0)?,
        owner: r.try_get(1)?,
        created_at: r.try_get(2)?,
        updated_at: r.try_get(3)?,
        metadata: r.try_get(4)?,
        items: r.try_get(5)?,
        context: r.try_get(6)?,
        version: r.try_get(7)?,
    }
    .decode()?)
}

fn file_row(r: &Row) -> Pg<FileRecord> {
    Ok(FileRecord {
        id: r.try_get(0)?,
        owner: r.try_get(1)?,
        filename: r.try_get(2)?,
        purpose: r.try_get(3)?,
        bytes: stored_length(r.try_get(4)?)?,
        created_at: r.try_get(5)?,
        expires_at: r.try_get(6)?,
        media_type: r.try_get(7)?,
        container: r.try_get(8)?,
    })
}

impl Store for PostgresStore {
    fn put_response(&self, r: &ResponseRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        let s = match StoredResponse::encode(r) {
            Ok(s) => s,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        self.with(move |conn| {
            Box::pin(async move {
                // The owner condition makes a put over another owner's id change nothing.
                let changed = conn
                    .execute(
                        "INSERT INTO toolbridge_responses (id, owner, status, created_at,
                             updated_at, expires_at, instance, previous_response_id,
                             conversation_id, body, input_items, context, run)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                         ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status,
                             created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
                             expires_at = EXCLUDED.expires_at, instance = EXCLUDED.instance,
                             previous_response_id = EXCLUDED.previous_response_id,
                             conversation_id = EXCLUDED.conversation_id, body = EXCLUDED.body,
                             input_items = EXCLUDED.input_items, context = EXCLUDED.context,
                             run = EXCLUDED.run
                         WHERE toolbridge_responses.owner = EXCLUDED.owner",
                        &[
                            &s.id,
                            &s.owner,
                            &s.status,
                            &s.created_at,
                            &s.updated_at,
                            &s.expires_at,
                            &s.instance,
                            &s.previous_response_id,
                            &s.conversation_id,
                            &s.body,
                            &s.input_items,
                            &s.context,
                            &s.run,
                        ],
                    )
                    .await?;
                if changed == 0 {
                    return Err(StoreError::Conflict(format!("response {}", s.id)).into());
                }
                Ok(())
            })
        })
    }

    fn get_response(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ResponseRecord>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                let row = conn
                    .query_opt(
                        &format!(
                            "SELECT {RESPONSE_COLUMNS} FROM toolbridge_responses
                             WHERE id = $1 AND owner = $2"
                        ),
                        &[&id, &owner],
                    )
                    .await?;
                row.as_ref().map(response_row).transpose()
            })
        })
    }

    fn delete_response(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                // One statement, so a response's answered approvals go exactly when it does.
                let deleted: i64 = conn
                    .query_one(
                        "WITH gone AS (
                             DELETE FROM toolbridge_responses WHERE id = $1 AND owner = $2
                             RETURNING id
                         ), answers AS (
                             DELETE FROM toolbridge_answered_approvals
                             WHERE response_id = $1 AND owner = $2
                         )
                         SELECT count(*) FROM gone",
                        &[&id, &owner],
                    )
                    .await?
                    .try_get(0)?;
                Ok(deleted > 0)
            })
        })
    }

    fn heartbeat(
        &self,
        instance: &str,
        ids: &[String],
        now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let (instance, ids) = (instance.to_owned(), ids.to_vec());
        self.with(move |conn| {
            Box::pin(async move {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                conn.execute(
                    "UPDATE toolbridge_responses SET updated_at = $1
                         WHERE id = ANY($2) AND instance = $3
                           AND status IN ('queued', 'in_progress')",
                    &[&now, &ids, &instance],
                )
                .await?;
                let rows = conn
                    .query(
                        "SELECT id FROM toolbridge_responses
                         WHERE id = ANY($1)
                           AND NOT (instance = $2 AND status IN ('queued', 'in_progress'))",
                        &[&ids, &instance],
                    )
                    .await?;
                Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
            })
        })
    }

    fn recover(
        &self,
        instance: &str,
        stale_before: Unix,
        message: &str,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        let (instance, message) = (instance.to_owned(), message.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                // FOR UPDATE: a run that finishes (or an instance that recovers) meanwhile waits,
                // and a row already settled by then is not matched again. Locked in id order so
                // that two instances recovering at once cannot deadlock.
                let select = conn
                    .prepare(
                        "SELECT id, body FROM toolbridge_responses
                         WHERE status IN ('queued', 'in_progress')
                           AND (instance = $1 OR updated_at < $2)
                         ORDER BY id FOR UPDATE",
                    )
                    .await?;
                let fail = conn
                    .prepare("UPDATE toolbridge_responses SET status = $1, body = $2 WHERE id = $3")
                    .await?;
                let tx = conn.client.transaction().await?;
                let dead = tx.query(&select, &[&instance, &stale_before]).await?;
                for row in &dead {
                    let id: String = row.try_get(0)?;
                    let body: String = row.try_get(1)?;
                    let body = failed_body(codec::decode(&body, "response body")?, &message);
                    let [body] = codec::encode_all([&body], &format!("response {id}"))?;
                    tx.execute(&fail, &[&FAILED, &body, &id]).await?;
                }
                tx.commit().await?;
                Ok(dead.len() as u64)
            })
        })
    }

    fn expire(&self, now: Unix) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.with(move |conn| {
            Box::pin(async move {
                // One statement, so a file's content goes exactly when its row does.
                let files: i64 = conn
                    .query_one(
                        "WITH gone AS (
                             DELETE FROM toolbridge_files WHERE expires_at < $1 RETURNING id
                         ), contents AS (
                             DELETE FROM toolbridge_file_contents
                             WHERE id IN (SELECT id FROM gone)
                         )
                         SELECT count(*) FROM gone",
                        &[&now],
                    )
                    .await?
                    .try_get(0)?;
                let responses = conn
                    .execute(
                        "DELETE FROM toolbridge_responses WHERE expires_at < $1",
                        &[&now],
                    )
                    .await?;
                conn.execute(
                    "DELETE FROM toolbridge_answered_approvals a
                     WHERE NOT EXISTS (SELECT 1 FROM toolbridge_responses r
                                       WHERE r.id = a.response_id)",
                    &[],
                )
                .await?;
                Ok(u64::try_from(files).unwrap_or(0) + responses)
            })
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
        self.with(move |conn| {
            Box::pin(async move {
                // A concurrent claim of the same row waits on its key until this transaction
                // ends, then inserts nothing (ON CONFLICT DO NOTHING).
                let claim = conn
                    .prepare(
                        "INSERT INTO toolbridge_answered_approvals
                             (owner, response_id, request_id, answered_at)
                         SELECT $1, $2, request_id, $4 FROM unnest($3::text[]) AS request_id
                         ON CONFLICT DO NOTHING
                         RETURNING request_id",
                    )
                    .await?;
                let tx = conn.client.transaction().await?;
                let claimed: Vec<String> = tx
                    .query(&claim, &[&owner, &response_id, &ids, &now])
                    .await?
                    .iter()
                    .map(|row| row.try_get(0))
                    .collect::<Result<_, _>>()?;
                let answered_before: Vec<String> =
                    ids.into_iter().filter(|id| !claimed.contains(id)).collect();
                // All or none: dropping the transaction rolls the new rows back.
                if answered_before.is_empty() {
                    tx.commit().await?;
                }
                Ok(answered_before)
            })
        })
    }

    fn put_conversation(
        &self,
        conv: ConversationRecord,
        expected_version: Option<i64>,
    ) -> BoxFuture<'_, Result<ConversationRecord, StoreError>> {
        self.with(move |conn| {
            Box::pin(async move {
                let [metadata, items, context] = encode_conversation(&conv)?;
                let row = match expected_version {
                    None => {
                        conn.query_opt(
                            "INSERT INTO toolbridge_conversations (id, owner, created_at,
                                     updated_at, metadata, items, context, version)
                                 VALUES ($1, $2, $3, $4, $5, $6, $7, 1)
                                 ON CONFLICT (id) DO NOTHING
                                 RETURNING created_at, version",
                            &[
                                &conv.id,
                                &conv.owner,
                                &conv.created_at,
                                &conv.updated_at,
                                &metadata,
                                &items,
                                &context,
                            ],
                        )
                        .await?
                    }
                    // The row lock makes a second writer with the same version wait, then
                    // re-check the version and match nothing.
                    Some(version) => {
                        conn.query_opt(
                            "UPDATE toolbridge_conversations
                                 SET updated_at = $1, metadata = $2, items = $3, context = $4,
                                     version = version + 1
                                 WHERE id = $5 AND owner = $6 AND version = $7
                                 RETURNING created_at, version",
                            &[
                                &conv.updated_at,
                                &metadata,
                                &items,
                                &context,
                                &conv.id,
                                &conv.owner,
                                &version,
                            ],
                        )
                        .await?
                    }
                };
                let Some(row) = row else {
                    return Err(StoreError::Conflict(format!("conversation {}", conv.id)).into());
                };
                Ok(ConversationRecord {
                    created_at: row.try_get(0)?,
                    version: row.try_get(1)?,
                    ..conv
                })
            })
        })
    }

    fn get_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ConversationRecord>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                let row = conn
                    .query_opt(
                        &format!(
                            "SELECT {CONVERSATION_COLUMNS} FROM toolbridge_conversations
                             WHERE id = $1 AND owner = $2"
                        ),
                        &[&id, &owner],
                    )
                    .await?;
                row.as_ref().map(conversation_row).transpose()
            })
        })
    }

    fn delete_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                Ok(conn
                    .execute(
                        "DELETE FROM toolbridge_conversations WHERE id = $1 AND owner = $2",
                        &[&id, &owner],
                    )
                    .await?
                    > 0)
            })
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
        self.with(move |conn| {
            Box::pin(async move {
                let row = conn
                    .query_opt(
                        &format!(
                            "SELECT {FILE_COLUMNS} FROM toolbridge_files
                             WHERE id = $1 AND owner = $2"
                        ),
                        &[&id, &owner],
                    )
                    .await?;
                row.as_ref().map(file_row).transpose()
            })
        })
    }

    fn file_content(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<Bytes>, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                let row = conn
                    .query_opt(
                        "SELECT c.content FROM toolbridge_file_contents c
                         JOIN toolbridge_files f ON f.id = c.id
                         WHERE f.id = $1 AND f.owner = $2",
                        &[&id, &owner],
                    )
                    .await?;
                Ok(row
                    .map(|r| r.try_get::<_, Vec<u8>>(0))
                    .transpose()?
                    .map(Bytes::from))
            })
        })
    }

    fn list_files(
        &self,
        owner: &str,
        filter: FileFilter,
    ) -> BoxFuture<'_, Result<Vec<FileRecord>, StoreError>> {
        let owner = owner.to_owned();
        self.with(move |conn| {
            Box::pin(async move {
                let select = |condition: &str| {
                    format!(
                        "SELECT {FILE_COLUMNS} FROM toolbridge_files
                         WHERE owner = $1 AND {condition}
                         ORDER BY created_at DESC, seq DESC"
                    )
                };
                let rows = match &filter {
                    FileFilter::Uploads => {
                        conn.query(&select("container IS NULL"), &[&owner]).await?
                    }
                    FileFilter::Container(name) => {
                        conn.query(&select("container = $2"), &[&owner, name])
                            .await?
                    }
                    FileFilter::All => conn.query(&select("TRUE"), &[&owner]).await?,
                };
                rows.iter().map(file_row).collect()
            })
        })
    }

    fn delete_file(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.with(move |conn| {
            Box::pin(async move {
                let deleted: i64 = conn
                    .query_one(
                        "WITH gone AS (
                             DELETE FROM toolbridge_files WHERE id = $1 AND owner = $2
                             RETURNING id
                         ), contents AS (
                             DELETE FROM toolbridge_file_contents
                             WHERE id IN (SELECT id FROM gone)
                         )
                         SELECT count(*) FROM gone",
                        &[&id, &owner],
                    )
                    .await?
                    .try_get(0)?;
                Ok(deleted > 0)
            })
        })
    }

    fn list_files_page(
        &self,
        owner: &str,
        filter: FileFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, Result<Page<FileRecord>, StoreError>> {
        let owner = owner.to_owned();
        self.with(move |conn| {
            Box::pin(async move { files::list_page(conn, &owner, &filter, &page).await })
        })
    }

    fn file_usage(&self, owner: &str) -> BoxFuture<'_, Result<u64, StoreError>> {
        let owner = owner.to_owned();
        self.with(move |conn| Box::pin(async move { files::usage(conn, &owner).await }))
    }

    fn put_file_within(
        &self,
        meta: FileRecord,
        content: Bytes,
        quota: u64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.put_file_quota(meta, content, Some(quota))
    }

    fn shared_limits(&self) -> Option<Arc<dyn crate::SharedLimits>> {
        Some(Arc::new(self.clone()))
    }
}
