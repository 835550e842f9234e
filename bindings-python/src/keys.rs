//! The Python strings of JSON object keys, each made once: a tool's arguments and results
//! carry the same few keys call after call, and a string made afresh for each one cost its
//! decoding, its allocation and, once in a dict, its hash (about a third of converting a
//! small dict). pydantic-core and orjson keep such a cache for the same reason.
//!
//! Direct-mapped and bounded: each key hashes to one slot, which keeps the last key that
//! landed there. Long keys are not kept (they rarely repeat, and would make it large).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;
use std::hash::BuildHasher;
use std::sync::Mutex;

/// Slots in the cache (a power of two).
const SLOTS: usize = 1024;
/// Longest key kept, in bytes.
const LONGEST: usize = 48;

struct Cache {
    slots: Vec<Option<(Box<str>, Py<PyString>)>>,
    hasher: foldhash::fast::FixedState,
}

fn cache(py: Python<'_>) -> &Mutex<Cache> {
    static CACHE: PyOnceLock<Mutex<Cache>> = PyOnceLock::new();
    CACHE.get_or_init(py, || {
        Mutex::new(Cache {
            slots: (0..SLOTS).map(|_| None).collect(),
            hasher: foldhash::fast::FixedState::default(),
        })
    })
}

/// The Python string of the key `key`, from the cache when it was seen before.
pub(crate) fn key<'py>(py: Python<'py>, key: &str) -> Bound<'py, PyString> {
    if key.len() > LONGEST {
        return PyString::new(py, key);
    }
    let cache = cache(py);
    let slot = {
        let cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        let slot = cache.hasher.hash_one(key) as usize & (SLOTS - 1);
        if let Some((kept, string)) = &cache.slots[slot]
            && **kept == *key
        {
            return string.bind(py).clone();
        }
        slot
    };
    // Made and hashed outside the lock: interning calls into Python.
    let string = PyString::intern(py, key);
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    cache.slots[slot] = Some((key.into(), string.clone().unbind()));
    string
}
