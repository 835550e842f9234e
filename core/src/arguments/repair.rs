//! JSON repair: `jsonrepair-rs` with the gaps it leaves against the JS `jsonrepair` closed.
//!
//! Rewrites run before the crate sees the text, one retry after it fails:
//! - a backslash right before a line break inside a string (a shell-style line
//!   continuation) becomes the escape `\n`, where the crate drops both characters;
//! - Python collections standing as a value become arrays: a tuple `(1, 2)` and a set
//!   `{"a", "b"}` (braces holding no colon, one value between each comma);
//! - a number written with leading zeros (`05`, `00.`, `-05e`) standing alone as a value is
//!   quoted as written, where the crate first completes it (`00.0`, `05e0`) and then quotes
//!   that; a lone `.` is `0.0`, as the JS library's two dot rules (`.5`, `5.`) make it; a
//!   number that is none (`1/3`, `10-20`, `1.1.1`, `2abc`) is the string written, and
//!   digits grouped with `_` (`82_461_110`) are the number;
//! - members written inside an array (`["a": 1, "b": 2]`) become an object in it, and words
//!   wedged between two strings (`"title:"foo bar" AND x"`) keep their quotes as text;
//! - when the crate gives up at some position, a double quote shortly before it that ends a
//!   word and has another quote after it is taken as a quote the model forgot to escape
//!   (`"72" tall"`), escaped, and the repair retried: a bounded form of the backtracking the
//!   JS library does.
//!
//! `docs/arguments.md` reports the agreement this reaches on the jsonrepair corpus and on
//! cases it was not tuned to.

use super::scan::{Edit, apply, matching, quoted};
use serde_json::Value;
use std::borrow::Cow;

/// Most quotes escaped in one text before giving up.
const MAX_ESCAPED_QUOTES: usize = 4;
/// Candidate quotes tried before each failure position.
const CANDIDATES_PER_FAILURE: usize = 3;
/// Texts longer than this are not retried: each retry repairs the whole text again.
const MAX_RETRY_CHARS: usize = 64 * 1024;

/// Repairs `text` and parses the result.
pub fn repair(text: &str) -> Result<Value, String> {
    let prepared = continue_lines_in_strings(text);
    let prepared = python_collections(&prepared);
    let prepared = keyed_arrays(&prepared);
    let prepared = escape_wedged_quotes(&prepared);
    let prepared = normalize_lone_numbers(&prepared);
    let mut chars: Vec<char> = prepared.chars().collect();
    let mut first_error = None;
    for _ in 0..=MAX_ESCAPED_QUOTES {
        let error = match attempt(&chars) {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let position = error.0;
        first_error.get_or_insert(error.1);
        if chars.len() > MAX_RETRY_CHARS {
            break;
        }
        let Some(fixed) = escape_stray_quote(&chars, position) else {
            break;
        };
        chars = fixed;
    }
    Err(first_error.unwrap_or_else(|| "the text could not be repaired".into()))
}

/// One repair and parse; on failure the char position where the crate gave up (the end of
/// the text when the crate's output did not parse) and why.
fn attempt(chars: &[char]) -> Result<Value, (usize, String)> {
    let text: String = chars.iter().collect();
    let repaired = jsonrepair_rs::jsonrepair(&text).map_err(|e| (e.position, e.to_string()))?;
    serde_json::from_str(&repaired).map_err(|e| (chars.len(), e.to_string()))
}

/// The text with the nearest plausible stray quote before `position` escaped, if one of the
/// candidates makes the repair succeed, or the first candidate for the next round.
fn escape_stray_quote(chars: &[char], position: usize) -> Option<Vec<char>> {
    let end = position.min(chars.len().saturating_sub(1));
    let candidates: Vec<usize> = (1..=end)
        .rev()
        .filter(|&i| is_stray_quote_candidate(chars, i))
        .take(CANDIDATES_PER_FAILURE)
        .collect();
    let escaped = |i: usize| {
        let mut out = Vec::with_capacity(chars.len() + 1);
        out.extend_from_slice(&chars[..i]);
        out.push('\\');
        out.extend_from_slice(&chars[i..]);
        out
    };
    for &i in &candidates {
        let fixed = escaped(i);
        if attempt(&fixed).is_ok() {
            return Some(fixed);
        }
    }
    candidates.first().map(|&i| escaped(i))
}

/// A `"` wedged between a word and a closing character (not an opening quote, not the end
/// of a key or of a value followed by a space or comma) and followed somewhere by another
/// quote that can end the string instead.
fn is_stray_quote_candidate(chars: &[char], i: usize) -> bool {
    if chars[i] != '"' || escaped_at(chars, i) {
        return false;
    }
    // Inside a word on both sides: `72")`, `2"]`, `72""`. A quote before a colon ends a key,
    // one before a space or a comma may end a value; leaving those alone keeps refusals
    // refused (`{"a":2}foo"bar"` is not one long key).
    let before = chars[i - 1];
    if before.is_whitespace() || matches!(before, '{' | '[' | ',' | ':' | '"') {
        return false;
    }
    match chars.get(i + 1) {
        Some(c) if c.is_whitespace() || matches!(c, ':' | ',') => return false,
        _ => {}
    }
    chars[i + 1..]
        .iter()
        .enumerate()
        .any(|(k, &c)| c == '"' && !escaped_at(chars, i + 1 + k))
}

/// Whether the char at `i` is escaped by an odd run of backslashes before it.
fn escaped_at(chars: &[char], i: usize) -> bool {
    chars[..i].iter().rev().take_while(|&&c| c == '\\').count() % 2 == 1
}

/// Inside double-quoted strings, a backslash before a line break becomes `\n`.
fn continue_lines_in_strings(text: &str) -> String {
    if !text.contains("\\\n") && !text.contains("\\\r\n") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '"' => {
                in_string = !in_string;
                out.push(c);
            }
            '\\' if in_string => match it.peek() {
                Some('\n') => {
                    it.next();
                    out.push_str("\\n");
                }
                Some('\r') => {
                    it.next();
                    if it.peek() == Some(&'\n') {
                        it.next();
                    }
                    out.push_str("\\n");
                }
                Some(_) => {
                    out.push(c);
                    if let Some(next) = it.next() {
                        out.push(next);
                    }
                }
                None => out.push(c),
            },
            _ => out.push(c),
        }
    }
    out
}

