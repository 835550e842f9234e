//! How a file-backed audit sink is opened: durability, seal key, anchor.

use crate::guard::audit::AuditError;
use crate::guard::audit::anchor::AnchorFile;
use crate::guard::audit::chain::{BrokenLink, Chain, ChainReport, Verifier};
use crate::seal::SealKey;
use std::path::{Path, PathBuf};

/// What a committed record survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A crash or kill of the process (WAL, `synchronous = NORMAL`).
    #[default]
    Process,
    /// Also an operating-system crash or power loss (`synchronous = FULL`).
    Os,
}

/// How a file-backed sink ([`SqliteAudit`](super::SqliteAudit),
/// [`JsonlAudit`](super::JsonlAudit)) is opened. The default is unkeyed, unanchored, and
/// durable against a crash of the process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditOptions {
    /// What a committed record survives.
    pub durability: Durability,
    /// Seals the chain with HMAC-SHA256 under this key: nobody without it can append or
    /// alter records undetected.
    pub key: Option<SealKey>,
    /// Where the log's head is written after every commit, out of band, so `verify` (and
    /// the next open) detects records cut off the end.
    pub anchor: Option<PathBuf>,
}

impl From<Durability> for AuditOptions {
    fn from(durability: Durability) -> Self {
        AuditOptions {
            durability,
            ..Default::default()
        }
    }
}

impl AuditOptions {
    /// These options with the chain sealed under `key`.
    pub fn key(mut self, key: SealKey) -> Self {
        self.key = Some(key);
        self
    }

    /// These options with the head anchored at `path`.
    pub fn anchor(mut self, path: impl Into<PathBuf>) -> Self {
        self.anchor = Some(path.into());
        self
    }

    /// The anchor file, when one is set.
    pub(crate) fn anchor_file(&self) -> Option<AnchorFile> {
        self.anchor
            .as_ref()
            .map(|p| AnchorFile::new(p, self.key.clone(), self.durability == Durability::Os))
    }

    /// A verifier for a log opened with these options: the key, and the anchor as its file
    /// holds it now. `Err` is the report when the anchor itself does not hold (altered,
    /// forged, unreadable).
    pub(crate) fn verifier(&self) -> Result<Verifier, ChainReport> {
        let anchor = match self.anchor_file().map(|a| a.read()).transpose() {
            Ok(a) => a.flatten(),
            Err(e) => {
                return Err(ChainReport {
                    records: 0,
                    broken: Some(BrokenLink {
                        seq: 0,
                        reason: e.to_string(),
                    }),
                });
            }
        };
        let missing = self.anchor.is_some() && anchor.is_none();
        let v = Verifier::new(self.key.clone(), anchor);
        Ok(if missing { v.anchor_missing() } else { v })
    }

    /// Where a stored log whose last record is `last` (sequence number, body, hash) goes on:
    /// its chain under these options' key, and its anchor. Refused when the log does not match
    /// its anchor (cut, or the anchor removed) or was sealed otherwise (another key, or none).
    pub(crate) fn continue_log(
        &self,
        path: &Path,
        last: Option<(u64, String, String)>,
    ) -> Result<(Chain, Option<AnchorFile>), AuditError> {
        let anchor = self.anchor_file();
        if let Some(a) = &anchor {
            a.admit(last.as_ref().map(|(seq, _, hash)| (*seq, hash.as_str())))?;
        }
        let chain = Chain::resume(last, self.key.clone()).map_err(|why| {
            AuditError::Storage(format!(
                "cannot continue the audit log {}: {why}",
                path.display()
            ))
        })?;
        Ok((chain, anchor))
    }
}
