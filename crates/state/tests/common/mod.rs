//! What the store tests share: a backend per test (a SQLite file in a temporary folder; a fresh
//! PostgreSQL schema on the server named by TOOLBRIDGE_TEST_POSTGRES_URL, which scripts/test.sh
//! starts on 127.0.0.1; an in-process store), and record builders.

#![allow(dead_code)]

/// Each named body (an `async fn(&Backend)` of the test file) as a test in the module of each
/// backend.
#[allow(unused_macros)]
macro_rules! suite {
    ($kind:expr => $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let backend = Backend::open($kind).await;
                super::$name(&backend).await;
                backend.finish().await;
            }
        )*
    };
}

#[allow(unused_macros)]
macro_rules! every_backend {
    ($($name:ident),* $(,)?) => {
        mod memory { use super::*; suite!(Kind::Memory => $($name),*); }
        mod sqlite { use super::*; suite!(Kind::Sqlite => $($name),*); }
        mod postgres { use super::*; suite!(Kind::Postgres => $($name),*); }
    };
}

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use toolbridge_state::{
    ConversationRecord, FileRecord, MemoryStore, ResponseRecord, Store, StoreConfig,
};

/// The file size cap every test store gets.
pub const MAX_FILE: u64 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

pub fn postgres_url() -> String {
    std::env::var("TOOLBRIDGE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "TOOLBRIDGE_TEST_POSTGRES_URL is not set: run the tests with scripts/test.sh, which installs PostgreSQL and starts a throwaway server on 127.0.0.1"
        )
    })
}

/// A name no other test run uses: lowercase, a valid SQL identifier.
pub fn unique(prefix: &str) -> String {
    let id = toolbridge_state::new_id(prefix);
    format!("{id}_{}", std::process::id())
}

/// A connection to the test server outside any store, for set-up and for looking at rows.
pub async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
        .await
        .expect("connecting to the test PostgreSQL server");
    tokio::spawn(connection);
    client
}

/// `url` with one more query parameter.
pub fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// A database for one test, and the way to open more stores on it.
pub struct Backend {
    pub kind: Kind,
    pub store: Arc<dyn Store>,
    config: StoreConfig,
    memory: Option<MemoryStore>,
    /// The PostgreSQL schema of this test.
    schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    pub async fn open(kind: Kind) -> Self {
        let (mut backend, store) = Self::fresh(kind).await;
        backend.store = store.await;
        backend
    }

    /// A fresh database and two stores opened on it at once (two instances starting together).
    pub async fn open_two(kind: Kind) -> (Self, Arc<dyn Store>) {
        let (mut backend, first) = Self::fresh(kind).await;
        let second = backend.opener();
        let (first, second) = futures::join!(first, second);
        backend.store = first;
        (backend, second)
    }

    /// A new empty database (nothing opened on it yet) and the opening of its first store.
    async fn fresh(kind: Kind) -> (Self, futures::future::BoxFuture<'static, Arc<dyn Store>>) {
        let (config, schema, dir) = match kind {
            Kind::Memory | Kind::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("state.sqlite3");
                let config = StoreConfig {
                    url: None,
                    sqlite_path: path,
                    max_file_bytes: MAX_FILE,
                };
                (config, None, Some(dir))
            }
            Kind::Postgres => {
                let schema = unique("tbstate");
                admin()
                    .await
                    .batch_execute(&format!("CREATE SCHEMA {schema}"))
                    .await
                    .unwrap();
                let url = with_param(
                    &postgres_url(),
                    &format!("options=-csearch_path%3D{schema}"),
                );
                let config = StoreConfig {
                    url: Some(url),
                    sqlite_path: PathBuf::from("/nonexistent/unused.sqlite3"),
                    max_file_bytes: MAX_FILE,
                };
                (config, Some(schema), None)
            }
        };
        let memory = (kind == Kind::Memory).then(|| MemoryStore::new(MAX_FILE));
        let backend = Backend {
            kind,
            // Replaced by the caller with the store it opens.
            store: Arc::new(MemoryStore::new(0)),
            config,
            memory,
            schema,
            _dir: dir,
        };
        let first = backend.opener();
        (backend, first)
    }

    /// Opening another store on this database.
    fn opener(&self) -> futures::future::BoxFuture<'static, Arc<dyn Store>> {
        let (memory, config) = (self.memory.clone(), self.config.clone());
        Box::pin(async move {
            match memory {
                Some(m) => Arc::new(m) as Arc<dyn Store>,
                None => toolbridge_state::open(&config).await.unwrap(),
            }
        })
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Another store on the same database (what a second gateway instance opens).
    pub async fn another(&self) -> Arc<dyn Store> {
        self.opener().await
    }

    /// How many file contents the database holds, whatever their metadata says (None for the
    /// in-process store, which keeps content with its metadata).
    pub async fn content_rows(&self) -> Option<i64> {
        const COUNT: &str = "SELECT count(*) FROM toolbridge_file_contents";
        match self.kind {
            Kind::Memory => None,
            Kind::Sqlite => {
                let c = rusqlite::Connection::open(&self.config.sqlite_path).unwrap();
                Some(c.query_row(COUNT, [], |r| r.get(0)).unwrap())
            }
            Kind::Postgres => {
                let schema = self.schema.as_deref().unwrap();
                let row = admin()
                    .await
                    .query_one(
                        &format!("SELECT count(*) FROM {schema}.toolbridge_file_contents"),
                        &[],
                    )
                    .await
                    .unwrap();
                Some(row.get(0))
            }
        }
    }

    /// Drops this test's PostgreSQL schema (a failed test leaves it for a look).
    pub async fn finish(self) {
        if let Some(schema) = &self.schema {
            drop(self.store);
            admin()
                .await
                .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
                .await
                .unwrap();
        }
    }
}

pub fn response(owner: &str, id: &str) -> ResponseRecord {
    ResponseRecord {
        id: id.into(),
        owner: owner.into(),
        status: "in_progress".into(),
        created_at: 1_000,
        updated_at: 1_000,
        expires_at: None,
        instance: "i1".into(),
        previous_response_id: Some("resp_before".into()),
        conversation_id: Some("conv_1".into()),
        // Keys deliberately out of alphabetical order: they must come back in this order.
        body: json!({"id": id, "object": "response", "status": "in_progress", "output": [],
                     "model": "m", "created_at": 1000, "zeta": {"b": 1, "a": "\u{0}é"}}),
        input_items: json!([{"type": "message", "role": "user", "content": "hi"}]),
        context: json!({"messages": [{"role": "user", "content": "hi"}]}),
        run: None,
    }
}

pub fn conversation(owner: &str, id: &str) -> ConversationRecord {
    ConversationRecord {
        id: id.into(),
        owner: owner.into(),
        created_at: 500,
        updated_at: 500,
        metadata: json!({"topic": "demo"}),
        items: json!([]),
        context: serde_json::Value::Null,
        version: 0,
    }
}

pub fn file(owner: &str, id: &str, created_at: i64, container: Option<&str>) -> FileRecord {
    FileRecord {
        id: id.into(),
        owner: owner.into(),
        filename: format!("{id}.txt"),
        purpose: "user_data".into(),
        bytes: 0,
        created_at,
        expires_at: None,
        media_type: "text/plain".into(),
        container: container.map(str::to_owned),
    }
}
