//! The interpreters of all conversations: one slot per (user, conversation), each behind an
//! async mutex so calls to one session run one at a time, the caps on how many interpreters may
//! be alive at once, and the reaping of idle ones.
//!
//! The pool is plain data, generic over the session type, so its rules are tested without
//! processes. Its accounting lives under one (synchronous) lock: each entry is *live* from the
//! moment a call is admitted to start an interpreter until the slot is left without one. A call
//! that needs an interpreter first asks [`Pool::admit`], which counts the live entries and, when
//! a cap would be passed, takes the sessions of the least recently used idle slots out (the
//! caller closes them before spawning), or refuses with [`PoolError::Busy`]. So the number of
//! live interpreters never exceeds the caps, not even while one is being replaced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A (user, conversation) pair.
pub type Key = (String, String);

/// One conversation's interpreter, if it has one running.
pub struct Slot<S> {
    pub session: Option<S>,
    pub last_used: Instant,
    /// Set when the reaper closed the session: the next call tells the model.
    pub expired: bool,
    /// Set when the session was closed to make room for another conversation's: the next call
    /// tells the model.
    pub evicted: bool,
    /// Whether this process started an interpreter for the slot (see [`super::history`]).
    pub started: bool,
}

/// How many interpreters may be alive at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// On the whole server.
    pub global: usize,
    /// For one user.
    pub per_user: usize,
}

/// Which cap a refused call ran into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapScope {
    Server,
    User,
}

impl std::fmt::Display for CapScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Server => "[tools.python] max_interpreters",
            Self::User => "[tools.python] max_interpreters_per_user",
        })
    }
}

/// Why a call may not start an interpreter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// Every interpreter the cap allows is running a call; none is idle to be closed.
    #[error("all {cap} interpreters allowed by {scope} are busy")]
    Busy { scope: CapScope, cap: usize },
}

/// Slots without a session are forgotten after this long (they only remember `expired`).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

struct Entry<S> {
    slot: Arc<tokio::sync::Mutex<Slot<S>>>,
    /// Holds an interpreter, or was admitted to start one.
    live: bool,
}

pub struct Pool<S> {
    caps: Caps,
    entries: Mutex<HashMap<Key, Entry<S>>>,
}

