//! The hash a file is archived under, chained over 256 KiB chunks so that a grown file is
//! checked without reading it whole.
//!
//! The chain starts from a fixed seed; each full chunk of [`CHUNK`] bytes gives the next link,
//! `blake3(link ‖ chunk)`; the hash is `blake3(last link ‖ the partial chunk)` (the partial chunk
//! may be empty). The archive keeps the hash and the last two links (`source_files.chunks`), so
//! the cheap check of a file that grew reads only its last full chunk, the partial one and what
//! was appended: it catches a truncation, a rewritten tail and any change to those two chunks.
//! A change further back that keeps the length (or grows the file) goes unseen until a full
//! verification (`quarry ingest --verify`, and the watcher's periodic one) reads it whole.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes per chunk.
pub const CHUNK: usize = 256 * 1024;

/// A link of the chain.
type Link = [u8; 32];

fn seed() -> Link {
    *blake3::hash(b"quarry chunk chain v1").as_bytes()
}

fn link(previous: &Link, data: &[u8]) -> Link {
    let mut h = blake3::Hasher::new();
    h.update(previous);
    h.update(data);
    *h.finalize().as_bytes()
}

fn hex(link: &Link) -> String {
    blake3::Hash::from_bytes(*link).to_hex().to_string()
}

fn unhex(text: &str) -> Option<Link> {
    blake3::Hash::from_hex(text).ok().map(|h| *h.as_bytes())
}

/// A file's archived identity: its size, its chained hash, and the links the cheap check of its
/// next version starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// Bytes covered.
    pub size: u64,
    /// The chained hash (hex).
    pub hash: String,
    /// The link before the last full chunk and the link after it (two hex values, 128 chars).
    pub links: String,
}

impl Chain {
    /// The chain of `bytes`.
    pub fn of(bytes: &[u8]) -> Chain {
        let seed = seed();
        Chain::continued(&seed, &seed, bytes, 0)
    }

    /// The chain of a file whose first `full` chunks end in link `last` (`previous` before it),
    /// followed by `rest`.
    fn continued(previous: &Link, last: &Link, rest: &[u8], full: u64) -> Chain {
        let (mut previous, mut last) = (*previous, *last);
        let mut chunks = rest.chunks_exact(CHUNK);
        let mut count = full;
        for chunk in &mut chunks {
            previous = last;
            last = link(&last, chunk);
            count += 1;
        }
        let partial = chunks.remainder();
        Chain {
            size: count * CHUNK as u64 + partial.len() as u64,
            hash: hex(&link(&last, partial)),
            links: format!("{}{}", hex(&previous), hex(&last)),
        }
    }
}

/// How a file stands against its archived chain, from the cheap check.
#[derive(Debug)]
pub enum Checked {
    /// Same size and the last chunks match.
    Unchanged,
    /// It grew and the archived prefix's last chunks match: the bytes from `from` to the end,
    /// and the chain of the whole file.
    Grew {
        from: u64,
        bytes: Vec<u8>,
        chain: Chain,
    },
    /// It shrank, or the archived prefix's last chunks changed.
    Rewritten,
}

