//! Limits that hold across instances: when `[server.state]` is PostgreSQL, a key's request rate
//! is also counted in the database ([`toolbridge_state::SharedLimits`]), so N instances behind a
//! load balancer let a key through at the configured rate once, not N times. The in-process
//! limiter stays in front as the cheap first check (and is the only one on SQLite).
//!
//! A database that fails to answer does not stop requests: the failure is logged and the
//! in-process limit still applies (a state outage must not take chat completions down with it).

use std::sync::Arc;
use std::time::Duration;

use crate::auth::Identity;
use crate::rate::RateLimiter;
use crate::state::AppState;

/// Takes one request of `who` from the shared limit; `Err(wait)` when it is spent.
pub(crate) async fn take_request(
    state: &Arc<AppState>,
    limiter: &RateLimiter,
    who: Identity,
) -> Result<(), Duration> {
    let Some(shared) = state.responses.shared_limits().await else {
        return Ok(());
    };
    let key = state.keys.limit_key(who);
    match shared
        .take_request(&key, limiter.per_minute, limiter.burst_requests)
        .await
    {
        Ok(taken) => taken,
        Err(e) => {
            tracing::error!(error = %e, "rate limit: the shared state database did not answer; the instance's own limit applies");
            Ok(())
        }
    }
}
