//! A quote-aware view of argument text, shared by the rewrites that run before repair.
//!
//! Each rewrite finds spans to replace outside (or inside) quoted strings and hands them to
//! [`apply`]; none of them parses JSON, so they work on text the crate cannot read yet.

use std::borrow::Cow;

/// A replacement of the bytes `start..end` of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Edit {
    pub start: usize,
    pub end: usize,
    pub with: String,
}

impl Edit {
    pub fn new(start: usize, end: usize, with: impl Into<String>) -> Self {
        Edit {
            start,
            end,
            with: with.into(),
        }
    }
}

/// `text` with `edits` (sorted, not overlapping) applied; borrowed when there are none.
pub(super) fn apply(text: &str, edits: Vec<Edit>) -> Cow<'_, str> {
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8 * edits.len());
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.start]);
        out.push_str(&e.with);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// For each byte, whether it lies inside a quoted string (the quotes themselves do not).
///
/// A string opens with `"` or with a `'` that does not follow a letter or digit (so the
/// apostrophe of `won't` in an unquoted word opens nothing), and closes at the same quote
/// unescaped. An unclosed string runs to the end.
pub(super) fn quoted(text: &str) -> Vec<bool> {
    let bytes = text.as_bytes();
    let mut mask = vec![false; bytes.len()];
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == q {
                    quote = None;
                } else {
                    mask[i] = true;
                    if b == b'\\' && i + 1 < bytes.len() {
                        mask[i + 1] = true;
                        i += 1;
                    }
                }
            }
            None => {
                let apostrophe = b == b'\'' && i > 0 && bytes[i - 1].is_ascii_alphanumeric();
                if (b == b'"' || b == b'\'') && !apostrophe {
                    quote = Some(b);
                }
            }
        }
        i += 1;
    }
    mask
}

/// Where a line comment (`//` or `#`) starting at `i` ends: at its line break, or before
/// the first closing bracket it did not open itself, so that one-line output
/// (`{"a": {"b": 1 # note }, "c": 2}`) keeps the brackets and keys after the note.
pub(super) fn comment_end(bytes: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    for (k, &b) in bytes.iter().enumerate().skip(i) {
        match b {
            b'\n' | b'\r' => return k,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return k,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    bytes.len()
}

/// The index of the bracket closing the one at `open`, skipping strings and counting only
/// brackets of the same kind, if the text closes it.
pub(super) fn matching(bytes: &[u8], mask: &[bool], open: usize) -> Option<usize> {
    let (o, c) = match bytes[open] {
        b'(' => (b'(', b')'),
        b'[' => (b'[', b']'),
        _ => (b'{', b'}'),
    };
    let mut depth = 0usize;
    for k in open..bytes.len() {
        if mask[k] {
            continue;
        }
        if bytes[k] == o {
            depth += 1;
        } else if bytes[k] == c {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_apostrophes() {
        let t = r#"{'a': "b\"c", w: won't}"#;
        let m = quoted(t);
        let inside: String = t
            .char_indices()
            .filter(|(i, _)| m[*i])
            .map(|(_, c)| c)
            .collect();
        assert_eq!(inside, r#"ab\"c"#);
    }

    #[test]
    fn edits_apply_in_order() {
        let out = apply("(1, 2)", vec![Edit::new(0, 1, "["), Edit::new(5, 6, "]")]);
        assert_eq!(out, "[1, 2]");
        assert!(matches!(apply("x", vec![]), Cow::Borrowed(_)));
    }
}
