//! Stopping a request's SQLite work when the request goes away (a time limit, a client that
//! hung up): its blocking reads would otherwise run to their end after nobody awaits them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Stops a request's SQLite work when the request goes away: [`Interrupt::install`] on each of
/// its connections, and hold [`Interrupt::on_drop`] in the async part that awaits the work. A
/// request past its time limit is dropped, so its connections stop within
/// [`INTERRUPT_CHECK_STEPS`] steps (the read answers SQLite's `interrupted`, which nobody awaits).
#[derive(Debug, Clone, Default)]
pub(crate) struct Interrupt(Arc<AtomicBool>);

/// SQLite virtual machine steps between checks of an [`Interrupt`].
pub(crate) const INTERRUPT_CHECK_STEPS: std::os::raw::c_int = 100_000;

impl Interrupt {
    /// Makes `conn` stop when the interrupt is set.
    pub(crate) fn install(&self, conn: &rusqlite::Connection) {
        let flag = self.0.clone();
        conn.progress_handler(
            INTERRUPT_CHECK_STEPS,
            Some(move || flag.load(Ordering::Relaxed)),
        );
    }

    /// A guard that sets the interrupt when dropped (with the future holding it).
    pub(crate) fn on_drop(&self) -> InterruptOnDrop {
        InterruptOnDrop(self.0.clone())
    }
}

/// Sets its [`Interrupt`] when dropped.
pub(crate) struct InterruptOnDrop(Arc<AtomicBool>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_interrupt_stops_a_long_sqlite_read_once_its_guard_is_dropped() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let interrupt = Interrupt::default();
        interrupt.install(&conn);
        let guard = interrupt.on_drop();
        let endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                       SELECT count(*) FROM n";
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(guard);
        });
        let err = conn
            .query_row(endless, [], |r| r.get::<_, i64>(0))
            .unwrap_err();
        stopper.join().unwrap();
        assert_eq!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::OperationInterrupted),
            "{err}"
        );
    }
}
