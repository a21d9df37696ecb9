//! What the Responses endpoints share: `[server.responses]` and `[server.state]`, the store
//! (opened on first use, or at start by `toolbridge serve`), this instance's name, its running
//! responses (to cancel them and to keep their heartbeat), and the per-user run counts.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use toolbridge_state::{SharedLimits, SlotId, Store, StoreConfig, StoreError};

use super::tools::UnavailableTools;
use crate::error::ApiError;

/// `[server.responses]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResponsesConfig {
    /// A hosted tool the configuration does not enable: `warn` (left out, logged, marked on the
    /// response's `tools`) or `error` (400 naming it).
    pub unavailable_tools: UnavailableTools,
    /// How long stored responses and files are kept, in hours (0: for ever).
    pub retention_hours: f64,
    /// Responses one user may have running at once (429 beyond); 0 = no limit.
    pub max_concurrent_per_user: usize,
    /// This instance's name in the store: a response left `in_progress` under it is marked
    /// `failed` when an instance of this name starts (a crash, a kill). Default: the host name
    /// and the listen port (with port 0, a name unique to this start).
    pub instance: Option<String>,
    /// Remote MCP servers a request may name by `server_url` (an `mcp` tool whose
    /// `server_label` no `[[mcp_servers]]` entry has): URLs whose scheme, host and port equal
    /// an entry's and whose path is the entry's or under it. Each is reached through the
    /// outbound guard under `[tools.fetch]`'s networks. Empty: none.
    pub remote_mcp_urls: Vec<String>,
    /// How long connecting to a remote MCP server and listing its tools may take, in seconds.
    pub remote_mcp_timeout_secs: u64,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        ResponsesConfig {
            unavailable_tools: UnavailableTools::Warn,
            retention_hours: 24.0 * 30.0,
            max_concurrent_per_user: 8,
            instance: None,
            remote_mcp_urls: Vec::new(),
            remote_mcp_timeout_secs: 10,
        }
    }
}

/// `[server.state]`: where responses, conversations, paused runs and files are kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateConfig {
    /// `postgres://…` to share state between instances; unset: SQLite at `path`.
    pub url: Option<String>,
    /// The SQLite file (default: `state.sqlite3` in the data folder).
    pub path: Option<PathBuf>,
    /// The largest uploaded or stored file.
    pub max_file_bytes: u64,
    /// The most bytes one user's stored files (uploads and containers' files) may hold
    /// together; 0 = no limit. Shared by every instance on the same database.
    pub max_file_bytes_per_user: u64,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            url: None,
            path: None,
            max_file_bytes: 32 << 20,
            max_file_bytes_per_user: 1 << 30,
        }
    }
}

/// How often a running response's row is touched, and after how long without a touch another
/// instance takes it for dead.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(5);
/// Stale runs and expired objects are looked for every this many heartbeats (30 s).
const UPKEEP_EVERY: u64 = 6;
const STALE_AFTER_SECS: i64 = 90;

/// The message a response left running by a dead instance ends with.
pub(crate) const INTERRUPTED: &str = "The server stopped while this response was being generated.";

pub(crate) struct Service {
    pub config: ResponsesConfig,
    state: StateConfig,
    store: OnceCell<Arc<dyn Store>>,
    pub instance: String,
    /// Responses running here: their cancellation tokens.
    running: Mutex<HashMap<String, CancellationToken>>,
    per_user: Mutex<HashMap<String, usize>>,
    /// Run slots this instance holds in a shared database: their leases are renewed by the
    /// heartbeat.
    slots: Mutex<HashSet<SlotId>>,
}

/// How long a run slot in a shared database outlives its instance's last heartbeat.
const SLOT_LEASE: Duration = Duration::from_secs(STALE_AFTER_SECS as u64);

