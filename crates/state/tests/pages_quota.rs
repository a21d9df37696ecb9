//! Issue 34: file lists paged in the query (items 7), the per-owner quota on stored files and
//! the space deletes give back (item 11), and the limits instances share through PostgreSQL
//! (item 13). One body per behaviour, run against every backend.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{file, Backend, Kind};
use toolbridge_state::{
    FileFilter, FileRecord, Order, PageRequest, SqliteStore, Store, StoreError,
};

every_backend!(
    thirty_files_are_walked_in_pages_of_five_exactly_once_in_both_orders,
    an_unknown_cursor_is_refused,
    uploads_beyond_the_quota_are_refused_and_fit_again_after_a_delete,
    uploads_at_once_on_two_instances_share_one_quota,
);

fn request(limit: usize, order: Order, after: Option<String>) -> PageRequest {
    PageRequest {
        limit,
        order,
        after,
        purpose: None,
    }
}

/// Every page of `filter` from the first, `limit` at a time: the ids of each page.
async fn walk(
    s: &Arc<dyn Store>,
    filter: &FileFilter,
    limit: usize,
    order: Order,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = s
            .list_files_page("ada", filter.clone(), request(limit, order, after.clone()))
            .await
            .unwrap();
        assert!(page.data.len() <= limit);
        let ids: Vec<String> = page.data.iter().map(|f| f.id.clone()).collect();
        after = ids.last().cloned();
        pages.push(ids);
        if !page.has_more {
            return pages;
        }
        assert!(pages.len() <= 30, "the walk does not end");
    }
}

async fn thirty_files_are_walked_in_pages_of_five_exactly_once_in_both_orders(b: &Backend) {
    let s = &b.store;
    // Three files per second: ties on created_at are ordered by when they were stored. Another
    // owner's files and a container's files are stored among them and must not show.
    let mut oldest_first = Vec::new();
    for i in 0..30 {
        let id = format!("file-{i:02}");
        s.put_file(
            file("ada", &id, 1_000 + i / 3, None),
            Bytes::from_static(b"x"),
        )
        .await
        .unwrap();
        oldest_first.push(id);
        if i % 7 == 0 {
            s.put_file(
                file("bob", &format!("file-bob-{i}"), 1_000 + i / 3, None),
                Bytes::new(),
            )
            .await
            .unwrap();
            s.put_file(
                file(
                    "ada",
                    &format!("file-out-{i}"),
                    1_000 + i / 3,
                    Some("cntr_1"),
                ),
                Bytes::new(),
            )
            .await
            .unwrap();
        }
    }
    let newest_first: Vec<String> = oldest_first.iter().rev().cloned().collect();
    for (order, expected) in [(Order::Desc, &newest_first), (Order::Asc, &oldest_first)] {
        let pages = walk(s, &FileFilter::Uploads, 5, order).await;
        assert_eq!(pages.len(), 6, "{order:?}: {pages:?}");
        assert!(pages.iter().all(|p| p.len() == 5), "{order:?}: {pages:?}");
        assert_eq!(&pages.concat(), expected, "{order:?}");
    }
    // A page as large as the list says nothing follows; the container's files page apart.
    let all = walk(s, &FileFilter::Uploads, 30, Order::Desc).await;
    assert_eq!(all, vec![newest_first.clone()]);
    let container = walk(s, &FileFilter::Container("cntr_1".into()), 2, Order::Asc).await;
    assert_eq!(
        container.concat(),
        [
            "file-out-0",
            "file-out-7",
            "file-out-14",
            "file-out-21",
            "file-out-28"
        ]
    );
    // A purpose filter pages within its purpose.
    let mut batch = file("ada", "file-batch", 2_000, None);
    batch.purpose = "batch".into();
    s.put_file(batch, Bytes::new()).await.unwrap();
    let page = s
        .list_files_page(
            "ada",
            FileFilter::Uploads,
            PageRequest {
                purpose: Some("user_data".into()),
                ..request(3, Order::Desc, None)
            },
        )
        .await
        .unwrap();
    let ids: Vec<&str> = page.data.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        (ids, page.has_more),
        (vec!["file-29", "file-28", "file-27"], true)
    );
}

