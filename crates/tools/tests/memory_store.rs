//! The memory store on SQLite and on a real PostgreSQL server (scripts/test.sh installs and starts
//! one on 127.0.0.1 and exports TOOLBRIDGE_TEST_POSTGRES_URL), including a process killed while
//! writing: every fact it reported committed is there, and the database is sound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use toolbridge_tools::memory::{open_store, MemoryStore, NewMemory, SqliteStore, ACTIVE};

const CHILD_URL: &str = "TOOLBRIDGE_MEMORY_CHILD_URL";
const CHILD_USER: &str = "TOOLBRIDGE_MEMORY_CHILD_USER";

fn postgres_url() -> String {
    std::env::var("TOOLBRIDGE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "TOOLBRIDGE_TEST_POSTGRES_URL is not set: run the tests with scripts/test.sh, which installs PostgreSQL and starts a throwaway server on 127.0.0.1"
        )
    })
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        toolbridge_tools::common::random_hex(8)
    )
}

fn fact(user: &str, text: &str, slot: Option<&str>) -> NewMemory {
    NewMemory {
        user: user.into(),
        slot: slot.map(str::to_owned),
        value: slot.map(|_| text.to_owned()),
        memory_text: text.into(),
        conversation: Some("c1".into()),
        tool_call: Some("call_1".into()),
        ..NewMemory::default()
    }
}

async fn exercise(store: Arc<dyn MemoryStore>) {
    let (ada, bob) = (unique("ada"), unique("bob"));
    let a1 = store.add(fact(&ada, "likes tea", None)).await.unwrap();
    let a2 = store
        .add(fact(&ada, "lives in Paris", Some("city")))
        .await
        .unwrap();
    let b1 = store.add(fact(&bob, "likes coffee", None)).await.unwrap();
    assert!(a1 < a2 && a2 < b1);
    let a3 = store
        .add(fact(&ada, "lives in Lyon", Some("city")))
        .await
        .unwrap();
    let active = store
        .list(Some(ada.clone()), Some(ACTIVE.into()))
        .await
        .unwrap();
    assert_eq!(
        active
            .iter()
            .map(|m| m.memory_text.as_str())
            .collect::<Vec<_>>(),
        ["likes tea", "lives in Lyon"]
    );
    assert_eq!(active[1].id, a3);
    assert_eq!(active[1].slot.as_deref(), Some("city"));
    assert_eq!(active[1].conversation.as_deref(), Some("c1"));
    assert_eq!(active[1].tool_call.as_deref(), Some("call_1"));
    let all = store.list(Some(ada.clone()), None).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[1].status, "SUPERSEDED");
    assert_eq!(store.list(Some(bob.clone()), None).await.unwrap().len(), 1);
    assert!(store.remove(a1).await.unwrap());
    assert!(!store.remove(a1).await.unwrap());
    assert_eq!(
        toolbridge_tools::memory::active_lines(store.as_ref(), &ada)
            .await
            .unwrap(),
        vec!["lives in Lyon".to_owned()]
    );
}

#[tokio::test]
async fn sqlite_store_is_created_on_first_use_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/memory.sqlite3");
    let store = open_store(Some(path.to_str().unwrap())).unwrap();
    assert!(!path.exists());
    exercise(store).await;
    assert!(path.exists());
    // WAL: bytes 18 and 19 of the file header are 2 in WAL mode.
    let header = std::fs::read(&path).unwrap();
    assert_eq!((header[18], header[19]), (2, 2), "not in WAL mode");
    // A second handle (another process would be the same) sees the same facts.
    let again = SqliteStore::new(path.clone());
    assert_eq!(again.integrity_check().await.unwrap(), "ok");
    assert_eq!(again.list(None, None).await.unwrap().len(), 3);
    // sqlite:// URLs name the same file.
    let via_url = open_store(Some(&format!("sqlite://{}", path.display()))).unwrap();
    assert_eq!(via_url.list(None, None).await.unwrap().len(), 3);
}

