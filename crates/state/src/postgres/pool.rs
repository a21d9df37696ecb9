//! The PostgreSQL store's connections: a pool of [`POOL_SIZE`] clients, each with its prepared
//! statements, each behind its own lock and used by one call at a time (a call may be a
//! transaction, which must not interleave with others on a connection).
//!
//! A call takes the first free client starting from a round-robin position, and waits for the
//! client at that position if all are busy. A client is opened on first use and opened again once
//! its connection has closed (server restart, network cut, `pg_terminate_backend`): a call already
//! under way on a connection that drops fails, later calls reconnect.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use tokio::sync::{Mutex, MutexGuard};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use crate::StoreError;

/// How many connections one store keeps.
pub const POOL_SIZE: usize = 4;

/// A failure inside a call: PostgreSQL's or ours, so `?` works on both.
pub(super) struct Fail(pub StoreError);

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail(StoreError::Database(e.to_string()))
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail(e)
    }
}

pub(super) type Pg<T> = Result<T, Fail>;

pub(super) struct Pool {
    config: Config,
    clients: [Mutex<Option<Conn>>; POOL_SIZE],
    next: AtomicUsize,
}

/// A connection and the statements prepared on it: each statement is parsed once per
/// connection, and a call is then one round trip instead of two (prepare, execute).
pub(super) struct Conn {
    pub client: Client,
    statements: HashMap<String, Statement>,
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Conn {
    fn new(client: Client) -> Self {
        Conn {
            client,
            statements: HashMap::new(),
        }
    }

    pub async fn prepare(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    pub async fn execute(&mut self, sql: &str, params: Params<'_>) -> Pg<u64> {
        let statement = self.prepare(sql).await?;
        Ok(self.client.execute(&statement, params).await?)
    }

    pub async fn query(&mut self, sql: &str, params: Params<'_>) -> Pg<Vec<Row>> {
        let statement = self.prepare(sql).await?;
        Ok(self.client.query(&statement, params).await?)
    }

    pub async fn query_opt(&mut self, sql: &str, params: Params<'_>) -> Pg<Option<Row>> {
        let statement = self.prepare(sql).await?;
        Ok(self.client.query_opt(&statement, params).await?)
    }

    pub async fn query_one(&mut self, sql: &str, params: Params<'_>) -> Pg<Row> {
        let statement = self.prepare(sql).await?;
        Ok(self.client.query_one(&statement, params).await?)
    }
}

impl Pool {
    /// A pool whose first client is `first` (already connected), the others opened on demand.
    pub async fn new(config: Config, first: Client) -> Self {
        let pool = Pool {
            config,
            clients: std::array::from_fn(|_| Mutex::new(None)),
            next: AtomicUsize::new(0),
        };
        *pool.clients[0].lock().await = Some(Conn::new(first));
        pool
    }

    /// Runs `f` with a client of the pool (connecting it first if needed).
    pub fn with<T, F>(&self, f: F) -> BoxFuture<'_, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Conn) -> BoxFuture<'c, Pg<T>> + Send + 'static,
    {
        Box::pin(async move {
            let mut slot = self.slot().await;
            if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
                *slot = Some(Conn::new(connect(&self.config).await?));
            }
            match slot.as_mut() {
                Some(conn) => {
                    let result = f(conn).await.map_err(|Fail(e)| e);
                    if let Err(StoreError::Database(_)) = &result {
                        // A statement may be what failed (a table changed under it): prepare
                        // afresh next time rather than fail the same way again.
                        conn.statements.clear();
                    }
                    result
                }
                None => Err(StoreError::Database("not connected".into())),
            }
        })
    }

    /// The first free client from the round-robin position on, or else the one at it.
    async fn slot(&self) -> MutexGuard<'_, Option<Conn>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed) % POOL_SIZE;
        for k in 0..POOL_SIZE {
            if let Ok(guard) = self.clients[(start + k) % POOL_SIZE].try_lock() {
                return guard;
            }
        }
        self.clients[start].lock().await
    }
}

pub(super) async fn connect(config: &Config) -> Result<Client, StoreError> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| StoreError::Database(format!("connecting: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "state database connection closed");
        }
    });
    Ok(client)
}
