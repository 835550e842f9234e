//! The head of an audit log, written out of band: how many records it holds and the last
//! one's hash, replaced after every commit.
//!
//! A hash chain, keyed or not, cannot show that records were cut off its end: what is left
//! still links. Kept somewhere the database's attacker cannot reach as well (another volume,
//! another machine, an append-only bucket), the anchor can: `verify` holds the log to it,
//! and a sink refuses to open a log that is shorter than its anchor says. With a
//! [`SealKey`] the anchor carries a MAC, so it cannot be forged to match a cut log either.

use crate::guard::audit::AuditError;
use crate::seal::SealKey;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What an anchor file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// How many records the log held (the last one's sequence number).
    pub records: u64,
    /// The last record's hash.
    pub hash: String,
    /// HMAC over `records` and `hash` under the seal key, when the log has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

impl Anchor {
    fn mac_parts(records: u64, hash: &str) -> [Vec<u8>; 3] {
        [
            b"tooljig-audit-anchor".to_vec(),
            records.to_string().into_bytes(),
            hash.as_bytes().to_vec(),
        ]
    }

    fn sealed(records: u64, hash: &str, key: Option<&SealKey>) -> Anchor {
        let mac = key.map(|k| {
            let parts = Anchor::mac_parts(records, hash);
            k.mac(&parts.each_ref().map(Vec::as_slice))
        });
        Anchor {
            records,
            hash: hash.to_string(),
            mac,
        }
    }

    fn checks(&self, key: Option<&SealKey>) -> bool {
        match (key, &self.mac) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(k), Some(mac)) => {
                let parts = Anchor::mac_parts(self.records, &self.hash);
                k.verify(&parts.each_ref().map(Vec::as_slice), mac)
            }
        }
    }

    /// Whether a log whose last record is `last` (sequence number and hash) can be the log
    /// this anchor was written for: it holds at least as many records, and the anchored one
    /// where the anchor says when it ends there. Records after the anchored one are a
    /// commit whose anchor was not yet replaced; `verify` checks the record at the anchor.
    pub fn admits(&self, last: Option<(u64, &str)>) -> Result<(), String> {
        let (seq, hash) = last.unwrap_or((0, ""));
        if seq < self.records {
            return Err(format!(
                "the log ends after record {seq} but its anchor says {} were written: records were removed from the end",
                self.records
            ));
        }
        if seq == self.records && seq > 0 && hash != self.hash {
            return Err(format!(
                "record {seq} is not the one the anchor holds: the log was cut back and written again"
            ));
        }
        Ok(())
    }
}

/// Where a sink keeps its anchor.
#[derive(Debug, Clone)]
pub struct AnchorFile {
    path: PathBuf,
    key: Option<SealKey>,
    sync: bool,
}

impl AnchorFile {
    /// The anchor at `path`, sealed with `key` when given; `sync` makes every write durable
    /// against an operating-system crash (an fsync of the file and its directory).
    pub fn new(path: impl Into<PathBuf>, key: Option<SealKey>, sync: bool) -> Self {
        AnchorFile {
            path: path.into(),
            key,
            sync,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The anchor as stored; `None` when there is no file yet. Refused when the file is not
    /// an anchor or, with a key, its MAC does not check out.
    pub fn read(&self) -> Result<Option<Anchor>, AuditError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(AuditError::Storage(format!(
                    "cannot read the anchor {}: {e}",
                    self.path.display()
                )));
            }
        };
        let corrupt = |message: String| AuditError::Corrupt { seq: 0, message };
        let anchor: Anchor = serde_json::from_str(&text).map_err(|e| {
            corrupt(format!(
                "the anchor {} is not an anchor: {e}",
                self.path.display()
            ))
        })?;
        if !anchor.checks(self.key.as_ref()) {
            return Err(corrupt(format!(
                "the anchor {} does not carry a valid MAC under the seal key: it was altered or forged",
                self.path.display()
            )));
        }
        Ok(Some(anchor))
    }

    /// Checks a log whose last record is `last` against the stored anchor, before a sink
    /// continues it. A log with records and no anchor is refused too: the anchor may have
    /// been removed to hide a cut.
    pub fn admit(&self, last: Option<(u64, &str)>) -> Result<(), AuditError> {
        let refuse = |why: String| {
            AuditError::Storage(format!(
                "the audit log does not match its anchor {}: {why}; verify the log, and start a new one if it cannot be trusted",
                self.path.display()
            ))
        };
        match self.read()? {
            Some(anchor) => anchor.admits(last).map_err(refuse),
            None if last.is_some() => Err(refuse(
                "the log holds records but the anchor file is missing (removed, or the log was never anchored: anchor a log from its first record)".into(),
            )),
            None => Ok(()),
        }
    }

    /// Replaces the anchor with one for a log of `records` records ending in `hash`,
    /// atomically (a temporary file renamed over it).
    pub fn write(&self, records: u64, hash: &str) -> Result<(), AuditError> {
        let anchor = Anchor::sealed(records, hash, self.key.as_ref());
        let io = |e: std::io::Error| {
            AuditError::Storage(format!(
                "cannot write the anchor {}: {e}",
                self.path.display()
            ))
        };
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut file = std::fs::File::create(&tmp).map_err(io)?;
        let text = serde_json::to_string(&anchor).unwrap_or_default();
        file.write_all(text.as_bytes()).map_err(io)?;
        file.write_all(b"\n").map_err(io)?;
        if self.sync {
            file.sync_all().map_err(io)?;
        }
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(io)?;
        if self.sync
            && let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchor_admits_its_log_and_longer_ones_only() {
        let a = Anchor::sealed(3, "h3", None);
        assert!(a.admits(Some((3, "h3"))).is_ok());
        assert!(a.admits(Some((5, "h5"))).is_ok());
        assert!(a.admits(Some((2, "h2"))).is_err());
        assert!(a.admits(None).is_err());
        assert!(a.admits(Some((3, "other"))).is_err());
        assert!(Anchor::sealed(0, "", None).admits(None).is_ok());
    }

    #[test]
    fn a_keyed_anchor_cannot_be_forged() {
        let key = SealKey::new([1u8; 32]).unwrap();
        let a = Anchor::sealed(3, "h3", Some(&key));
        assert!(a.checks(Some(&key)));
        let forged = Anchor {
            records: 2,
            ..a.clone()
        };
        assert!(!forged.checks(Some(&key)));
        let unsealed = Anchor { mac: None, ..a };
        assert!(!unsealed.checks(Some(&key)));
    }
}