/// The cheap check of the file at `path` against the archived `archived` chain (`links` as
/// stored). It reads from the start of the archived prefix's last full chunk (or `want`, when
/// the caller needs earlier bytes) to the end of the file, and returns how many bytes it read.
/// `None` when the stored links are not a chain's (the caller reads the file whole).
pub fn check(path: &Path, archived: &Chain, want: u64) -> std::io::Result<Option<(Checked, u64)>> {
    let (Some(previous), Some(last)) = (
        archived.links.get(..64).and_then(unhex),
        archived.links.get(64..).and_then(unhex),
    ) else {
        return Ok(None);
    };
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size < archived.size {
        return Ok(Some((Checked::Rewritten, 0)));
    }
    let full = archived.size / CHUNK as u64;
    let verify_from = full.saturating_sub(1) * CHUNK as u64;
    let from = verify_from.min(want);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity((size - from) as usize);
    file.take(size - from).read_to_end(&mut bytes)?;
    let read = bytes.len() as u64;
    let at = |offset: u64| bytes.get((offset - from) as usize..);
    let archived_end = (archived.size - from) as usize;
    let last_full_start = full * CHUNK as u64;
    // The last full chunk, then the partial one.
    let full_ok = full == 0
        || at(verify_from)
            .and_then(|b| b.get(..CHUNK))
            .is_some_and(|chunk| link(&previous, chunk) == last);
    let partial_ok = full_ok
        && bytes
            .get((last_full_start - from) as usize..archived_end)
            .is_some_and(|partial| hex(&link(&last, partial)) == archived.hash);
    if !partial_ok {
        return Ok(Some((Checked::Rewritten, read)));
    }
    if size == archived.size {
        return Ok(Some((Checked::Unchanged, read)));
    }
    let rest = at(last_full_start).unwrap_or_default();
    let chain = Chain::continued(&previous, &last, rest, full);
    Ok(Some((Checked::Grew { from, bytes, chain }, read)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(dir: &Path, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join("f.jsonl");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_continued_chain_equals_the_chain_of_the_whole() {
        let data: Vec<u8> = (0..(3 * CHUNK + 777)).map(|i| (i % 251) as u8).collect();
        for cut in [0, 10, CHUNK - 1, CHUNK, CHUNK + 5, 2 * CHUNK, 3 * CHUNK + 1] {
            let dir = tempfile::tempdir().unwrap();
            let path = write(dir.path(), &data);
            let archived = Chain::of(&data[..cut]);
            let (checked, read) = check(&path, &archived, u64::MAX).unwrap().unwrap();
            let Checked::Grew { chain, from, .. } = checked else {
                panic!("cut {cut}: {checked:?}");
            };
            assert_eq!(chain, Chain::of(&data), "cut {cut}");
            assert_eq!(read, data.len() as u64 - from);
            assert!(
                from + 2 * CHUNK as u64 >= cut as u64,
                "cut {cut} read from {from}"
            );
        }
    }

    #[test]
    fn truncation_and_rewrites_of_the_last_chunks_are_caught() {
        let data: Vec<u8> = (0..(2 * CHUNK + 100)).map(|i| (i % 13) as u8).collect();
        let archived = Chain::of(&data);
        let dir = tempfile::tempdir().unwrap();
        // Unchanged.
        let path = write(dir.path(), &data);
        let (checked, _) = check(&path, &archived, u64::MAX).unwrap().unwrap();
        assert!(matches!(checked, Checked::Unchanged));
        // Truncated.
        write(dir.path(), &data[..data.len() - 1]);
        let (checked, _) = check(&path, &archived, u64::MAX).unwrap().unwrap();
        assert!(matches!(checked, Checked::Rewritten));
        // The same length, one byte of the last full chunk changed.
        let mut same = data.clone();
        same[CHUNK + 3] ^= 1;
        write(dir.path(), &same);
        let (checked, _) = check(&path, &archived, u64::MAX).unwrap().unwrap();
        assert!(matches!(checked, Checked::Rewritten));
        // The tail rewritten and grown.
        let mut grown = data[..data.len() - 10].to_vec();
        grown.extend_from_slice(&[9u8; 50]);
        write(dir.path(), &grown);
        let (checked, _) = check(&path, &archived, u64::MAX).unwrap().unwrap();
        assert!(matches!(checked, Checked::Rewritten));
        // A change before the last two chunks goes unseen by the cheap check (documented).
        let mut early = data.clone();
        early[5] ^= 1;
        write(dir.path(), &early);
        let (checked, read) = check(&path, &archived, u64::MAX).unwrap().unwrap();
        assert!(matches!(checked, Checked::Unchanged));
        assert_eq!(read, (CHUNK + 100) as u64);
    }
}
