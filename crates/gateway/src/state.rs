//! What every request handler shares.

use std::collections::HashMap;

use bytes::Bytes;
use toolbridge_providers::Model;

use crate::auth::Keys;
use crate::config::Limits;
use crate::metrics::Metrics;
use crate::rate::RateLimiter;

pub(crate) struct AppState {
    /// The configured models by the name clients send as `model`.
    pub models: HashMap<String, Model>,
    /// The `GET /v1/models` body, rendered once: the list never changes while serving.
    pub models_body: Bytes,
    pub keys: Keys,
    pub limiter: Option<RateLimiter>,
    pub metrics: Metrics,
    pub limits: Limits,
}
