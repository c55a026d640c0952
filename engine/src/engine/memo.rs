//! Values derived from the archive as of one generation (a reader's search statistics, the
//! messages no search lane ranks, ...), kept until the generation moves: a value is computed
//! at most once per key and generation, and a lookup at a newer generation recomputes it; and
//! slots, one value per key for the engine's life, for state that follows the generation
//! itself (the search's row directory, built on a thread of its own).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Error;

/// At most this many keys are kept; the oldest generation's go first.
const KEPT: usize = 256;

type Kept = (i64, Arc<dyn Any + Send + Sync>);

/// The memo (one per engine).
#[derive(Default)]
pub struct Memo {
    values: Mutex<HashMap<String, Kept>>,
    slots: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
}

impl Memo {
    /// The value of `key` at `generation`: the kept one, or `compute()`'s (then kept). Two
    /// callers racing on a missing value may both compute it; either result is kept.
    pub fn get<T: Any + Send + Sync>(
        &self,
        key: &str,
        generation: i64,
        compute: impl FnOnce() -> Result<T, Error>,
    ) -> Result<Arc<T>, Error> {
        if let Some(value) = self.kept::<T>(key, generation) {
            return Ok(value);
        }
        Ok(self.keep(key, generation, compute()?))
    }

    /// As [`Memo::get`] for a value computed asynchronously (a query of the engine), and
    /// whether it was kept already. A computation dropped half-way keeps nothing.
    pub async fn get_async<T: Any + Send + Sync, F>(
        &self,
        key: &str,
        generation: i64,
        compute: impl FnOnce() -> F,
    ) -> Result<(Arc<T>, bool), Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        if let Some(value) = self.kept::<T>(key, generation) {
            return Ok((value, true));
        }
        Ok((self.keep(key, generation, compute().await?), false))
    }

    /// The engine's one `T` under `key`, created empty on first use and kept for the engine's
    /// life whatever the generation (state that follows the generation itself, such as the
    /// search's row directory and whether it is being built).
    pub fn slot<T: Any + Send + Sync + Default>(&self, key: &str) -> Arc<T> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get(key).and_then(|s| s.clone().downcast::<T>().ok()) {
            return slot;
        }
        let slot = Arc::new(T::default());
        slots.insert(key.to_string(), slot.clone());
        slot
    }

    /// Keeps `value` as `key`'s at `generation`.
    fn keep<T: Any + Send + Sync>(&self, key: &str, generation: i64, value: T) -> Arc<T> {
        let value = Arc::new(value);
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        if values.len() >= KEPT {
            let oldest = values.values().map(|(g, _)| *g).min().unwrap_or(generation);
            values.retain(|_, (g, _)| *g > oldest);
            if values.len() >= KEPT {
                values.clear();
            }
        }
        values.insert(key.to_string(), (generation, value.clone()));
        value
    }

    fn kept<T: Any + Send + Sync>(&self, key: &str, generation: i64) -> Option<Arc<T>> {
        let values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        let (kept_at, value) = values.get(key)?;
        if *kept_at != generation {
            return None;
        }
        value.clone().downcast::<T>().ok()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_value_is_computed_once_per_generation() {
        let memo = Memo::default();
        let mut calls = 0;
        for _ in 0..3 {
            let v = memo
                .get("k", 1, || {
                    calls += 1;
                    Ok(7u32)
                })
                .unwrap();
            assert_eq!(*v, 7);
        }
        assert_eq!(calls, 1);
        // A newer generation computes it again, and the older one is gone.
        let v = memo.get("k", 2, || Ok(8u32)).unwrap();
        assert_eq!(*v, 8);
        let v = memo.get("k", 1, || Ok(9u32)).unwrap();
        assert_eq!(*v, 9);
    }

    #[test]
    fn a_slot_is_one_value_for_the_engines_life() {
        let memo = Memo::default();
        let slot = memo.slot::<std::sync::atomic::AtomicU32>("s");
        slot.store(5, std::sync::atomic::Ordering::Relaxed);
        let again = memo.slot::<std::sync::atomic::AtomicU32>("s");
        assert_eq!(again.load(std::sync::atomic::Ordering::Relaxed), 5);
        // Another type under the same key is a new slot.
        assert_eq!(*memo.slot::<u8>("s"), 0);
    }
}
