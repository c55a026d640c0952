//! Shared helpers: locating `../shared` and reading the conformance TSV files.

use std::path::PathBuf;

/// The `shared` folder next to the workspace, or `None` (with a notice) when it is missing.
/// With `CI=true` a missing folder fails the test.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    if dir.join("conformance").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "../shared is missing at {} (required when CI=true)",
            dir.display()
        );
    }
    eprintln!(
        "notice: {} not found; skipping conformance tests",
        dir.display()
    );
    None
}

/// Rows of a TSV file as maps from header to value.
pub fn read_tsv(name: &str) -> Option<Vec<std::collections::HashMap<String, String>>> {
    let dir = shared_dir()?;
    let text = std::fs::read_to_string(dir.join("conformance").join(name)).expect("read tsv");
    let mut lines = text.lines();
    let header: Vec<String> = lines.next()?.split('\t').map(str::to_string).collect();
    Some(
        lines
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                header
                    .iter()
                    .cloned()
                    .zip(
                        l.split('\t')
                            .map(str::to_string)
                            .chain(std::iter::repeat(String::new())),
                    )
                    .collect()
            })
            .collect(),
    )
}

/// The positive expressions (for benches, fuzz seeds).
pub fn positives() -> Vec<String> {
    read_tsv("polylogue-positive.tsv")
        .unwrap_or_default()
        .into_iter()
        .map(|r| r["expression"].clone())
        .collect()
}
