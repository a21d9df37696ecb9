//! A gateway killed (SIGKILL) while writing responses to SQLite loses none it reported stored,
//! and leaves a sound file (WAL with `synchronous=NORMAL` is enough for a killed process).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;
use toolbridge_state::{ResponseRecord, SqliteStore, Store};

const CHILD_PATH: &str = "TOOLBRIDGE_STATE_CHILD_PATH";

fn record(i: u64) -> ResponseRecord {
    ResponseRecord {
        id: format!("resp_{i}"),
        owner: "ada".into(),
        status: "completed".into(),
        created_at: 1,
        updated_at: 1,
        expires_at: None,
        instance: "killed".into(),
        previous_response_id: None,
        conversation_id: None,
        body: json!({"id": format!("resp_{i}"), "output_text": "x".repeat(2000)}),
        input_items: json!([]),
        context: json!({"messages": []}),
        run: None,
    }
}

/// The child half: stores responses until killed, printing each id once stored.
#[tokio::test]
async fn state_writer_child() {
    let Ok(path) = std::env::var(CHILD_PATH) else {
        return; // Only runs when the kill test starts this binary as its child.
    };
    let store = SqliteStore::open(PathBuf::from(path), 1024).await.unwrap();
    for i in 0..1_000_000u64 {
        store.put_response(&record(i)).await.unwrap();
        let mut out = std::io::stdout().lock();
        writeln!(out, "stored {i}").unwrap();
        out.flush().unwrap();
    }
}

#[tokio::test]
async fn sqlite_keeps_every_stored_response_across_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let child_path = path.clone();
    let stored = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "state_writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_PATH, &child_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut stored = Vec::new();
        while stored.len() < 200 {
            let line = lines.next().expect("the writer ended early").unwrap();
            if let Some(i) = line.strip_prefix("stored ") {
                stored.push(i.parse::<u64>().unwrap());
            }
        }
        child.kill().unwrap(); // SIGKILL, mid-write
        for line in lines.map_while(Result::ok) {
            if let Some(i) = line.strip_prefix("stored ") {
                stored.push(i.parse::<u64>().unwrap());
            }
        }
        child.wait().unwrap();
        stored
    })
    .await
    .unwrap();

    let store = SqliteStore::open(path, 1024).await.unwrap();
    assert_eq!(store.integrity_check().await.unwrap(), "ok");
    for i in stored {
        assert_eq!(
            store
                .get_response("ada", &format!("resp_{i}"))
                .await
                .unwrap(),
            Some(record(i)),
            "stored response {i} is missing"
        );
    }
    store.put_response(&record(u64::MAX)).await.unwrap();
}
