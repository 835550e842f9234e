//! The JSON inside what a model wrote: code fences and sentences around the value.
//!
//! Models wrap arguments in Markdown fences (```` ```json ... ``` ````), announce them
//! ("Here is the JSON: {...}") or explain them afterwards. None of that is argument data, so
//! it is cut before the truncation check (an apostrophe in "Hope that's useful" is not an
//! unclosed string) and before repair (which would turn each sentence into a string value).

use super::scan::{matching, quoted};

/// The part of `text` that holds the value: the inside of its code fences (several fenced
/// blocks become one value per line, which repair reads as an array), without a sentence
/// before the value or after it. `text` itself, trimmed, when there is nothing to cut.
pub(super) fn isolate(text: &str) -> String {
    let t = text.trim();
    let starts_value = t.starts_with(['{', '[']);
    if !starts_value && t.contains("```") {
        let blocks = fenced_blocks(t);
        if !blocks.is_empty() {
            return blocks.join("\n");
        }
    }
    let t = strip_closing_fence(t);
    let t = if starts_value { t } else { after_preamble(t) };
    before_epilogue(t).trim().to_string()
}

/// The contents of the fenced blocks in `text`: from each opening fence (three or more
/// backticks and an optional language word) to the next fence or the end.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = rest[open..].trim_start_matches('`');
        let language = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-')))
            .unwrap_or(after.len());
        // A word right after the fence names the language only when a line break or a blank
        // follows it: in "```{"a": 1}```" there is none.
        let body = match after[language..].chars().next() {
            Some(c) if language > 0 && c.is_whitespace() => &after[language..],
            None if language > 0 => "",
            _ => after,
        };
        let end = body.find("```").unwrap_or(body.len());
        let block = body[..end].trim();
        if !block.is_empty() {
            blocks.push(block);
        }
        rest = body[end..].trim_start_matches('`');
        if end == body.len() {
            break;
        }
    }
    blocks
}

/// `text` without a fence that closes it (` ```` ` after a value whose opening fence was never
/// written).
fn strip_closing_fence(text: &str) -> &str {
    let trimmed = text.trim_end_matches('`');
    if text.len() - trimmed.len() >= 3 {
        trimmed.trim_end()
    } else {
        text
    }
}

/// `text` from its first bracket when what comes before is a sentence: it starts with a
/// letter, holds no quote or parenthesis (so a JSONP wrapper `callback({...})` or an unquoted
/// string stays whole), has two words, a line break or a colon, and ends with a colon or a
/// blank.
fn after_preamble(text: &str) -> &str {
    let Some(open) = text.find(['{', '[']) else {
        return text;
    };
    let preamble = &text[..open];
    // A list bullet (`- {...}`) is no value either.
    if !preamble.is_empty() && preamble.chars().all(|c| matches!(c, '-' | '*' | ' ')) {
        return &text[open..];
    }
    // One word before a bracket (`callback {}`) is no sentence: it is refused as garbage.
    let words = preamble.split_whitespace().count();
    let sentence = preamble.starts_with(|c: char| c.is_alphabetic())
        && !preamble.contains(['"', '(', ')', '`'])
        && (preamble.trim_end().ends_with(':') || preamble.contains('\n') || words >= 2)
        && preamble.ends_with(|c: char| c == ':' || c.is_whitespace());
    if sentence { &text[open..] } else { text }
}

/// `text` up to the end of its first bracketed value when a sentence follows it (text that
/// starts with a letter on a new line, or two words after a blank); `text` when the value is not closed or something
/// else follows (another value, a comma: repair decides what those mean).
fn before_epilogue(text: &str) -> &str {
    if !text.starts_with(['{', '[']) {
        return text;
    }
    let mask = quoted(text);
    let Some(end) = matching(text.as_bytes(), &mask, 0) else {
        return text;
    };
    // A sentence, not a stray word glued to the value (`{"a":2}foo` is refused).
    let after = &text[end + 1..];
    let rest = after.trim_start();
    let gap = &after[..after.len() - rest.len()];
    let sentence = rest.starts_with(|c: char| c.is_alphabetic())
        && (gap.contains('\n') || (!gap.is_empty() && rest.split_whitespace().nth(1).is_some()));
    if sentence { &text[..=end] } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_sentences_are_cut() {
        for (text, want) in [
            ("```json\n{\"a\": 1}\n```", "{\"a\": 1}"),
            ("````{ \"key\": \"value\" }```", "{ \"key\": \"value\" }"),
            ("{\"a\": \"b\"\n}```", "{\"a\": \"b\"\n}"),
            (
                "Here is the output: ```json { 'a': 'b' } ``` Done.",
                "{ 'a': 'b' }",
            ),
            (
                "Here is your JSON:\n{\"a\": [1]}\nHope that's useful.",
                "{\"a\": [1]}",
            ),
            (
                "lorem ```json {\"a\":1} ``` ipsum ```json [1] ``` 42",
                "{\"a\":1}\n[1]",
            ),
            ("Sure!\n{}", "{}"),
            (" - { \"a\": [1] }", "{ \"a\": [1] }"),
        ] {
            assert_eq!(isolate(text), want, "{text:?}");
        }
    }

    #[test]
    fn wrappers_and_values_stay_whole() {
        for text in [
            "callback_123({\"a\": 1});",
            "{\"a\": 1} {\"b\": 2}",
            "{\"a\": 1}, \"b\": 2}",
            "{\"a\": \"x\"} // note",
            "{\"a\": \"cut",
            "abc",
            "{\"a\":2}foo",
            "{\"a\":2} foo",
            "callback {}",
        ] {
            assert_eq!(isolate(text), text, "{text:?}");
        }
    }
}
