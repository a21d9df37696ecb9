//! The threads of one forward pass: every thread runs the same program over its share of each
//! matrix product and meets the others at a barrier between phases.
//!
//! The threads are scoped to the forward pass (spawning one costs ~20 µs against the ~10 ms of a
//! decoding step), so they borrow the weights and buffers without `'static` bounds or unsafe
//! code. The barrier spins briefly — phases are a few microseconds apart, too short for a futex
//! wake-up — then sleeps on a condition variable, so a thread descheduled by other work on the
//! machine costs the others its delay, not a core spinning until it returns.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::EmbeddedError;

/// How long a waiting thread spins before sleeping.
const SPIN: Duration = Duration::from_micros(50);

/// A reusable barrier for `n` threads: spin, then sleep.
pub(crate) struct Barrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    sleepers: AtomicUsize,
    broken: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

fn broken() -> EmbeddedError {
    EmbeddedError::Generation("a model thread failed".into())
}

impl Barrier {
    pub fn new(n: usize) -> Barrier {
        Barrier {
            n: n.max(1),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Waits until all `n` threads have arrived; fails once a thread has given up.
    pub fn wait(&self) -> Result<(), EmbeddedError> {
        if self.n == 1 {
            return Ok(());
        }
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            // The count is reset before the release, so a thread that races ahead to the next
            // barrier counts there.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(gen.wrapping_add(1), Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
                self.wake.notify_all();
            }
            return self.check();
        }
        let start = Instant::now();
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == gen {
            if self.broken.load(Ordering::Relaxed) {
                return Err(broken());
            }
            spin_loop();
            spins += 1;
            if spins.is_multiple_of(64) && start.elapsed() > SPIN {
                self.sleep(gen);
                break;
            }
        }
        self.check()
    }

    fn sleep(&self, gen: usize) {
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // Announced before the last look at the generation: the releasing thread either sees a
        // sleeper (and takes the lock to notify) or stored the generation before we look.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while self.generation.load(Ordering::SeqCst) == gen && !self.broken.load(Ordering::SeqCst) {
            guard = self
                .wake
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), EmbeddedError> {
        match self.broken.load(Ordering::SeqCst) {
            true => Err(broken()),
            false => Ok(()),
        }
    }

    /// Releases every waiter with an error (a thread failed or unwound).
    fn break_all(&self) {
        self.broken.store(true, Ordering::SeqCst);
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.wake.notify_all();
    }
}

/// Breaks the barrier if its thread leaves early by unwinding.
struct BreakOnUnwind<'a>(&'a Barrier);

impl Drop for BreakOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.break_all();
        }
    }
}

/// Runs `program(thread, main, barrier)` on `n` threads: the calling thread is thread 0 and gets
/// `Some(main)` (the state only it touches), the others `None`.
pub(crate) fn run<M, F>(n: usize, main: &mut M, program: F) -> Result<(), EmbeddedError>
where
    M: Send,
    F: Fn(usize, Option<&mut M>, &Barrier) -> Result<(), EmbeddedError> + Sync,
{
    let barrier = Barrier::new(n);
    let (barrier, program) = (&barrier, &program);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (1..n.max(1))
            .map(|t| {
                scope.spawn(move || {
                    let _guard = BreakOnUnwind(barrier);
                    let result = program(t, None, barrier);
                    if result.is_err() {
                        barrier.break_all();
                    }
                    result
                })
            })
            .collect();
        let result = {
            let _guard = BreakOnUnwind(barrier);
            program(0, Some(main), barrier)
        };
        if result.is_err() {
            barrier.break_all();
        }
        let mut first_err = result.err();
        for w in workers {
            let r = w.join().unwrap_or_else(|_| Err(broken()));
            if let (None, Err(e)) = (&first_err, r) {
                first_err = Some(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })
}

/// The share of `total` items thread `t` of `n` takes (contiguous, sizes differing by at most 1).
pub(crate) fn share(total: usize, n: usize, t: usize) -> std::ops::Range<usize> {
    total * t / n..total * (t + 1) / n
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn threads_meet_at_every_phase() {
        // Each phase, every thread adds 1; after the barrier all see the full count.
        let count = AtomicUsize::new(0);
        let mut seen = Vec::new();
        run(3, &mut seen, |_, main, barrier| {
            for phase in 1..=50 {
                count.fetch_add(1, Ordering::SeqCst);
                barrier.wait()?;
                assert_eq!(count.load(Ordering::SeqCst), 3 * phase);
                barrier.wait()?;
            }
            if let Some(seen) = main {
                seen.push(count.load(Ordering::SeqCst));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![150]);
    }

    #[test]
    fn a_failing_thread_releases_the_others_with_an_error() {
        let mut main = ();
        let r = run(2, &mut main, |t, _, barrier| {
            if t == 1 {
                return Err(EmbeddedError::Generation("boom".into()));
            }
            barrier.wait()?;
            barrier.wait()
        });
        assert!(r.is_err());
    }

    #[test]
    fn sleeping_waiters_are_woken() {
        let mut main = ();
        run(2, &mut main, |t, _, barrier| {
            if t == 0 {
                std::thread::sleep(Duration::from_millis(20));
            }
            barrier.wait()
        })
        .unwrap();
    }

    #[test]
    fn shares_cover_the_range() {
        let parts: Vec<_> = (0..3).map(|t| share(10, 3, t)).collect();
        assert_eq!(parts, vec![0..3, 3..6, 6..10]);
    }
}
