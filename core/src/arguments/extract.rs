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
    if let Some(value) = escaped_value(t) {
        return value;
    }
    let starts_value = t.starts_with(['{', '[']);
    if !starts_value && t.contains("```") {
        let blocks = fenced_blocks(t);
        if !blocks.is_empty() {
            return blocks.join("\n");
        }
    }
    let t = strip_closing_fence(t);
    let value = if starts_value { t } else { after_preamble(t) };
    before_epilogue(value, value.len() < t.len())
        .trim()
        .to_string()
}

/// The value of a text that is a whole object or array written with every quote escaped
/// (`{\"a\": 1}`, a JSON string's contents without its quotes), unescaped.
fn escaped_value(text: &str) -> Option<String> {
    if !(text.starts_with("{\\\"") || text.starts_with("[\\\"")) {
        return None;
    }
    serde_json::from_str(&format!("\"{text}\"")).ok()
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
/// string stays whole), has two words, a line break, or ends its sentence (`:`, `!`, `.`), and ends with a colon or a
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
        && (preamble.trim_end().ends_with([':', '!', '.'])
            || preamble.contains('\n')
            || words >= 2)
        && preamble.ends_with(|c: char| c == ':' || c.is_whitespace());
    if sentence { &text[open..] } else { text }
}

/// `text` up to the end of its first bracketed value when a sentence or a closing fence
/// follows it (see [`is_epilogue`]); `text` when the value is not closed or something else
/// follows (another value, a comma: repair decides what those mean). `after_prose` says a
/// sentence before the value was cut, so one word after it is a sentence's end too.
fn before_epilogue(text: &str, after_prose: bool) -> &str {
    if !text.starts_with(['{', '[']) {
        return text;
    }
    let mask = quoted(text);
    let Some(end) = matching(text.as_bytes(), &mask, 0) else {
        return text;
    };
    let after = &text[end + 1..];
    if is_epilogue(after, after_prose) {
        &text[..=end]
    } else {
        text
    }
}

/// Whether `after`, what follows a closed value, is no part of it: a closing fence (and
/// whatever follows the fence), sentence punctuation (`.`, `!`), a sentence led by a dash or
/// a parenthesis, or words: on a new line, two after a blank, or one when a sentence came
/// before the value. A stray word glued to the value (`{"a":2}foo`) is none, so it stays
/// refused.
fn is_epilogue(after: &str, after_prose: bool) -> bool {
    let rest = after.trim_start();
    let gap = &after[..after.len() - rest.len()];
    if rest.starts_with("```") || (!rest.is_empty() && rest.chars().all(|c| ".!?".contains(c))) {
        return true;
    }
    let words = rest.trim_start_matches(['.', '!', '?', '-', '\u{2013}', '\u{2014}', '(']);
    if words.len() < rest.len() {
        return words.starts_with(|c: char| c.is_whitespace() || c.is_alphabetic())
            && words.contains(char::is_alphabetic);
    }
    rest.starts_with(char::is_alphabetic)
        && (gap.contains('\n')
            || (!gap.is_empty() && (after_prose || rest.split_whitespace().nth(1).is_some())))
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
            ("{\"x\": 1}\n```\nHope this helps", "{\"x\": 1}"),
            ("Here you go: {\"a\": 1} thanks!", "{\"a\": 1}"),
            ("The result: {\"a\": \"b\"}. Is that ok?", "{\"a\": \"b\"}"),
            (
                "Sent: {\"m\": \"it's\"} - hope that's right.",
                "{\"m\": \"it's\"}",
            ),
            ("Answer: [1, 2] (two items)", "[1, 2]"),
            ("{\\\"a\\\": \\\"b\\\"}", "{\"a\": \"b\"}"),
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
