//! Rate limits and run slots in the shared database ([`crate::SharedLimits`]).
//!
//! Times are the database's clock (`statement_timestamp()`, in microseconds), so instances
//! whose clocks disagree still count one window. A rate limit is one row per key holding GCRA's
//! "theoretical arrival time", moved forward by one atomic `INSERT … ON CONFLICT DO UPDATE …
//! WHERE … RETURNING`: no row comes back when the request is over the limit. A run slot is a
//! row with a lease that the running instance renews with its heartbeat; a slot whose instance
//! died is freed when its lease runs out.

use std::time::Duration;

use futures::future::BoxFuture;

use super::PostgresStore;
use crate::limits::gcra;
use crate::{SharedLimits, SlotId, StoreError};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS toolbridge_rate_limits (
    key TEXT PRIMARY KEY,
    tat BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS toolbridge_run_slots (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    instance TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS toolbridge_run_slots_owner ON toolbridge_run_slots (owner);
";

/// Now on the database's clock, in microseconds since 1970.
const NOW_US: &str = "(extract(epoch FROM statement_timestamp()) * 1000000)::bigint";

/// The class of the advisory locks that serialize one owner's slot counts.
const SLOT_LOCK: i32 = 0x7462_736c; // "tbsl"

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

impl SharedLimits for PostgresStore {
    fn take_request(
        &self,
        key: &str,
        per_minute: u32,
        burst: u32,
    ) -> BoxFuture<'_, Result<Result<(), Duration>, StoreError>> {
        let key = key.to_owned();
        let (interval, tolerance) = gcra(per_minute, burst);
        self.with(move |conn| {
            Box::pin(async move {
                // The next allowed time may run at most `tolerance` ahead of now.
                let taken = conn
                    .query_opt(
                        &format!(
                            "INSERT INTO toolbridge_rate_limits AS r (key, tat)
                             VALUES ($1, {NOW_US} + $2)
                             ON CONFLICT (key) DO UPDATE
                                 SET tat = GREATEST(r.tat, {NOW_US}) + $2
                                 WHERE GREATEST(r.tat, {NOW_US}) - {NOW_US} <= $3
                             RETURNING tat"
                        ),
                        &[&key, &interval, &tolerance],
                    )
                    .await?;
                if taken.is_some() {
                    return Ok(Ok(()));
                }
                let ahead: i64 = conn
                    .query_one(
                        &format!(
                            "SELECT tat - {NOW_US} FROM toolbridge_rate_limits WHERE key = $1"
                        ),
                        &[&key],
                    )
                    .await?
                    .try_get(0)?;
                let wait = u64::try_from(ahead - tolerance).unwrap_or(0);
                Ok(Err(Duration::from_micros(wait)))
            })
        })
    }

    fn acquire_slot(
        &self,
        owner: &str,
        max: usize,
        instance: &str,
        lease: Duration,
    ) -> BoxFuture<'_, Result<Option<SlotId>, StoreError>> {
        let (owner, instance) = (owner.to_owned(), instance.to_owned());
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let lease = micros(lease);
        self.with(move |conn| {
            Box::pin(async move {
                let lock = conn
                    .prepare("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                    .await?;
                let expire = conn
                    .prepare(&format!(
                        "DELETE FROM toolbridge_run_slots WHERE owner = $1 AND expires_at < {NOW_US}"
                    ))
                    .await?;
                let count = conn
                    .prepare("SELECT count(*) FROM toolbridge_run_slots WHERE owner = $1")
                    .await?;
                let take = conn
                    .prepare(&format!(
                        "INSERT INTO toolbridge_run_slots (id, owner, instance, expires_at)
                         VALUES ($1, $2, $3, {NOW_US} + $4)"
                    ))
                    .await?;
                let tx = conn.client.transaction().await?;
                tx.execute(&lock, &[&SLOT_LOCK, &owner]).await?;
                tx.execute(&expire, &[&owner]).await?;
                let running: i64 = tx.query_one(&count, &[&owner]).await?.try_get(0)?;
                if running >= max {
                    return Ok(None);
                }
                let id = crate::new_id("slot");
                tx.execute(&take, &[&id, &owner, &instance, &lease]).await?;
                tx.commit().await?;
                Ok(Some(id))
            })
        })
    }

    fn renew_slots(
        &self,
        ids: &[SlotId],
        lease: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let ids = ids.to_vec();
        let lease = micros(lease);
        self.with(move |conn| {
            Box::pin(async move {
                if !ids.is_empty() {
                    conn.execute(
                        &format!(
                            "UPDATE toolbridge_run_slots SET expires_at = {NOW_US} + $2
                             WHERE id = ANY($1)"
                        ),
                        &[&ids, &lease],
                    )
                    .await?;
                }
                Ok(())
            })
        })
    }

    fn release_slot(&self, id: &str) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        self.with(move |conn| {
            Box::pin(async move {
                conn.execute("DELETE FROM toolbridge_run_slots WHERE id = $1", &[&id])
                    .await?;
                Ok(())
            })
        })
    }
}
