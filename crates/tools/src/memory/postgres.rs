//! The PostgreSQL store, for deployments that run several gateway instances against one database.
//!
//! Selected by a `postgres://` URL. A commit returns once PostgreSQL has made it durable (its WAL,
//! `synchronous_commit` as the server is configured). The table is created on first use under an
//! advisory lock, so instances starting together do not race. The connection is opened on first
//! use and opened again after it breaks. TLS is not supported yet: use a local socket, a private
//! network or an SSH tunnel (`sslmode=disable`).

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Mutex;
use tokio_postgres::{Client, NoTls};

use super::{now, Memory, MemoryError, MemoryStore, NewMemory, ACTIVE, SUPERSEDED};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS toolbridge_memories (
    id BIGSERIAL PRIMARY KEY,
    user_id TEXT NOT NULL,
    slot TEXT,
    value TEXT,
    memory_text TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'ACTIVE',
    conversation TEXT,
    tool_call TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS toolbridge_memories_user_status ON toolbridge_memories (user_id, status);
";

/// An arbitrary constant for the schema's advisory lock.
const SCHEMA_LOCK: i64 = 0x7442_6d65_6d6f;

#[derive(Clone)]
pub struct PostgresStore {
    url: String,
    client: Arc<Mutex<Option<Client>>>,
}

impl PostgresStore {
    pub fn new(url: &str) -> Self {
        PostgresStore {
            url: url.to_owned(),
            client: Arc::new(Mutex::new(None)),
        }
    }

    async fn connect(url: &str) -> Result<Client, MemoryError> {
        let (mut client, connection) = tokio_postgres::connect(url, NoTls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "memory database connection closed");
            }
        });
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .await?;
        tx.batch_execute(SCHEMA).await?;
        tx.commit().await?;
        Ok(client)
    }

    /// Runs `f` with the client (connecting first if needed).
    fn with<T, F>(&self, f: F) -> BoxFuture<'static, Result<T, MemoryError>>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Client) -> BoxFuture<'c, Result<T, MemoryError>> + Send + 'static,
    {
        let url = self.url.clone();
        let slot = Arc::clone(&self.client);
        Box::pin(async move {
            let mut guard = slot.lock().await;
            if guard.as_ref().is_none_or(Client::is_closed) {
                *guard = Some(Self::connect(&url).await?);
            }
            match guard.as_mut() {
                Some(client) => f(client).await,
                None => Err(MemoryError::Other("not connected".into())),
            }
        })
    }
}

fn row(r: &tokio_postgres::Row) -> Result<Memory, MemoryError> {
    Ok(memory_from_row!(r.try_get))
}

impl MemoryStore for PostgresStore {
    fn add(&self, m: NewMemory) -> BoxFuture<'static, Result<i64, MemoryError>> {
        self.with(move |client| {
            Box::pin(async move {
                let tx = client.transaction().await?;
                if let Some(slot) = &m.slot {
                    tx.execute(
                        "UPDATE toolbridge_memories SET status = $1 WHERE user_id = $2 AND slot = $3 AND status = $4",
                        &[&SUPERSEDED, &m.user, slot, &ACTIVE],
                    )
                    .await?;
                }
                let status = m.status.clone().unwrap_or_else(|| ACTIVE.to_owned());
                let created = now();
                let r = tx
                    .query_one(
                        "INSERT INTO toolbridge_memories (user_id, slot, value, memory_text, status, conversation, tool_call, created_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                        &[&m.user, &m.slot, &m.value, &m.memory_text, &status, &m.conversation, &m.tool_call, &created],
                    )
                    .await?;
                let id: i64 = r.try_get(0)?;
                tx.commit().await?;
                Ok(id)
            })
        })
    }

    fn list(
        &self,
        user: Option<String>,
        status: Option<String>,
    ) -> BoxFuture<'static, Result<Vec<Memory>, MemoryError>> {
        self.with(move |client| {
            Box::pin(async move {
                let rows = client
                    .query(
                        "SELECT id, user_id, slot, value, memory_text, status, conversation, tool_call, created_at
                         FROM toolbridge_memories
                         WHERE ($1::TEXT IS NULL OR user_id = $1) AND ($2::TEXT IS NULL OR status = $2)
                         ORDER BY id",
                        &[&user, &status],
                    )
                    .await?;
                rows.iter().map(row).collect()
            })
        })
    }

    fn remove(&self, id: i64) -> BoxFuture<'static, Result<bool, MemoryError>> {
        self.with(move |client| {
            Box::pin(async move {
                Ok(client
                    .execute("DELETE FROM toolbridge_memories WHERE id = $1", &[&id])
                    .await?
                    > 0)
            })
        })
    }
}