impl<S> Pool<S> {
    /// A pool with `caps` (each at least 1).
    pub fn new(caps: Caps) -> Self {
        Pool {
            caps: Caps {
                global: caps.global.max(1),
                per_user: caps.per_user.max(1),
            },
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The slot of `key`, made empty when new.
    pub fn slot(&self, key: Key) -> Arc<tokio::sync::Mutex<Slot<S>>> {
        let mut entries = self.lock();
        let entry = entries.entry(key).or_insert_with(|| Entry {
            slot: Arc::new(tokio::sync::Mutex::new(Slot {
                session: None,
                last_used: Instant::now(),
                expired: false,
                evicted: false,
                started: false,
            })),
            live: false,
        });
        Arc::clone(&entry.slot)
    }

    /// Admits `key`, whose slot the caller holds locked and empty, to start an interpreter.
    /// When that would pass a cap, the least recently used idle interpreters (of the same user
    /// first, for the per-user cap) are taken out of their slots, which are marked `evicted`,
    /// and returned: the caller closes them before spawning. With too few idle ones nothing is
    /// taken and the call is refused.
    pub fn admit(&self, key: &Key) -> Result<Vec<S>, PoolError> {
        let mut entries = self.lock();
        let victims = self.eviction_plan(&entries, key)?;
        let mut closed = Vec::with_capacity(victims.len());
        for victim in &victims {
            if let Some(entry) = entries.get_mut(victim) {
                entry.live = false;
                // Idle (checked by the plan, under this same lock): nothing else can hold it.
                if let Ok(mut slot) = entry.slot.try_lock() {
                    closed.extend(slot.session.take());
                    slot.evicted = true;
                    tracing::info!(user = %victim.0, conversation = %victim.1, "closing the least recently used idle python_execute session to make room");
                }
            }
        }
        if let Some(entry) = entries.get_mut(key) {
            entry.live = true;
        }
        Ok(closed)
    }

    /// Records, when a call is done with `key`'s slot, whether it holds an interpreter.
    pub fn settle(&self, key: &Key, has_session: bool) {
        if let Some(entry) = self.lock().get_mut(key) {
            entry.live = has_session;
        }
    }

    /// Which idle interpreters must close for `key` to start one, oldest first.
    fn eviction_plan(
        &self,
        entries: &HashMap<Key, Entry<S>>,
        key: &Key,
    ) -> Result<Vec<Key>, PoolError> {
        let others = || entries.iter().filter(|(k, e)| e.live && *k != key);
        let live_total = others().count();
        let account = account_of(&key.0);
        let same_account = |k: &Key| account_of(&k.0) == account;
        let live_user = others().filter(|(k, _)| same_account(k)).count();
        let need_user = (live_user + 1).saturating_sub(self.caps.per_user);
        let need_total = (live_total + 1).saturating_sub(self.caps.global);
        if need_user == 0 && need_total == 0 {
            return Ok(Vec::new());
        }
        let mut idle: Vec<(Instant, &Key)> = others()
            .filter_map(|(k, e)| idle_since(e).map(|at| (at, k)))
            .collect();
        idle.sort();
        let mut victims: Vec<Key> = idle
            .iter()
            .filter(|(_, k)| same_account(k))
            .take(need_user)
            .map(|(_, k)| (*k).clone())
            .collect();
        if victims.len() < need_user {
            return Err(PoolError::Busy {
                scope: CapScope::User,
                cap: self.caps.per_user,
            });
        }
        let more = need_total.saturating_sub(victims.len());
        let extra: Vec<Key> = idle
            .iter()
            .filter(|(_, k)| !victims.contains(k))
            .take(more)
            .map(|(_, k)| (*k).clone())
            .collect();
        if extra.len() < more {
            return Err(PoolError::Busy {
                scope: CapScope::Server,
                cap: self.caps.global,
            });
        }
        victims.extend(extra);
        Ok(victims)
    }

    /// Closes sessions idle for `idle` or more, and forgets long-empty slots.
    pub fn reap(&self, idle: Duration) {
        let mut entries = self.lock();
        entries.retain(|key, entry| {
            if Arc::strong_count(&entry.slot) > 1 {
                return true;
            }
            let Ok(mut slot) = entry.slot.try_lock() else {
                return true;
            };
            let idle_for = slot.last_used.elapsed();
            if slot.session.is_some() && idle_for >= idle {
                tracing::info!(user = %key.0, conversation = %key.1, ?idle_for, "closing an idle python_execute session");
                slot.session = None;
                slot.expired = true;
                entry.live = false;
            }
            slot.session.is_some() || idle_for < FORGET_AFTER
        });
    }

    /// Live interpreters: running, or admitted to start.
    pub fn live(&self) -> usize {
        self.lock().values().filter(|e| e.live).count()
    }

    /// Slots a call holds (running a cell, starting an interpreter, or about to).
    pub fn busy(&self) -> usize {
        self.lock()
            .values()
            .filter(|e| Arc::strong_count(&e.slot) > 1 || e.slot.try_lock().is_err())
            .count()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Entry<S>>> {
        // Nothing holding this lock can leave the map inconsistent.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whom the per-user cap counts: the gateway runs a request that names a `user` as
/// `<key's user>/<that user>`, and a client must not get more interpreters by naming more users,
/// so everything up to the first `/` (the authenticated user) is one account.
fn account_of(user: &str) -> &str {
    user.split('/').next().unwrap_or(user)
}

/// When an idle entry's interpreter was last used; `None` when it has none or is in use: locked,
/// or its `Arc` held by a call between [`Pool::slot`] and locking it.
fn idle_since<S>(entry: &Entry<S>) -> Option<Instant> {
    if Arc::strong_count(&entry.slot) > 1 {
        return None;
    }
    let slot = entry.slot.try_lock().ok()?;
    slot.session.as_ref().map(|_| slot.last_used)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// A stand-in interpreter: its conversation's name.
    type Fake = String;

    fn key(user: &str, conversation: &str) -> Key {
        (user.to_owned(), conversation.to_owned())
    }

    /// One call on `key` that needs a new interpreter: admit, "spawn", settle. Returns the
    /// sessions evicted to make room.
    fn start(pool: &Pool<Fake>, key: &Key) -> Result<Vec<Fake>, PoolError> {
        let slot = pool.slot(key.clone());
        let mut slot = slot.try_lock().unwrap();
        let evicted = pool.admit(key)?;
        assert!(pool.live() <= pool.caps.global, "cap passed");
        slot.session = Some(key.1.clone());
        slot.last_used = Instant::now();
        pool.settle(key, true);
        Ok(evicted)
    }

    /// Makes `key`'s interpreter the most recently used.
    fn touch(pool: &Pool<Fake>, key: &Key) {
        pool.slot(key.clone()).try_lock().unwrap().last_used = Instant::now();
    }

    fn pool(global: usize, per_user: usize) -> Pool<Fake> {
        Pool::new(Caps { global, per_user })
    }

    #[test]
    fn the_least_recently_used_idle_interpreter_makes_room() {
        let pool = pool(2, 2);
        let (a, b, c) = (key("u1", "a"), key("u2", "b"), key("u3", "c"));
        assert!(start(&pool, &a).unwrap().is_empty());
        assert!(start(&pool, &b).unwrap().is_empty());
        touch(&pool, &a);
        // b is now the least recently used.
        assert_eq!(start(&pool, &c).unwrap(), vec!["b".to_owned()]);
        assert_eq!(pool.live(), 2);
        let b_slot = pool.slot(b.clone());
        let b_slot = b_slot.try_lock().unwrap();
        assert!(b_slot.session.is_none());
        assert!(
            b_slot.evicted,
            "the evicted conversation is told on its next call"
        );
    }

    #[test]
    fn the_per_user_cap_evicts_that_users_own_interpreter_first() {
        let pool = pool(3, 1);
        let (a, b, c) = (key("u1", "a"), key("u2", "b"), key("u1", "c"));
        start(&pool, &a).unwrap();
        start(&pool, &b).unwrap();
        touch(&pool, &a);
        // Room on the server, but u1 already has its one: a goes, though b is older.
        assert_eq!(start(&pool, &c).unwrap(), vec!["a".to_owned()]);
        assert_eq!(pool.live(), 2);
    }

    #[test]
    fn busy_interpreters_are_never_evicted_and_the_call_is_refused() {
        let pool = pool(2, 1);
        let (a, b, c) = (key("u1", "a"), key("u2", "b"), key("u3", "c"));
        start(&pool, &a).unwrap();
        start(&pool, &b).unwrap();
        // Both are running a call.
        let a_slot = pool.slot(a.clone());
        let _a_busy = a_slot.try_lock().unwrap();
        let b_slot = pool.slot(b.clone());
        let _b_held = Arc::clone(&b_slot);
        assert_eq!(
            start(&pool, &c),
            Err(PoolError::Busy {
                scope: CapScope::Server,
                cap: 2
            })
        );
        assert_eq!(pool.live(), 2);
        // The refused call did not count itself in.
        pool.settle(&c, false);
        assert_eq!(pool.live(), 2);
    }

    #[test]
    fn the_per_user_cap_refuses_when_that_user_has_nothing_idle() {
        let pool = pool(4, 1);
        let (a, b) = (key("u1", "a"), key("u1", "b"));
        start(&pool, &a).unwrap();
        let a_slot = pool.slot(a.clone());
        let _a_busy = a_slot.try_lock().unwrap();
        assert_eq!(
            start(&pool, &b),
            Err(PoolError::Busy {
                scope: CapScope::User,
                cap: 1
            })
        );
    }

    #[test]
    fn the_users_own_idle_interpreter_also_frees_the_servers_slot() {
        let pool = pool(2, 1);
        let (a, b, c) = (key("u1", "a"), key("u2", "b"), key("u1", "c"));
        start(&pool, &a).unwrap();
        start(&pool, &b).unwrap();
        let b_slot = pool.slot(b.clone());
        let _b_busy = b_slot.try_lock().unwrap();
        // u1's own a is idle: evicting it satisfies both caps, so only it goes.
        assert_eq!(start(&pool, &c).unwrap(), vec!["a".to_owned()]);
        // Now a (empty), b (busy), c (idle): another user's d evicts c.
        let d = key("u3", "d");
        assert_eq!(start(&pool, &d).unwrap(), vec!["c".to_owned()]);
        assert_eq!(pool.live(), 2);
    }

    #[test]
    fn users_named_by_one_key_share_its_cap() {
        let pool = pool(4, 1);
        let (a, b) = (key("k1/alice", "a"), key("k1/bob", "b"));
        start(&pool, &a).unwrap();
        assert_eq!(start(&pool, &b).unwrap(), vec!["a".to_owned()]);
        assert!(start(&pool, &key("k2/alice", "c")).unwrap().is_empty());
    }

    #[test]
    fn reaped_interpreters_no_longer_count() {
        let pool = pool(1, 1);
        let a = key("u1", "a");
        start(&pool, &a).unwrap();
        pool.reap(Duration::ZERO);
        assert_eq!(pool.live(), 0);
        assert!(start(&pool, &key("u2", "b")).unwrap().is_empty());
    }
}
