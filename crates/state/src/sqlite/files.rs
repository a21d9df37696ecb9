//! The SQLite store's file pages, quota and space reclaiming.
//!
//! File contents are blobs in the database, so a deleted upload's pages would otherwise stay in
//! the file for ever (SQLite only reuses them). A database made by this version has
//! `auto_vacuum = INCREMENTAL`, and every delete of files ends with `incremental_vacuum` and a
//! checkpoint, which give the freed pages back to the file system. A database made before keeps
//! its mode (SQLite can change it only with a full `VACUUM`, which an operator runs once while
//! the gateway is stopped: `PRAGMA auto_vacuum = INCREMENTAL; VACUUM;`).

use bytes::Bytes;
use futures::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension};

use super::{file_record, file_row, immediate, Sql, SqliteStore};
use crate::codec::{file_length, stored_length, FILE_COLUMNS};
use crate::{FileFilter, FileRecord, Order, Page, PageRequest, StoreError};

/// The WAL file is cut back to this after a checkpoint (a large upload passes through it).
const WAL_LIMIT_BYTES: i64 = 64 << 20;

/// Sets what makes deleted files' space reclaimable: incremental auto-vacuum (taken only by a
/// database without tables yet: a new file) and a bound on the WAL file kept after checkpoints.
pub(super) fn reclaimable(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_size_limit = {WAL_LIMIT_BYTES};"
    ))
}

/// Gives the pages freed by deletes back to the file system: `incremental_vacuum` moves them to
/// the end and cuts the file there at the next checkpoint, taken now (passive: it never waits
/// for another instance's readers; a later checkpoint finishes the job). Failures only cost
/// space, so they are logged, not returned: the delete itself has committed.
pub(super) fn reclaim(c: &Connection) {
    let result = incremental_vacuum(c)
        .and_then(|()| c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())));
    if let Err(e) = result {
        tracing::warn!(error = %e, "state database: reclaiming deleted files' space failed");
    }
}

/// `PRAGMA incremental_vacuum` frees one page per step of its statement: stepped to the end.
fn incremental_vacuum(c: &Connection) -> rusqlite::Result<()> {
    let mut statement = c.prepare_cached("PRAGMA incremental_vacuum")?;
    let mut steps = statement.query([])?;
    while steps.next()?.is_some() {}
    Ok(())
}

/// The bytes the owner's files hold, the file `except` left out (the one being replaced).
pub(super) fn usage(c: &Connection, owner: &str, except: Option<&str>) -> Sql<u64> {
    let total: i64 = c
        .prepare_cached(
            "SELECT COALESCE(SUM(bytes), 0) FROM toolbridge_files
             WHERE owner = ?1 AND (?2 IS NULL OR id <> ?2)",
        )?
        .query_row(params![owner, except], |r| r.get(0))?;
    Ok(stored_length(total)?)
}

/// The list condition of a filter, with `?2` as the container's name.
fn condition(filter: &FileFilter) -> (&'static str, Option<&str>) {
    match filter {
        FileFilter::Uploads => ("container IS NULL", None),
        FileFilter::Container(name) => ("container = ?2", Some(name)),
        FileFilter::All => ("(?2 IS NULL)", None),
    }
}

pub(super) fn list_page(
    c: &Connection,
    owner: &str,
    filter: &FileFilter,
    page: &PageRequest,
) -> Sql<Page<FileRecord>> {
    let (condition, container) = condition(filter);
    // The cursor's place in the order: (created_at, seq) of a file of this owner and list.
    let cursor: Option<(i64, i64)> = match &page.after {
        None => None,
        Some(after) => {
            let found = c
                .prepare_cached(&format!(
                    "SELECT created_at, seq FROM toolbridge_files
                     WHERE owner = ?1 AND id = ?3 AND {condition}"
                ))?
                .query_row(params![owner, container, after], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            Some(found.ok_or_else(|| StoreError::UnknownCursor(after.clone()))?)
        }
    };
    let (direction, beyond) = match page.order {
        Order::Asc => ("ASC", ">"),
        Order::Desc => ("DESC", "<"),
    };
    let limit = page.clamped_limit();
    let (cursor_at, cursor_seq) = cursor.unzip();
    let rows = c
        .prepare_cached(&format!(
            "SELECT {FILE_COLUMNS} FROM toolbridge_files
             WHERE owner = ?1 AND {condition}
               AND (?3 IS NULL OR purpose = ?3)
               AND (?4 IS NULL OR (created_at, seq) {beyond} (?4, ?5))
             ORDER BY created_at {direction}, seq {direction}
             LIMIT ?6"
        ))?
        .query_map(
            params![
                owner,
                container,
                page.purpose,
                cursor_at,
                cursor_seq,
                i64::try_from(limit + 1).unwrap_or(i64::MAX)
            ],
            file_row,
        )?
        .map(|row| Ok(file_record(row?)?))
        .collect::<Sql<Vec<_>>>()?;
    Ok(Page::from_rows(rows, limit))
}

impl SqliteStore {
    /// Stores a file and its content in one transaction, within `quota` bytes of the owner's
    /// files when one is given (IMMEDIATE: the sum and the write see no other writer between).
    pub(super) fn put_file_quota(
        &self,
        meta: FileRecord,
        content: Bytes,
        quota: Option<u64>,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let max = self.max_file_bytes;
        self.run(move |c| {
            let len = file_length(&meta, content.len(), max)?;
            let tx = immediate(c)?;
            if let Some(quota) = quota {
                let used = usage(&tx, &meta.owner, Some(&meta.id))?;
                crate::limits::within_quota(used, content.len(), quota)?;
            }
            let changed = tx
                .prepare_cached(
                    "INSERT INTO toolbridge_files (id, owner, filename, purpose, bytes, created_at,
                     expires_at, media_type, container)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (id) DO UPDATE SET filename = excluded.filename,
                     purpose = excluded.purpose, bytes = excluded.bytes,
                     created_at = excluded.created_at, expires_at = excluded.expires_at,
                     media_type = excluded.media_type, container = excluded.container
                 WHERE toolbridge_files.owner = excluded.owner",
                )?
                .execute(params![
                    meta.id,
                    meta.owner,
                    meta.filename,
                    meta.purpose,
                    len,
                    meta.created_at,
                    meta.expires_at,
                    meta.media_type,
                    meta.container
                ])?;
            if changed == 0 {
                return Err(StoreError::Conflict(format!("file {}", meta.id)).into());
            }
            tx.prepare_cached(
                "INSERT INTO toolbridge_file_contents (id, content) VALUES (?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET content = excluded.content",
            )?
            .execute(params![meta.id, content.as_ref()])?;
            tx.commit()?;
            Ok(())
        })
    }
}
