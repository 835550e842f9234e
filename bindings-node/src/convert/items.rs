//! Reading a JSON array the JS layer built item by item, one item at a time, when the whole
//! does not read: one item the core cannot read (a lone surrogate in a string, nesting past
//! what `serde_json` reads) must fail alone, never its neighbours.

/// The items of the outer array of `text`, found by matching brackets outside strings (no
/// recursion, so any depth): `None` when the text is not an array.
pub fn split(text: &str) -> Option<Vec<&str>> {
    let body = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (mut items, mut start, mut depth) = (Vec::new(), 0, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in body.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !body[start..].trim().is_empty() {
        items.push(&body[start..]);
    }
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_top_level_commas_only() {
        assert_eq!(
            split(r#"[1, "a,]\"[", {"b": [2, 3]}, [4]]"#).unwrap(),
            vec!["1", r#" "a,]\"[""#, r#" {"b": [2, 3]}"#, " [4]"]
        );
        assert_eq!(split("[]").unwrap(), Vec::<&str>::new());
        assert!(split("{}").is_none());
        assert!(split("[1]]]").is_none());
    }
}