/// Tuples and sets standing as a value (at the start, after `[`, `,`, `:` or `(`) rewritten
/// as arrays: `(1, 2)` is `[1, 2]`; `{1, 2}` is `[1, 2]` when the braces hold no colon and
/// each item between commas is one value (so `{"key" "value"}`, an object missing its colon,
/// stays an object). A parenthesis after a name (`callback(...)`, `ObjectId(...)`) is a call.
pub(super) fn python_collections(text: &str) -> Cow<'_, str> {
    if !text.contains('(') && !text.contains('{') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mask = quoted(text);
    let mut edits = Vec::new();
    let mut previous: Option<u8> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if mask[i] {
            continue;
        }
        let opens_value = matches!(previous, None | Some(b'[' | b',' | b':' | b'('));
        if opens_value
            && matches!(b, b'(' | b'{')
            && let Some(close) = matching(bytes, &mask, i)
            && (b == b'(' || is_set(bytes, &mask, i, close, previous.is_some()))
        {
            edits.push(Edit::new(i, i + 1, "["));
            edits.push(Edit::new(close, close + 1, "]"));
        }
        if matches!(b, b'"' | b'\'') {
            previous = Some(b'"');
        } else if !b.is_ascii_whitespace() {
            previous = Some(b);
        }
    }
    edits.sort_by_key(|e| e.start);
    apply(text, edits)
}

