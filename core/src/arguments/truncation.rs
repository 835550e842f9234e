//! Whether argument text was cut off: never run a call the model did not finish.
//!
//! A streamed call can end early (the token limit, a dropped connection). Closing the
//! brackets of such text would run the tool with arguments the model never finished, so a
//! text whose brackets are still open must end on a complete value. `docs/arguments.md`
//! has the table of verdicts.

use super::scan::comment_end;

/// Why the text looks cut off inside a value, if it does.
///
/// Missing closing brackets are repairable only when the last thing written is a complete
/// value: a closed string, a closed bracket, or a whole literal. A text ending inside a
/// string, after a key, a colon or a comma, or on a number or a partial word is cut off: a
/// number may have had more digits, a word more letters.
///
/// A quote inside a value string can be one the model forgot to escape (`"(72") tall"`) or
/// the string's end followed by a missing comma (`["a" 2]`). The text is read both ways and
/// counts as cut off only when both readings end inside something open.
pub fn truncation(text: &str) -> Option<&'static str> {
    let strict = scan(text, Quotes::EndAtFirst);
    strict?;
    scan(text, Quotes::EndWhereStringsMayEnd).and(strict)
}

/// How a quote inside a value string is read.
#[derive(Clone, Copy, PartialEq)]
enum Quotes {
    /// Every matching quote ends the string.
    EndAtFirst,
    /// A quote followed by what cannot follow a string is taken as unescaped text.
    EndWhereStringsMayEnd,
}

/// What the text held last, outside strings and comments.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    Nothing,
    Open,
    Colon,
    Comma,
    KeyString,
    ValueString,
    Close,
    Word,
}

fn scan(body: &str, quotes: Quotes) -> Option<&'static str> {
    let bytes = body.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    let mut last = Last::Nothing;
    let mut word = "";
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' | b'`' => {
                let expecting_key =
                    matches!(last, Last::Open | Last::Comma) && stack.last() == Some(&b'{');
                let mut j = i + 1;
                let mut closed = false;
                while j < bytes.len() {
                    if bytes[j] == b'\\' {
                        j += 2;
                        continue;
                    }
                    // A key ends at its first quote.
                    if bytes[j] == b
                        && (expecting_key
                            || quotes == Quotes::EndAtFirst
                            || closes_string(&bytes[j + 1..]))
                    {
                        closed = true;
                        break;
                    }
                    j += 1;
                }
                if !closed {
                    return Some("the text ends inside a string");
                }
                last = if expecting_key {
                    Last::KeyString
                } else {
                    Last::ValueString
                };
                i = j + 1;
                continue;
            }
            b'/' | b'#' if line_comment_at(bytes, i) => {
                i = comment_end(bytes, i);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                match body[i + 2..].find("*/") {
                    Some(end) => i += end + 4,
                    // A comment left open after the value closed holds nothing of it.
                    None if stack.is_empty() && last != Last::Nothing => return None,
                    None => return Some("the text ends inside a comment"),
                }
                continue;
            }
            b'{' | b'[' => {
                stack.push(b);
                last = Last::Open;
            }
            b'}' | b']' => {
                stack.pop();
                last = Last::Close;
            }
            b':' => last = Last::Colon,
            b',' => last = Last::Comma,
            c if c.is_ascii_whitespace() => {}
            _ => {
                let start = i;
                while i < bytes.len()
                    && !b"{}[],\"' \t\r\n".contains(&bytes[i])
                    && (bytes[i] != b':' || url_scheme_at(bytes, i))
                {
                    i += 1;
                }
                word = &body[start..i];
                last = Last::Word;
                // A quote glued to a word's end, before what may follow a string, closes a
                // string whose opening quote is missing (`{"a": b"}`, `{a": 1}`).
                let next = bytes[(i + 1).min(bytes.len())..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace());
                if bytes.get(i) == Some(&b'"')
                    && matches!(next, None | Some(b',' | b'}' | b']' | b':'))
                {
                    last = Last::ValueString;
                    i += 1;
                }
                continue;
            }
        }
        i += 1;
    }
    if stack.is_empty() {
        return None;
    }
    match last {
        Last::ValueString | Last::Close => None,
        Last::Word if matches!(word, "true" | "false" | "null" | "True" | "False" | "None") => None,
        Last::Word if word.parse::<f64>().is_ok() => {
            Some("the text ends on a number that may have had more digits")
        }
        Last::Word => Some("the text ends inside a word"),
        Last::KeyString => Some("the text ends after a key, before its value"),
        Last::Colon => Some("the text ends after a colon, before the value"),
        Last::Comma => Some("the text ends after a comma, before the next item"),
        Last::Open | Last::Nothing => Some("the text ends right after an opening bracket"),
    }
}

/// Whether a quote followed by `rest` ends its string: what comes next (after blanks) is the
/// end of the text or something that may follow a string in JSON (a separator, a closing
/// bracket, another string after a missing comma, a comment).
fn closes_string(rest: &[u8]) -> bool {
    match rest.iter().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(next) => matches!(next, b',' | b'}' | b']' | b':' | b'"' | b'\'' | b'/' | b'#'),
    }
}

/// Whether a line comment (`//` or `#`) starts at `i`: not the `//` of a URL (`https://`).
fn line_comment_at(bytes: &[u8], i: usize) -> bool {
    match bytes[i] {
        b'#' => true,
        _ => bytes.get(i + 1) == Some(&b'/') && !(i > 0 && url_scheme_at(bytes, i - 1)),
    }
}

/// Whether the `:` at `i` is the one of a URL scheme (`https://`): a letter before it and
/// `//` after it.
fn url_scheme_at(bytes: &[u8], i: usize) -> bool {
    bytes[i] == b':'
        && i > 0
        && bytes[i - 1].is_ascii_alphabetic()
        && bytes[i + 1..].starts_with(b"//")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_text_is_not_cut_off() {
        for text in [
            r#"["a" 2]"#,
            r#"{"text": "He is 6 feet (72") tall"}"#,
            r#"callback_123("foo");"#,
            r#"{"_id":ObjectId("123")}"#,
            "{url:https://www.example.com/}",
            "[https://www.example.com/,2]",
            "{} /* foo ",
            "{\"a\": 1 # note }",
            r#"{"a": 1 # note
}"#,
            r#"{"a": b"}"#,
            r#"{a": 1}"#,
            r#"{"a": hello world"}"#,
        ] {
            assert_eq!(truncation(text), None, "{text}");
        }
    }

    #[test]
    fn cut_off_text_is_named() {
        for (text, why) in [
            ("{\"a\": \"hel", "the text ends inside a string"),
            (
                "{\"a\": 12",
                "the text ends on a number that may have had more digits",
            ),
            ("{\"url\": https://exa", "the text ends inside a word"),
            ("{\"a\": 1 /* more", "the text ends inside a comment"),
            (
                "{\"a\": 1 # note",
                "the text ends on a number that may have had more digits",
            ),
        ] {
            assert_eq!(truncation(text), Some(why), "{text}");
        }
    }
}