#[tokio::test]
async fn sqlite_memory_files_and_their_folder_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/memories/memory.sqlite3");
    let store = SqliteStore::new(path.clone());
    store.add(fact("ada", "likes tea", None)).await.unwrap();
    // Checked while the store is open: its -wal and -shm files exist until the last handle closes.
    for file in ["memory.sqlite3", "memory.sqlite3-wal", "memory.sqlite3-shm"] {
        let file = path.with_file_name(file);
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    assert_eq!(mode(&dir.path().join("data")), 0o700);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    drop(store);
}

#[tokio::test]
async fn postgres_store() {
    let store = open_store(Some(&postgres_url())).unwrap();
    exercise(store).await;
}

/// The child half of the kill tests: writes facts until killed, printing each id once committed.
#[tokio::test]
async fn memory_writer_child() {
    let (Ok(url), Ok(user)) = (std::env::var(CHILD_URL), std::env::var(CHILD_USER)) else {
        return; // Only runs when a kill test starts this binary as its child.
    };
    let store = open_store(Some(&url)).unwrap();
    for i in 0..1_000_000u64 {
        let slot = (i % 3 == 0).then(|| format!("slot{}", i % 7));
        let mut m = fact(&user, &format!("fact {i}"), None);
        m.slot = slot;
        store.add(m).await.unwrap();
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "committed fact {i}").unwrap();
        out.flush().unwrap();
    }
}

/// Starts the child writer, kills it (SIGKILL) after `at_least` commits, and returns the facts
/// it reported committed.
/// After a writer of `user`'s facts was killed: every fact it reported committed is stored,
/// nothing it did not write is, and the store still takes writes.
async fn assert_survived(store: &dyn MemoryStore, user: &str, committed: &[String]) {
    let stored: std::collections::HashSet<String> = store
        .list(Some(user.to_owned()), None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.memory_text)
        .collect();
    for f in committed {
        assert!(stored.contains(f), "committed {f} is missing");
    }
    // Facts committed between the last line read and the kill may be there too (that is not a
    // loss); what must never be there is anything the writer did not write.
    assert!(
        stored.iter().all(|f| f.starts_with("fact ")),
        "unexpected entries: {stored:?}"
    );
    store.add(fact(user, "after", None)).await.unwrap();
}

fn kill_during_writes(url: &str, user: &str, at_least: usize) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "memory_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_URL, url)
        .env(CHILD_USER, user)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut committed = Vec::new();
    while committed.len() < at_least {
        let line = lines.next().expect("the writer ended early").unwrap();
        if let Some(f) = line.strip_prefix("committed ") {
            committed.push(f.to_owned());
        }
    }
    child.kill().unwrap(); // SIGKILL, mid-write
                           // Lines already written before the kill count too.
    for line in lines.map_while(Result::ok) {
        if let Some(f) = line.strip_prefix("committed ") {
            committed.push(f.to_owned());
        }
    }
    child.wait().unwrap();
    committed
}

#[tokio::test]
async fn sqlite_survives_a_kill_during_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.sqlite3");
    let url = path.to_str().unwrap().to_owned();
    let committed = tokio::task::spawn_blocking(move || kill_during_writes(&url, "killed", 200))
        .await
        .unwrap();
    let store = SqliteStore::new(path.clone());
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
    assert_survived(&store, "killed", &committed).await;
}

#[tokio::test]
async fn postgres_survives_a_kill_during_writes() {
    let url = postgres_url();
    let user = unique("killed");
    let (u, us) = (url.clone(), user.clone());
    let committed = tokio::task::spawn_blocking(move || kill_during_writes(&u, &us, 100))
        .await
        .unwrap();
    let store = open_store(Some(&url)).unwrap();
    assert_survived(store.as_ref(), &user, &committed).await;
}