async fn an_unknown_cursor_is_refused(b: &Backend) {
    let s = &b.store;
    s.put_file(file("ada", "file-a", 1, None), Bytes::new())
        .await
        .unwrap();
    s.put_file(file("bob", "file-b", 1, None), Bytes::new())
        .await
        .unwrap();
    s.put_file(file("ada", "file-c", 1, Some("cntr_1")), Bytes::new())
        .await
        .unwrap();
    // No such file, another owner's file, a file of another list.
    for after in ["file-none", "file-b", "file-c"] {
        let result = s
            .list_files_page(
                "ada",
                FileFilter::Uploads,
                request(5, Order::Desc, Some(after.into())),
            )
            .await;
        assert!(
            matches!(&result, Err(StoreError::UnknownCursor(c)) if c == after),
            "{after}: {result:?}"
        );
    }
    let page = s
        .list_files_page(
            "ada",
            FileFilter::Uploads,
            request(5, Order::Desc, Some("file-a".into())),
        )
        .await
        .unwrap();
    assert!(page.data.is_empty() && !page.has_more);
}

fn sized(owner: &str, id: &str) -> FileRecord {
    file(owner, id, 1, None)
}

async fn uploads_beyond_the_quota_are_refused_and_fit_again_after_a_delete(b: &Backend) {
    let s = &b.store;
    const QUOTA: u64 = 1_000;
    s.put_file_within(sized("ada", "file-1"), Bytes::from(vec![1u8; 600]), QUOTA)
        .await
        .unwrap();
    let refused = s
        .put_file_within(sized("ada", "file-2"), Bytes::from(vec![2u8; 500]), QUOTA)
        .await;
    assert!(
        matches!(
            refused,
            Err(StoreError::OverQuota {
                used: 600,
                wanted: 500,
                quota: QUOTA
            })
        ),
        "{refused:?}"
    );
    assert!(s.get_file("ada", "file-2").await.unwrap().is_none());
    assert_eq!(s.file_usage("ada").await.unwrap(), 600);
    // Another owner has a quota of their own.
    s.put_file_within(sized("bob", "file-3"), Bytes::from(vec![3u8; 900]), QUOTA)
        .await
        .unwrap();
    // A replaced file counts at its new size only.
    s.put_file_within(sized("ada", "file-1"), Bytes::from(vec![1u8; 1_000]), QUOTA)
        .await
        .unwrap();
    assert_eq!(s.file_usage("ada").await.unwrap(), 1_000);
    // Container files count too (put without a quota: they are collected, not uploaded).
    s.put_file(
        file("ada", "file-out", 1, Some("cntr_1")),
        Bytes::from_static(b"x"),
    )
    .await
    .unwrap();
    assert_eq!(s.file_usage("ada").await.unwrap(), 1_001);
    assert!(s.delete_file("ada", "file-1").await.unwrap());
    s.put_file_within(sized("ada", "file-2"), Bytes::from(vec![2u8; 500]), QUOTA)
        .await
        .unwrap();
    assert_eq!(s.file_usage("ada").await.unwrap(), 501);
}

async fn uploads_at_once_on_two_instances_share_one_quota(b: &Backend) {
    let (a, other) = (&b.store, b.another().await);
    let puts = (0..10).map(|i| {
        let store = if i % 2 == 0 {
            Arc::clone(a)
        } else {
            Arc::clone(&other)
        };
        async move {
            store
                .put_file_within(
                    sized("ada", &format!("file-{i}")),
                    Bytes::from(vec![0u8; 300]),
                    1_000,
                )
                .await
        }
    });
    let results = futures::future::join_all(puts).await;
    let stored = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(stored, 3, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(StoreError::OverQuota { .. }))));
    assert_eq!(other.file_usage("ada").await.unwrap(), 900);
}

