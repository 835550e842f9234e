//! JSON text with camelCase keys, written straight from serde.
//!
//! The rule of `keys.rs` (rename the binding's own keys, never the data) applied while
//! serializing: a serde_json formatter that renames the keys of the objects at the paths of a
//! [`Shape`] (the table in `shape.rs`) and writes everything else as serde_json would; it
//! gives the bytes `keys::to_js` gives for the same shape. Results cross to JS on the hot path;
//! turning them into a `Value` tree, renaming it and printing it cost ten times more than
//! serializing them once.

use super::shape::{self, Shape};
use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};
use std::borrow::Cow;
use std::io::{self, Write};

/// `value` as JSON text, the keys of the objects at `shape`'s paths in camelCase.
pub fn to_camel_json<T: Serialize + ?Sized>(value: &T, shape: Shape) -> String {
    let mut out = Vec::with_capacity(256);
    let formatter = CamelKeys {
        shape,
        path: Vec::new(),
        renames: Vec::new(),
        key: String::new(),
        in_key: false,
        next: Next::Root,
    };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Only a failing `Serialize` impl can fail here; the core's types have none.
    if value.serialize(&mut serializer).is_err() {
        return "null".into();
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Where the next value sits in its container.
#[derive(Clone, Copy, PartialEq)]
enum Next {
    Root,
    /// Under the key last written (kept in `CamelKeys::key`).
    Key,
    /// An array element.
    Element,
}

struct CamelKeys {
    shape: Shape,
    /// The path of the innermost open container: keys, and `*` for array elements.
    path: Vec<Cow<'static, str>>,
    /// Per open container: whether its keys are renamed.
    renames: Vec<bool>,
    /// The key being written, or the last one written.
    key: String,
    in_key: bool,
    next: Next,
}

impl CamelKeys {
    /// Enters a container that starts here; `object` says whether its keys may be renamed.
    fn enter(&mut self, object: bool) {
        match self.next {
            Next::Root => {}
            Next::Key => self.path.push(Cow::Owned(self.key.clone())),
            Next::Element => self.path.push(Cow::Borrowed("*")),
        }
        let renames = object && shape::renames(self.shape, &self.path);
        self.renames.push(renames);
    }

    fn leave(&mut self) {
        self.renames.pop();
        self.path.pop();
    }

    fn renaming_key(&self) -> bool {
        self.in_key && self.renames.last().copied().unwrap_or(false)
    }
}

/// Writes `snake_case` as `snakeCase`; a leading `_` stays.
fn write_camel<W: ?Sized + Write>(writer: &mut W, key: &str) -> io::Result<()> {
    let mut upper = false;
    let mut start = true;
    let mut buf = [0u8; 1];
    for &b in key.as_bytes() {
        if b == b'_' && !start {
            upper = true;
            continue;
        }
        start = false;
        buf[0] = if upper { b.to_ascii_uppercase() } else { b };
        upper = false;
        writer.write_all(&buf)?;
    }
    Ok(())
}

impl Formatter for CamelKeys {
    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.enter(true);
        CompactFormatter.begin_object(writer)
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.leave();
        CompactFormatter.end_object(writer)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.enter(false);
        CompactFormatter.begin_array(writer)
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.leave();
        CompactFormatter.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.next = Next::Element;
        CompactFormatter.begin_array_value(writer, first)
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.in_key = true;
        self.key.clear();
        CompactFormatter.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.in_key = false;
        self.next = Next::Key;
        CompactFormatter.end_object_key(writer)
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if self.in_key {
            self.key.push_str(fragment);
            if self.renaming_key() {
                return write_camel(writer, fragment);
            }
        }
        writer.write_all(fragment.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renames_only_the_objects_named() {
        let v = json!({
            "run_id": "r",
            "results": [
                {"call_id": "a", "envelope": {"ok": true, "data": {"user_id": 1}},
                 "approval": {"arguments_hash": "h", "requested_by": {"principal_id": "p"}},
                 "arguments": {"snake_key": [{"deep_key": 1}]}},
                {"call_id": "b\"q", "hidden": [{"supplied": "x_y"}]}
            ],
            "rollback": {"entries": [{"call_id": "a", "the_data": {"a_b": 1}}]},
            "_private": 1
        });
        let text = to_camel_json(
            &v,
            &[
                "",
                "results/*",
                "results/*/approval",
                "rollback",
                "rollback/entries/*",
            ],
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            json!({
                "runId": "r",
                "results": [
                    {"callId": "a", "envelope": {"ok": true, "data": {"user_id": 1}},
                     "approval": {"argumentsHash": "h", "requestedBy": {"principal_id": "p"}},
                     "arguments": {"snake_key": [{"deep_key": 1}]}},
                    {"callId": "b\"q", "hidden": [{"supplied": "x_y"}]}
                ],
                "rollback": {"entries": [{"callId": "a", "theData": {"a_b": 1}}]},
                "_private": 1
            })
        );
    }

    #[test]
    fn agrees_with_renaming_a_value_of_the_same_shape() {
        use crate::convert::{keys, shape};
        let v = json!({"duration_us": 3, "results": [], "nested_obj": {"inner_key": null}});
        let text = to_camel_json(&v, &[""]);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            keys::to_js(v, &[""])
        );
        let batch = json!({"run_id": "r", "results": [{"call_id": "a",
            "envelope": {"ok": true, "data": {"user_id": 1}}, "approval": {"arguments_hash": "h"}}],
            "rollback": {"run_id": "r", "entries": [{"call_id": "a", "the_data": {"a_b": 1}}]}});
        let text = to_camel_json(&batch, shape::BATCH);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            keys::to_js(batch, shape::BATCH)
        );
    }
}
