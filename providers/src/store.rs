//! Where snapshots and exports live: a local folder, `file://`, `s3://` or `memory://` URL
//! turned into one [`ObjectStore`] and a path prefix inside it, the same interface DataFusion's
//! readers and writers use.
//!
//! - A plain path or `file:///abs/path`: the local file system (writes appear whole: a file is
//!   staged beside its name and renamed when complete).
//! - `s3://bucket/prefix`: Amazon S3 or an S3-compatible server, configured by the standard AWS
//!   environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, and
//!   `AWS_ENDPOINT_URL` with `AWS_ALLOW_HTTP=true` for a server such as moto or MinIO on
//!   loopback).
//! - `memory://name/prefix`: an in-memory store that lives as long as the process, one per
//!   `name` (for tests).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use url::Url;

/// A URL quarry cannot read or write, with the reason.
#[derive(Debug, thiserror::Error)]
#[error("cannot use {url}: {reason}")]
pub struct StoreError {
    /// The URL as given.
    pub url: String,
    /// Why.
    pub reason: String,
}

/// An object store and a prefix in it: what a snapshot or export URL names.
#[derive(Debug, Clone)]
pub struct Location {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// The store's URL as DataFusion registers it (`scheme://authority`).
    pub store_url: Url,
    /// The prefix inside the store (no leading or trailing `/`).
    pub prefix: Path,
    /// The URL as the user wrote it, for messages.
    pub display: String,
}

impl Location {
    /// `relative` under this location's prefix.
    pub fn child(&self, relative: &str) -> Path {
        let mut parts: Vec<String> = self
            .prefix
            .parts()
            .map(|p| p.as_ref().to_string())
            .collect();
        parts.extend(
            relative
                .split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_string),
        );
        Path::from_iter(parts)
    }

    /// The URL of `path` (a path inside the store), as DataFusion's readers take it.
    pub fn url_of(&self, path: &Path) -> String {
        let base = self.store_url.as_str();
        if base.ends_with('/') {
            format!("{base}{path}")
        } else {
            format!("{base}/{path}")
        }
    }

    /// Whether this is the local file system.
    pub fn is_local(&self) -> bool {
        self.store_url.scheme() == "file"
    }
}

/// In-memory stores by name, for the life of the process.
static MEMORY: LazyLock<Mutex<HashMap<String, Arc<InMemory>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The location `target` names (see the module docs for the forms).
pub fn locate(target: &str) -> Result<Location, StoreError> {
    let error = |reason: String| StoreError {
        url: target.to_string(),
        reason,
    };
    if !target.contains("://") {
        let absolute = std::path::absolute(target).map_err(|e| error(e.to_string()))?;
        return local(target, &absolute);
    }
    let url = Url::parse(target).map_err(|e| error(e.to_string()))?;
    match url.scheme() {
        "file" => {
            let path = url
                .to_file_path()
                .map_err(|()| error("not a local file URL".into()))?;
            local(target, &path)
        }
        "s3" | "s3a" => {
            let bucket = url
                .host_str()
                .filter(|b| !b.is_empty())
                .ok_or_else(|| error("an s3:// URL names a bucket: s3://bucket/prefix".into()))?;
            let store = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| error(e.to_string()))?;
            Ok(Location {
                store: Arc::new(store),
                store_url: Url::parse(&format!("s3://{bucket}"))
                    .map_err(|e| error(e.to_string()))?,
                prefix: Path::from(url.path()),
                display: target.to_string(),
            })
        }
        "memory" => {
            let name = url.host_str().unwrap_or_default().to_string();
            let store = {
                let mut stores = MEMORY.lock().unwrap_or_else(|p| p.into_inner());
                Arc::clone(stores.entry(name.clone()).or_default())
            };
            Ok(Location {
                store,
                store_url: Url::parse(&format!("memory://{name}"))
                    .map_err(|e| error(e.to_string()))?,
                prefix: Path::from(url.path()),
                display: target.to_string(),
            })
        }
        other => Err(error(format!(
            "the scheme {other}:// is not supported (use a path, file://, s3:// or memory://)"
        ))),
    }
}

fn local(target: &str, path: &std::path::Path) -> Result<Location, StoreError> {
    let error = |reason: String| StoreError {
        url: target.to_string(),
        reason,
    };
    let prefix = Path::from_absolute_path(path).map_err(|e| error(e.to_string()))?;
    Ok(Location {
        store: Arc::new(LocalFileSystem::new()),
        store_url: Url::parse("file://").map_err(|e| error(e.to_string()))?,
        prefix,
        display: target.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn forms_of_a_location() {
        let local = locate("/tmp/x/snap").unwrap();
        assert!(local.is_local());
        assert_eq!(local.prefix.as_ref(), "tmp/x/snap");
        assert_eq!(
            local.url_of(&local.child("a/b.parquet")),
            "file:///tmp/x/snap/a/b.parquet"
        );
        let memory = locate("memory://t1/some/prefix").unwrap();
        assert_eq!(memory.store_url.as_str(), "memory://t1");
        assert_eq!(memory.child("f").as_ref(), "some/prefix/f");
        assert!(
            locate("ftp://host/x")
                .unwrap_err()
                .to_string()
                .contains("ftp://")
        );
        assert!(locate("s3:///nobucket").is_err());
    }
}