/// Item 11's figures: what the SQLite file weighs with 40 MiB of uploads, and after they are
/// deleted. Before the fix the file kept its size (SQLite only reuses freed pages).
#[tokio::test]
async fn sqlite_gives_deleted_uploads_space_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = SqliteStore::open(path.clone(), 8 << 20).await.unwrap();
    let size = || {
        let wal = dir.path().join("state.sqlite3-wal");
        let main = std::fs::metadata(&path).unwrap().len();
        (main, std::fs::metadata(wal).map_or(0, |m| m.len()))
    };
    let empty = size();
    for i in 0..10 {
        store
            .put_file(
                sized("ada", &format!("file-{i}")),
                Bytes::from(vec![i as u8; 4 << 20]),
            )
            .await
            .unwrap();
    }
    // A checkpoint moves the uploads from the WAL into the main file, as SQLite's own
    // automatic checkpoints do.
    store.integrity_check().await.unwrap();
    let full = size();
    for i in 0..10 {
        assert!(store
            .delete_file("ada", &format!("file-{i}"))
            .await
            .unwrap());
    }
    let after = size();
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        let mode: i64 = c.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap();
        let free: i64 = c
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            (mode, free),
            (2, 0),
            "incremental auto-vacuum, no free page left"
        );
    }
    eprintln!(
        "sqlite (main, wal) bytes: empty {empty:?}, 40 MiB stored {full:?}, all deleted {after:?}"
    );
    assert!(full.0 + full.1 > 40 << 20, "{full:?}");
    assert!(after.0 < 1 << 20, "the main file kept its size: {after:?}");
    assert!(after.0 + after.1 < 70 << 20, "{after:?}");
}

#[tokio::test]
async fn postgres_rate_limits_and_run_slots_are_shared_by_two_instances() {
    let backend = Backend::open(Kind::Postgres).await;
    let other = backend.another().await;
    let (a, b) = (
        backend
            .store
            .shared_limits()
            .expect("PostgreSQL shares limits"),
        other.shared_limits().unwrap(),
    );
    // One request a minute with bursts of 3: three in all, taken alternately on the two.
    let mut taken = 0;
    let mut waits = Vec::new();
    for i in 0..8 {
        let limits = if i % 2 == 0 { &a } else { &b };
        match limits.take_request("key-1", 1, 3).await.unwrap() {
            Ok(()) => taken += 1,
            Err(wait) => waits.push(wait),
        }
    }
    assert_eq!(taken, 3, "{waits:?}");
    assert!(
        waits
            .iter()
            .all(|w| *w > Duration::from_secs(50) && *w <= Duration::from_secs(60)),
        "{waits:?}"
    );
    assert_eq!(
        b.take_request("key-2", 1, 3).await.unwrap(),
        Ok(()),
        "per key"
    );

    // Two run slots for ada across both instances.
    let lease = Duration::from_secs(90);
    let first = a.acquire_slot("ada", 2, "a", lease).await.unwrap().unwrap();
    let second = b.acquire_slot("ada", 2, "b", lease).await.unwrap();
    assert!(second.is_some());
    assert_eq!(a.acquire_slot("ada", 2, "a", lease).await.unwrap(), None);
    assert!(
        b.acquire_slot("bob", 2, "b", lease)
            .await
            .unwrap()
            .is_some(),
        "per user"
    );
    b.release_slot(&first).await.unwrap();
    let third = b.acquire_slot("ada", 2, "b", lease).await.unwrap().unwrap();
    // A slot whose lease ran out (its instance died) is freed for the next.
    a.renew_slots(std::slice::from_ref(&third), Duration::ZERO)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(a
        .acquire_slot("ada", 2, "a", lease)
        .await
        .unwrap()
        .is_some());
    assert_eq!(a.acquire_slot("ada", 2, "a", lease).await.unwrap(), None);
    drop((a, b, other));
    backend.finish().await;
}

#[tokio::test]
async fn sqlite_and_memory_keep_their_limits_in_process() {
    for kind in [Kind::Memory, Kind::Sqlite] {
        let backend = Backend::open(kind).await;
        assert!(backend.store.shared_limits().is_none(), "{kind:?}");
        backend.finish().await;
    }
}