impl Service {
    pub(crate) fn new(config: ResponsesConfig, state: StateConfig, port: u16) -> Self {
        let instance = config.instance.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "localhost".into());
            if port == 0 {
                // A port chosen at bind time differs at every start, so no restart could find
                // its runs by this name anyway; a unique name keeps two such instances on one
                // host from taking each other's running responses for their own.
                format!("{host}:0:{}", toolbridge_state::new_id("i"))
            } else {
                format!("{host}:{port}")
            }
        });
        Service {
            config,
            state,
            store: OnceCell::new(),
            instance,
            running: Mutex::new(HashMap::new()),
            per_user: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashSet::new()),
        }
    }

    /// Uses `store` instead of opening the configured one (tests, embedders).
    pub(crate) fn set_store(&self, store: Arc<dyn Store>) -> bool {
        self.store.set(store).is_ok()
    }

    /// The largest uploaded or stored file.
    pub(crate) fn max_file_bytes(&self) -> u64 {
        self.state.max_file_bytes
    }

    /// The per-user quota on stored files, `None` when off.
    pub(crate) fn file_quota(&self) -> Option<u64> {
        (self.state.max_file_bytes_per_user > 0).then_some(self.state.max_file_bytes_per_user)
    }

    /// The limits kept in a state database shared by instances (PostgreSQL); `None` on SQLite,
    /// where each instance's own limits are the limits, or when the store cannot be opened
    /// (logged; the in-process limits still apply).
    pub(crate) async fn shared_limits(self: &Arc<Self>) -> Option<Arc<dyn SharedLimits>> {
        let shared = self
            .state
            .url
            .as_deref()
            .is_some_and(|u| u.starts_with("postgres://") || u.starts_with("postgresql://"));
        if !shared {
            return None;
        }
        match self.store().await {
            Ok(store) => store.shared_limits(),
            Err(e) => {
                tracing::error!(error = %e, "shared limits: the state store is not available");
                None
            }
        }
    }

    /// The store, opened on first use. Opening marks what this instance left running as failed
    /// and starts the heartbeat and retention task.
    pub(crate) async fn store(self: &Arc<Self>) -> Result<Arc<dyn Store>, StoreError> {
        let store = self
            .store
            .get_or_try_init(|| async {
                let path = match (&self.state.path, toolbridge_sandbox::paths::data_dir()) {
                    (Some(path), _) => path.clone(),
                    (None, Some(dir)) => {
                        // The data folder also leads to the workspaces: made a passage (0711),
                        // not the private folder the store makes for a file of its own.
                        toolbridge_sandbox::private::create_dirs(
                            &dir,
                            toolbridge_sandbox::private::PASSAGE_MODE,
                        )
                        .map_err(|e| StoreError::Database(format!("{}: {e}", dir.display())))?;
                        dir.join("state.sqlite3")
                    }
                    (None, None) => return Err(StoreError::Config(
                        "no data folder (HOME and XDG_DATA_HOME are unset): set server.state.path"
                            .into(),
                    )),
                };
                let config = StoreConfig {
                    url: self.state.url.clone(),
                    sqlite_path: path,
                    max_file_bytes: self.state.max_file_bytes,
                };
                toolbridge_state::open(&config).await
            })
            .await?;
        Ok(Arc::clone(store))
    }

    /// Opens the store now (a bad `[server.state]` stops the server at start, not at the first
    /// request), recovers what this instance left running and starts the upkeep task.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<(), StoreError> {
        let store = self.store().await?;
        let now = toolbridge_state::now();
        let recovered = store
            .recover(&self.instance, now - STALE_AFTER_SECS, INTERRUPTED)
            .await?;
        if recovered > 0 {
            tracing::warn!(count = recovered, instance = %self.instance, "responses left running by a stopped instance marked failed");
        }
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            let mut n: u64 = 0;
            loop {
                tick.tick().await;
                let Some(service) = me.upgrade() else { return };
                service.upkeep(n).await;
                n += 1;
            }
        });
        Ok(())
    }

    /// The heartbeat of the running responses (stopping those the store says were stopped
    /// elsewhere); every [`UPKEEP_EVERY`] ticks, the stale ones of other instances and the
    /// expired objects.
    async fn upkeep(&self, n: u64) {
        let Some(store) = self.store.get() else {
            return;
        };
        let now = toolbridge_state::now();
        let ids: Vec<String> = self
            .running
            .lock()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default();
        if !ids.is_empty() {
            match store.heartbeat(&self.instance, &ids, now).await {
                // Cancelled by another instance (`/cancel` there), or taken for dead and marked
                // failed: the run stops here too.
                Ok(stopped) => {
                    for id in stopped {
                        tracing::info!(response = %id, "responses: stopped elsewhere; cancelling the run here");
                        self.cancel(&id);
                    }
                }
                Err(e) => tracing::error!(error = %e, "responses: heartbeat failed"),
            }
        }
        let slots: Vec<SlotId> = self
            .slots
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        if let (false, Some(limits)) = (slots.is_empty(), store.shared_limits()) {
            if let Err(e) = limits.renew_slots(&slots, SLOT_LEASE).await {
                tracing::error!(error = %e, "responses: renewing run slots failed");
            }
        }
        if n % UPKEEP_EVERY == 0 {
            // An instance name nobody has: only the staleness rule applies.
            if let Err(e) = store.recover("", now - STALE_AFTER_SECS, INTERRUPTED).await {
                tracing::error!(error = %e, "responses: recovery failed");
            }
            if let Err(e) = store.expire(now).await {
                tracing::error!(error = %e, "responses: expiry failed");
            }
        }
    }

    /// When a response stored now expires.
    pub(crate) fn expires_at(&self, now: i64) -> Option<i64> {
        (self.config.retention_hours > 0.0)
            .then(|| now + (self.config.retention_hours * 3600.0) as i64)
    }

    /// Counts a run of `user` in; 429 beyond the limit. The guard counts it out. On a shared
    /// database the run also takes one of the user's slots there, so the limit holds across
    /// instances (a database that fails to answer leaves the instance's own count in charge).
    pub(crate) async fn admit(self: &Arc<Self>, user: &str) -> Result<Admitted, ApiError> {
        let max = self.config.max_concurrent_per_user;
        {
            let mut counts = self.per_user.lock().unwrap_or_else(|p| p.into_inner());
            let count = counts.entry(user.to_owned()).or_insert(0);
            if max > 0 && *count >= max {
                return Err(ApiError::too_many_runs(max));
            }
            *count += 1;
        }
        let mut admitted = Admitted {
            service: Arc::clone(self),
            user: user.to_owned(),
            slot: None,
        };
        if max > 0 {
            if let Some(limits) = self.shared_limits().await {
                match limits
                    .acquire_slot(user, max, &self.instance, SLOT_LEASE)
                    .await
                {
                    Ok(Some(slot)) => {
                        if let Ok(mut slots) = self.slots.lock() {
                            slots.insert(slot.clone());
                        }
                        admitted.slot = Some((slot, limits));
                    }
                    // Dropping `admitted` counts the run out again here.
                    Ok(None) => return Err(ApiError::too_many_runs(max)),
                    Err(e) => {
                        tracing::error!(error = %e, "responses: run slots: the shared state database did not answer; the instance's own count applies")
                    }
                }
            }
        }
        Ok(admitted)
    }

    pub(crate) fn register(&self, id: &str, cancel: CancellationToken) {
        if let Ok(mut r) = self.running.lock() {
            r.insert(id.to_owned(), cancel);
        }
    }

    pub(crate) fn unregister(&self, id: &str) {
        if let Ok(mut r) = self.running.lock() {
            r.remove(id);
        }
    }

    /// Cancels a response running on this instance; false when it runs nowhere here.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        match self.running.lock().ok().and_then(|r| r.get(id).cloned()) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// A run counted against its user's limit while it lives.
pub(crate) struct Admitted {
    service: Arc<Service>,
    user: String,
    /// The slot taken in a shared database, freed when the run ends.
    slot: Option<(SlotId, Arc<dyn SharedLimits>)>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self
            .service
            .per_user
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(count) = counts.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.user);
            }
        }
        drop(counts);
        if let Some((slot, limits)) = self.slot.take() {
            if let Ok(mut slots) = self.service.slots.lock() {
                slots.remove(&slot);
            }
            // Freed in the background; with no runtime left (shutting down) its lease runs out.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    if let Err(e) = limits.release_slot(&slot).await {
                        tracing::warn!(error = %e, "responses: releasing a run slot failed; its lease will free it");
                    }
                });
            }
        }
    }
}
