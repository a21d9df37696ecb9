//! The interpreters of all conversations: one slot per (user, conversation), each behind an
//! async mutex so calls to one session run one at a time, and the reaping of idle ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::session::Session;

/// A (user, conversation) pair.
pub type Key = (String, String);

/// One conversation's interpreter, if it has one running.
pub struct Slot {
    pub session: Option<Session>,
    pub last_used: Instant,
    /// Set when the reaper closed the session: the next call tells the model.
    pub expired: bool,
    /// Whether this process started an interpreter for the slot (see [`super::history`]).
    pub started: bool,
}

/// Slots without a session are forgotten after this long (they only remember `expired`).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

#[derive(Default)]
pub struct Pool {
    slots: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl Pool {
    /// The slot of `key`, made empty when new.
    pub fn slot(&self, key: Key) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut slots = self.lock();
        Arc::clone(slots.entry(key).or_insert_with(|| {
            Arc::new(tokio::sync::Mutex::new(Slot {
                session: None,
                last_used: Instant::now(),
                expired: false,
                started: false,
            }))
        }))
    }

    /// Closes sessions idle for `idle` or more. Busy slots are skipped: locked ones are in use,
    /// and so are ones whose `Arc` a call holds (between [`Pool::slot`] and locking it).
    pub fn reap(&self, idle: Duration) {
        let mut slots = self.lock();
        slots.retain(|key, slot| {
            if Arc::strong_count(slot) > 1 {
                return true;
            }
            let Ok(mut slot) = slot.try_lock() else {
                return true;
            };
            let idle_for = slot.last_used.elapsed();
            if slot.session.is_some() && idle_for >= idle {
                tracing::info!(user = %key.0, conversation = %key.1, ?idle_for, "closing an idle python_execute session");
                slot.session = None;
                slot.expired = true;
            }
            slot.session.is_some() || idle_for < FORGET_AFTER
        });
    }

    /// Running interpreters (a slot in use counts as running).
    pub fn live(&self) -> usize {
        self.lock()
            .values()
            .filter(|slot| slot.try_lock().map_or(true, |s| s.session.is_some()))
            .count()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Arc<tokio::sync::Mutex<Slot>>>> {
        // Nothing holding this lock can leave the map inconsistent.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
