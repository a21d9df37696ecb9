//! Limits several gateway instances enforce together: per-key request rates and per-user run
//! slots kept in the shared database ([`crate::PostgresStore`]), so N instances allow the limit
//! once, not N times. Instances on SQLite or in memory keep their own in-process limits.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::StoreError;

/// A run slot taken with [`SharedLimits::acquire_slot`]: what releases and renews it.
pub type SlotId = String;

/// Rate limits and run slots in a database shared by instances.
pub trait SharedLimits: Send + Sync + 'static {
    /// Takes one request of `key` under a limit of `per_minute` requests a minute with bursts of
    /// up to `burst` (the same token bucket the in-process limiter keeps, as a GCRA: one
    /// timestamp per key, updated in one atomic statement on the database's clock). `Ok(Ok(()))`:
    /// taken; `Ok(Err(wait))`: refused, a request would be let in after `wait`.
    fn take_request(
        &self,
        key: &str,
        per_minute: u32,
        burst: u32,
    ) -> BoxFuture<'_, Result<Result<(), Duration>, StoreError>>;

    /// Takes one of `owner`'s `max` run slots for `instance`, leased for `lease`: `None` when all
    /// are taken. Slots whose lease ran out (an instance that died) are freed first.
    fn acquire_slot(
        &self,
        owner: &str,
        max: usize,
        instance: &str,
        lease: Duration,
    ) -> BoxFuture<'_, Result<Option<SlotId>, StoreError>>;

    /// Extends the leases of these slots (the instance's heartbeat).
    fn renew_slots(&self, ids: &[SlotId], lease: Duration)
        -> BoxFuture<'_, Result<(), StoreError>>;

    /// Frees a slot (its run ended).
    fn release_slot(&self, id: &str) -> BoxFuture<'_, Result<(), StoreError>>;
}

/// Whether `wanted` more bytes fit beside `used` within `quota`.
pub(crate) fn within_quota(used: u64, wanted: usize, quota: u64) -> Result<(), StoreError> {
    let wanted = u64::try_from(wanted).unwrap_or(u64::MAX);
    if used.saturating_add(wanted) > quota {
        return Err(StoreError::OverQuota {
            used,
            wanted,
            quota,
        });
    }
    Ok(())
}

/// GCRA's figures for a limit, in microseconds: the interval between two requests at the
/// steady rate, and how far ahead of now the next allowed time may run (the burst).
pub(crate) fn gcra(per_minute: u32, burst: u32) -> (i64, i64) {
    let interval = 60_000_000 / i64::from(per_minute.max(1));
    let tolerance = interval * i64::from(burst.max(1) - 1);
    (interval, tolerance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_figures_match_the_token_bucket() {
        // 60 a minute, bursts of 2: one a second, and one second of slack for the second.
        assert_eq!(gcra(60, 2), (1_000_000, 1_000_000));
        assert_eq!(gcra(1, 1), (60_000_000, 0));
    }
}
