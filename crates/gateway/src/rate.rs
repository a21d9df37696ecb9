//! Per-client rate limits: a token bucket per API key (per client address without auth).
//!
//! The map is bounded: keys are few, and addresses (only loopback ones can reach a gateway
//! without keys) are swept of idle buckets when there are too many.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::auth::Identity;

/// Above this many buckets, full (idle) ones are dropped: a full bucket is the state a new
/// client starts in, so forgetting it changes nothing.
const MAX_BUCKETS: usize = 10_000;

pub(crate) struct RateLimiter {
    /// As configured, for the limit shared through the store ([`crate::shared_limits`]).
    pub per_minute: u32,
    pub burst_requests: u32,
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<Identity, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// `None` when the limit is off (`per_minute == 0`).
    pub(crate) fn new(per_minute: u32, burst: u32) -> Option<RateLimiter> {
        (per_minute > 0).then(|| RateLimiter {
            per_minute,
            burst_requests: burst.max(1),
            per_sec: f64::from(per_minute) / 60.0,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        })
    }

    /// Takes one request's token, or tells how long until one is there.
    pub(crate) fn check(&self, who: Identity) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(&who) {
            let (per_sec, burst) = (self.per_sec, self.burst);
            buckets.retain(|_, b| b.refilled(now, per_sec, burst) < burst);
        }
        let bucket = buckets.entry(who).or_insert(Bucket {
            tokens: self.burst,
            last: now,
        });
        bucket.tokens = bucket.refilled(now, self.per_sec, self.burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_sec,
            ))
        }
    }
}

impl Bucket {
    fn refilled(&self, now: Instant, per_sec: f64, burst: f64) -> f64 {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        (self.tokens + elapsed * per_sec).min(burst)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn bursts_then_waits() {
        let limiter = RateLimiter::new(60, 2).unwrap();
        let a = Identity::Key(0);
        assert!(limiter.check(a).is_ok());
        assert!(limiter.check(a).is_ok());
        let wait = limiter.check(a).unwrap_err();
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1));
        assert!(
            limiter.check(Identity::Key(1)).is_ok(),
            "buckets are per key"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(limiter.check(a).is_ok());
        assert!(RateLimiter::new(0, 5).is_none());
    }
}
