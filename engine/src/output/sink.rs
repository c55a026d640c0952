//! Where an encoder's writers put their bytes: one growable buffer shared with the
//! [`super::Encoder`] that drains it after each step, so arrow's and parquet's writers (which
//! own their `Write`) can be used for streaming.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A shared byte buffer: writers append, [`Sink::take`] drains.
#[derive(Debug, Clone, Default)]
pub struct Sink(Arc<Mutex<Vec<u8>>>);

impl Sink {
    /// The bytes written since the last call.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Appends `bytes`.
    pub fn push(&self, bytes: &[u8]) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.push(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
