//! The PostgreSQL store's file pages and quota.
//!
//! Space: a deleted file's rows (its content in TOAST) become dead tuples that PostgreSQL's
//! autovacuum makes reusable for later writes; the files on disk do not shrink unless an
//! operator runs `VACUUM FULL` (which locks the tables) or a tool such as pg_repack.

use bytes::Bytes;
use futures::future::BoxFuture;

use super::pool::{Conn, Pg};
use super::{file_row, PostgresStore};
use crate::codec::{file_length, stored_length, FILE_COLUMNS};
use crate::{FileFilter, FileRecord, Order, Page, PageRequest, StoreError};

/// The class of the advisory locks that serialize one owner's quota checks (with the owner's
/// hash as the second key): two uploads at once, on any instances, are summed one after the
/// other.
const QUOTA_LOCK: i32 = 0x7462_7175; // "tbqu"

/// The list condition of a filter: `$2` the filter's kind, `$3` the container's name (one
/// statement for every filter, so each is prepared once per connection).
const CONDITION: &str = "CASE $2::text
        WHEN 'uploads' THEN container IS NULL
        WHEN 'container' THEN container = $3::text
        ELSE TRUE END";

fn filter_params(filter: &FileFilter) -> (&'static str, Option<&str>) {
    match filter {
        FileFilter::Uploads => ("uploads", None),
        FileFilter::Container(name) => ("container", Some(name)),
        FileFilter::All => ("all", None),
    }
}

pub(super) async fn usage(conn: &mut Conn, owner: &str) -> Pg<u64> {
    let total: i64 = conn
        .query_one(
            "SELECT COALESCE(SUM(bytes), 0)::bigint FROM toolbridge_files WHERE owner = $1",
            &[&owner],
        )
        .await?
        .try_get(0)?;
    Ok(stored_length(total)?)
}

pub(super) async fn list_page(
    conn: &mut Conn,
    owner: &str,
    filter: &FileFilter,
    page: &PageRequest,
) -> Pg<Page<FileRecord>> {
    let (kind, container) = filter_params(filter);
    let cursor: Option<(i64, i64)> = match &page.after {
        None => None,
        Some(after) => {
            let row = conn
                .query_opt(
                    &format!(
                        "SELECT created_at, seq FROM toolbridge_files
                         WHERE owner = $1 AND id = $4 AND {CONDITION}"
                    ),
                    &[&owner, &kind, &container, after],
                )
                .await?
                .ok_or_else(|| StoreError::UnknownCursor(after.clone()))?;
            Some((row.try_get(0)?, row.try_get(1)?))
        }
    };
    let (direction, beyond) = match page.order {
        Order::Asc => ("ASC", ">"),
        Order::Desc => ("DESC", "<"),
    };
    let limit = page.clamped_limit();
    let (cursor_at, cursor_seq) = cursor.unzip();
    let rows = conn
        .query(
            &format!(
                "SELECT {FILE_COLUMNS} FROM toolbridge_files
                 WHERE owner = $1 AND {CONDITION}
                   AND ($4::text IS NULL OR purpose = $4)
                   AND ($5::bigint IS NULL OR (created_at, seq) {beyond} ($5, $6::bigint))
                 ORDER BY created_at {direction}, seq {direction}
                 LIMIT $7"
            ),
            &[
                &owner,
                &kind,
                &container,
                &page.purpose,
                &cursor_at,
                &cursor_seq,
                &i64::try_from(limit + 1).unwrap_or(i64::MAX),
            ],
        )
        .await?;
    let rows = rows.iter().map(file_row).collect::<Pg<Vec<_>>>()?;
    Ok(Page::from_rows(rows, limit))
}

impl PostgresStore {
    /// Stores a file and its content in one transaction, within `quota` bytes of the owner's
    /// files when one is given (the sum taken under the owner's advisory lock).
    pub(super) fn put_file_quota(
        &self,
        meta: FileRecord,
        content: Bytes,
        quota: Option<u64>,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let max = self.max_file_bytes;
        self.with(move |conn| {
            Box::pin(async move {
                let len = file_length(&meta, content.len(), max)?;
                let lock = conn
                    .prepare("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                    .await?;
                let used_by_others = conn
                    .prepare(
                        "SELECT COALESCE(SUM(bytes), 0)::bigint FROM toolbridge_files
                         WHERE owner = $1 AND id <> $2",
                    )
                    .await?;
                let put_meta = conn
                    .prepare(
                        "INSERT INTO toolbridge_files (id, owner, filename, purpose, bytes,
                             created_at, expires_at, media_type, container)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                         ON CONFLICT (id) DO UPDATE SET filename = EXCLUDED.filename,
                             purpose = EXCLUDED.purpose, bytes = EXCLUDED.bytes,
                             created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
                             media_type = EXCLUDED.media_type, container = EXCLUDED.container
                         WHERE toolbridge_files.owner = EXCLUDED.owner",
                    )
                    .await?;
                let put_content = conn
                    .prepare(
                        "INSERT INTO toolbridge_file_contents (id, content) VALUES ($1, $2)
                         ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content",
                    )
                    .await?;
                let tx = conn.client.transaction().await?;
                if let Some(quota) = quota {
                    tx.execute(&lock, &[&QUOTA_LOCK, &meta.owner]).await?;
                    let used: i64 = tx
                        .query_one(&used_by_others, &[&meta.owner, &meta.id])
                        .await?
                        .try_get(0)?;
                    crate::limits::within_quota(stored_length(used)?, content.len(), quota)?;
                }
                let changed = tx
                    .execute(
                        &put_meta,
                        &[
                            &meta.id,
                            &meta.owner,
                            &meta.filename,
                            &meta.purpose,
                            &len,
                            &meta.created_at,
                            &meta.expires_at,
                            &meta.media_type,
                            &meta.container,
                        ],
                    )
                    .await?;
                if changed == 0 {
                    // Dropping the transaction rolls it back.
                    return Err(StoreError::Conflict(format!("file {}", meta.id)).into());
                }
                tx.execute(&put_content, &[&meta.id, &content.as_ref()])
                    .await?;
                tx.commit().await?;
                Ok(())
            })
        })
    }
}