/// Whether the braces at `open..=close` hold a set: items, no colon at their own depth, and
/// one value between each pair of commas. A single value (`{"only"}`) is a set only `nested`
/// inside another value; alone it may be a key missing its value, which is refused.
fn is_set(bytes: &[u8], mask: &[bool], open: usize, close: usize, nested: bool) -> bool {
    let mut depth = 0usize;
    let mut items = 0usize;
    let mut tokens_in_item = 0usize;
    let mut in_token = false;
    for k in open + 1..close {
        if mask[k] {
            if !in_token {
                in_token = true;
                tokens_in_item += 1;
            }
            continue;
        }
        let b = bytes[k];
        match b {
            b'{' | b'[' | b'(' => {
                if depth == 0 {
                    tokens_in_item += 1;
                }
                depth += 1;
                in_token = true;
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            b':' => return false,
            b',' => {
                if tokens_in_item != 1 {
                    return false;
                }
                items += 1;
                tokens_in_item = 0;
                in_token = false;
            }
            b'"' | b'\'' => {}
            c if c.is_ascii_whitespace() => in_token = false,
            _ => {
                if !in_token {
                    in_token = true;
                    tokens_in_item += 1;
                }
            }
        }
    }
    (items > 0 && tokens_in_item <= 1) || (nested && items == 0 && tokens_in_item == 1)
}

/// Members written inside an array (`["a": 1, "b": 2]`, `["x", "k": "v"]`) wrapped in braces:
/// each run of items that start with a key and a colon becomes one object, as the Python
/// `json_repair` reads them, where the JS library turns each `: 1` into a string.
fn keyed_arrays(text: &str) -> Cow<'_, str> {
    if !text.contains('[') || !text.contains(':') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mask = quoted(text);
    let mut edits = Vec::new();
    for open in (0..bytes.len()).filter(|&i| bytes[i] == b'[' && !mask[i]) {
        let Some(close) = matching(bytes, &mask, open) else {
            continue;
        };
        let mut run: Option<(usize, usize)> = None;
        for (start, end) in items(bytes, &mask, open, close) {
            match (keyed_item(bytes, &mask, start, end), run) {
                (true, Some((first, _))) => run = Some((first, end)),
                (true, None) => run = Some((start, end)),
                (false, Some((first, last))) => {
                    edits.extend([Edit::new(first, first, "{"), Edit::new(last, last, "}")]);
                    run = None;
                }
                (false, None) => {}
            }
        }
        if let Some((first, last)) = run {
            edits.extend([Edit::new(first, first, "{"), Edit::new(last, last, "}")]);
        }
    }
    edits.sort_by_key(|e| e.start);
    apply(text, edits)
}

/// The items between the brackets at `open` and `close`, split at commas of their own depth,
/// each trimmed of blanks; empty items left out.
fn items(bytes: &[u8], mask: &[bool], open: usize, close: usize) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let (mut depth, mut start) = (0usize, open + 1);
    for k in open + 1..=close {
        if mask[k] {
            continue;
        }
        match bytes[k] {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' if k < close => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {}
            _ if k == close => {}
            _ => continue,
        }
        if (bytes[k] == b',' && depth == 0) || k == close {
            let (mut s, mut e) = (start, k);
            while s < e && bytes[s].is_ascii_whitespace() {
                s += 1;
            }
            while e > s && bytes[e - 1].is_ascii_whitespace() {
                e -= 1;
            }
            if s < e {
                found.push((s, e));
            }
            start = k + 1;
        }
    }
    found
}

/// Whether the item at `start..end` is a member: a quoted key, a colon, and a value after it.
fn keyed_item(bytes: &[u8], mask: &[bool], start: usize, end: usize) -> bool {
    if bytes[start] != b'"' && bytes[start] != b'\'' {
        return false;
    }
    let Some(key_end) = (start + 1..end).find(|&k| !mask[k]) else {
        return false;
    };
    let after = bytes[key_end + 1..end]
        .iter()
        .position(|b| !b.is_ascii_whitespace());
    after.is_some_and(|p| bytes[key_end + 1 + p] == b':' && key_end + 2 + p < end)
}

/// Both quotes around words wedged between two strings (`"title:"foo bar" AND"`, `"Re:
/// "Q3" report"`) escaped: nothing separates the words from the strings, so the quotes are
/// ones the model forgot to escape, where repair would make the words a key.
fn escape_wedged_quotes(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mask = quoted(text);
    let mut edits = Vec::new();
    let mut k = 1;
    while k + 1 < bytes.len() {
        let closes = bytes[k] == b'"' && !mask[k] && (mask[k - 1] || bytes[k - 1] == b'"');
        let words_end = (k + 1..bytes.len()).find(|&e| bytes[e] == b'"');
        if let (true, Some(e)) = (closes, words_end)
            && wedged(&text[k + 1..e])
            && mask.get(e + 1).copied().unwrap_or(false)
            && bytes[e + 1] != b':'
        {
            edits.extend([Edit::new(k, k + 1, "\\\""), Edit::new(e, e + 1, "\\\"")]);
            k = e + 1;
            continue;
        }
        k += 1;
    }
    apply(text, edits)
}

/// Words glued to quotes on both sides: letters, digits and blanks between them, so no
/// separator, operator (`"a"+"b"`) or bracket that repair reads otherwise.
fn wedged(words: &str) -> bool {
    !words.is_empty()
        && !words.starts_with(char::is_whitespace)
        && !words.ends_with(char::is_whitespace)
        && words.chars().all(|c| c.is_alphanumeric() || c == ' ')
}

