//! Which store a configuration opens, and how the SQLite file is made.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use serde_json::json;
use toolbridge_state::{open, ResponseRecord, StoreConfig, StoreError, StoreKind};

fn config(url: Option<&str>) -> StoreConfig {
    StoreConfig {
        url: url.map(str::to_owned),
        sqlite_path: PathBuf::from("/default/state.sqlite3"),
        max_file_bytes: 1024,
    }
}

fn record(id: &str) -> ResponseRecord {
    ResponseRecord {
        id: id.into(),
        owner: "ada".into(),
        status: "completed".into(),
        created_at: 1,
        updated_at: 1,
        expires_at: None,
        instance: "i1".into(),
        previous_response_id: None,
        conversation_id: None,
        body: json!({"id": id}),
        input_items: json!([]),
        context: serde_json::Value::Null,
        run: None,
    }
}

#[test]
fn urls_name_their_backend() {
    let kind = |url| config(url).kind().unwrap();
    assert_eq!(
        kind(None),
        StoreKind::Sqlite("/default/state.sqlite3".into())
    );
    assert_eq!(
        kind(Some("sqlite:/var/lib/tb/state.db")),
        StoreKind::Sqlite("/var/lib/tb/state.db".into())
    );
    assert_eq!(
        kind(Some("sqlite:///var/lib/tb/state.db")),
        StoreKind::Sqlite("/var/lib/tb/state.db".into())
    );
    assert_eq!(
        kind(Some("sqlite:relative.db")),
        StoreKind::Sqlite("relative.db".into())
    );
    for url in ["postgres://u@h/db", "postgresql://u@h/db"] {
        assert_eq!(kind(Some(url)), StoreKind::Postgres(url.into()));
    }
}

#[tokio::test]
async fn bad_urls_are_config_errors_that_do_not_repeat_the_url() {
    for url in [
        "mysql://u:hunter2@h/db",
        "sqlite:",
        "sqlite://",
        "hunter2",
        "postgres://u:hunter2@127.0.0.1:notaport/db",
    ] {
        let Err(e) = open(&config(Some(url))).await else {
            panic!("{url} opened");
        };
        assert!(matches!(e, StoreError::Config(_)), "{url}: {e:?}");
        assert!(!e.to_string().contains("hunter2"), "{url}: {e}");
    }
    let debug = format!("{:?}", config(Some("postgres://u:hunter2@h/db")));
    assert!(!debug.contains("hunter2"), "{debug}");
}

#[tokio::test]
async fn no_postgres_server_is_a_database_error() {
    // Port 1 on loopback: nothing listens there.
    let e = open(&config(Some(
        "postgres://u@127.0.0.1:1/db?connect_timeout=5",
    )))
    .await
    .err()
    .unwrap();
    assert!(matches!(e, StoreError::Database(_)), "{e:?}");
}

#[tokio::test]
async fn the_default_sqlite_file_and_its_folders_are_created_owner_only_in_wal_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/toolbridge/state.sqlite3");
    let mut cfg = config(None);
    cfg.sqlite_path = path.clone();
    let store = open(&cfg).await.unwrap();
    store.put_response(&record("resp_1")).await.unwrap();

    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("data")), 0o700);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(&path), 0o600);
    // SQLite gives its -wal and -shm files (there while the store is open) the file's mode.
    for file in ["state.sqlite3-wal", "state.sqlite3-shm"] {
        let file = path.with_file_name(file);
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    // Bytes 18 and 19 of a SQLite header are 2 in WAL mode.
    let header = std::fs::read(&path).unwrap();
    assert_eq!((header[18], header[19]), (2, 2), "not in WAL mode");

    // The same file named by either URL form holds the same records.
    for url in [
        format!("sqlite:{}", path.display()),
        format!("sqlite://{}", path.display()),
    ] {
        let again = open(&config(Some(&url))).await.unwrap();
        assert_eq!(
            again.get_response("ada", "resp_1").await.unwrap().unwrap(),
            record("resp_1")
        );
    }
}

#[tokio::test]
async fn a_sqlite_file_that_cannot_be_created_is_a_database_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"not a folder").unwrap();
    let mut cfg = config(None);
    cfg.sqlite_path = blocker.join("state.sqlite3");
    let e = open(&cfg).await.err().unwrap();
    assert!(matches!(e, StoreError::Database(_)), "{e:?}");
}