/// Rewrites broken numbers that stand alone as a value (after `[`, `,`, `:` or the start;
/// before `]`, `}`, `,` or the end) the way the JS `jsonrepair` reads them: a number with
/// leading zeros (JSON has none) becomes the string it was written as, a lone `.` or `-.`
/// becomes `0.0` or `-0.0`.
fn normalize_lone_numbers(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut spans: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    let mut in_string: Option<u8> = None;
    let mut last_significant: Option<u8> = None;
    let mut before_colon = b' ';
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = in_string {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == q {
                in_string = None;
                last_significant = Some(b);
            }
            i += 1;
            continue;
        }
        match b {
            b'"' | b'\'' => in_string = Some(b),
            b'-' | b'.' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                // Letters, slashes and the like glued to the digits belong to the token.
                let glued = (i..bytes.len())
                    .find(|&k| {
                        bytes[k].is_ascii_whitespace()
                            || b",]}):\"'".contains(&bytes[k])
                            || (bytes[k] == b'/' && matches!(bytes.get(k + 1), Some(b'*' | b'/')))
                    })
                    .unwrap_or(bytes.len())
                    - i;
                let numeric_start = bytes[start].is_ascii_digit()
                    || bytes.get(start + 1).is_some_and(u8::is_ascii_digit);
                if glued > 0 && numeric_start {
                    i += glued;
                }
                let token = &text[start..i];
                let digits = token.strip_prefix('-').unwrap_or(token);
                let leading_zero = digits.len() > 1
                    && digits.starts_with('0')
                    && digits.as_bytes()[1].is_ascii_digit();
                // After a colon that follows a digit (`18:35:22Z`) the number is part of a
                // longer unquoted value, not a value of its own.
                let opens = matches!(last_significant, None | Some(b'[' | b',' | b':'))
                    && !(last_significant == Some(b':') && before_colon.is_ascii_digit());
                let next = bytes[i..].iter().find(|c| !c.is_ascii_whitespace());
                let closes = matches!(next, None | Some(b']' | b'}' | b','));
                if opens && closes {
                    if let Some(replacement) =
                        numeric_start.then(|| written_number(token)).flatten()
                    {
                        spans.push((start, i, replacement));
                    } else if leading_zero {
                        spans.push((start, i, format!("\"{token}\"")));
                    } else if digits == "." {
                        // `.5` gains a leading zero and `5.` a trailing one; a lone dot both.
                        spans.push((start, i, format!("{}0.0", &token[..token.len() - 1])));
                    }
                }
                last_significant = Some(b'0');
                continue;
            }
            c if c.is_ascii_whitespace() => {}
            c => {
                if c == b':' {
                    before_colon = last_significant.unwrap_or(b' ');
                }
                last_significant = Some(c);
            }
        }
        i += 1;
    }
    if spans.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 4 * spans.len());
    let mut at = 0;
    for (s, e, replacement) in spans {
        out.push_str(&text[at..s]);
        out.push_str(&replacement);
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// What a token that starts like a number stands for when it is none the crate completes:
/// digits grouped with `_` are the number; text with a slash, letters other than an
/// exponent, two dots or a sign inside (`1/3`, `2abc`, `1.1.1`, `10-20`) is the string
/// written. `None` for numbers and for what the crate repairs itself (`2.`, `2e`, `.5`).
fn written_number(token: &str) -> Option<String> {
    if serde_json::from_str::<serde_json::Number>(token).is_ok() {
        return None;
    }
    let ungrouped = token.replace('_', "");
    if token.contains('_')
        && !token.contains("__")
        && !token.ends_with('_')
        && serde_json::from_str::<serde_json::Number>(&ungrouped).is_ok()
    {
        return Some(ungrouped);
    }
    let body = token.strip_prefix('-').unwrap_or(token);
    let exponent = body.find(['e', 'E']);
    let mantissa = &body[..exponent.unwrap_or(body.len())];
    let odd = body
        .contains(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
        || mantissa.matches('.').count() > 1
        || mantissa.contains(['+', '-'])
        || body.matches(['e', 'E']).count() > 1
        || exponent.is_some_and(|e| body[e + 1..].contains('.'));
    odd.then(|| serde_json::to_string(token).expect("a string serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stray_quotes_are_escaped() {
        for (text, want) in [
            (r#"{ "height": "(5'3")" }"#, json!({"height": "(5'3\")"})),
            (
                r#""He is six feet (72") tall""#,
                json!("He is six feet (72\") tall"),
            ),
            (
                r#""the list [1, 2"] more""#,
                json!("the list [1, 2\"] more"),
            ),
            (r#""The TV is 72"""#, json!("The TV is 72\"")),
        ] {
            assert_eq!(repair(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn unrepairable_text_stays_refused() {
        for text in [
            r#"{"a","#,
            r#"{"a" ]"#,
            r#"{"a":2}foo"#,
            "{:2}",
            "",
            r#""\u26""#,
        ] {
            assert!(repair(text).is_err(), "{text}");
        }
    }

    #[test]
    fn line_continuations_become_newlines() {
        assert_eq!(
            repair("\"first\\\nsecond\"").unwrap(),
            json!("first\nsecond")
        );
        assert_eq!(
            continue_lines_in_strings("{\"a\": 1}\\\n"),
            "{\"a\": 1}\\\n"
        );
    }

    #[test]
    fn python_collections_become_arrays() {
        assert_eq!(repair("(1, 2)").unwrap(), json!([1, 2]));
        assert_eq!(
            repair("{\"a\": (1, \"x\")}").unwrap(),
            json!({"a": [1, "x"]})
        );
        assert_eq!(
            repair("{\"s\": {'a', 'b'}}").unwrap(),
            json!({"s": ["a", "b"]})
        );
        assert_eq!(
            repair("{\"s\": {\"only\"}, \"n\": [{1}]}").unwrap(),
            json!({"s": ["only"], "n": [[1]]})
        );
        assert!(repair("{\"only\"}").is_err());
        assert_eq!(
            repair("{\"k\" \"v\", \"k2\" \"v2\"}").unwrap(),
            json!({"k": "v", "k2": "v2"})
        );
        assert_eq!(
            repair("callback_123({\"a\": 1});").unwrap(),
            json!({"a": 1})
        );
    }

    #[test]
    fn members_inside_arrays_become_objects() {
        for (text, want) in [
            ("[\"a\": 1, \"b\": 2]", json!([{"a": 1, "b": 2}])),
            ("[\"x\", \"k\": \"v\"]", json!(["x", {"k": "v"}])),
            (
                "{\"m\": [\"k\": [1], \"j\": {}]}",
                json!({"m": [{"k": [1], "j": {}}]}),
            ),
            ("[\"https://x.org\", 2]", json!(["https://x.org", 2])),
        ] {
            assert_eq!(repair(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn words_wedged_between_quotes_stay_in_their_string() {
        for (text, want) in [
            (
                r#"{"q": "title:"foo bar" AND x"}"#,
                json!({"q": "title:\"foo bar\" AND x"}),
            ),
            (
                r#"{"s": "Re: "Q3" report"}"#,
                json!({"s": "Re: \"Q3\" report"}),
            ),
            (r#""a"+"b""#, json!("ab")),
            (r#"{"a":"b,c,"d":"e"}"#, json!({"a": "b,c", "d": "e"})),
        ] {
            assert_eq!(repair(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn numbers_that_are_none_stay_as_written() {
        for (text, want) in [
            ("{\"k\": 1/3}", json!({"k": "1/3"})),
            ("{\"k\": 10-20, \"f\": 1}", json!({"k": "10-20", "f": 1})),
            ("{\"k\": 1.1.1}", json!({"k": "1.1.1"})),
            ("[1, 2abc]", json!([1, "2abc"])),
            ("{\"v\": 82_461_110}", json!({"v": 82461110})),
            ("{\"v\": 1_234.5_6}", json!({"v": 1234.56})),
            ("{\"v\": 2e3.4}", json!({"v": "2e3.4"})),
        ] {
            assert_eq!(repair(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn leading_zero_numbers_stay_as_written() {
        assert_eq!(repair("[05e]").unwrap(), json!(["05e"]));
        assert_eq!(repair("00.").unwrap(), json!("00."));
        assert_eq!(repair("[., -.]").unwrap(), json!([0.0, -0.0]));
        assert_eq!(repair("[1, 2, ...]").unwrap(), json!([1, 2]));
        assert_eq!(
            repair("{\"n\": 05, \"m\": 0.5}").unwrap(),
            json!({"n": "05", "m": 0.5})
        );
        assert_eq!(
            normalize_lone_numbers("{\"id\": \"007\", x: 0}"),
            "{\"id\": \"007\", x: 0}"
        );
    }
}
