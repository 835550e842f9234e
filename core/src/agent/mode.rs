//! Act-first or talk-first, chosen per turn by a simple, predictable heuristic.
//!
//! A turn is act-first when the user's message reads like a request to do something:
//!
//! 1. it contains one of [`ACTION_WORDS`] as a word (schedule, send, book, create, ...), or
//! 2. it contains a word of four letters or more that is also a word of a tool's name
//!    (`network_schedule_meeting` gives `network`, `schedule`, `meeting`; `camelCase` and
//!    `kebab-case` split too), compared case-insensitively, a trailing `s` ignored.
//!
//! Otherwise it is talk-first: the reply streams at once. Apps that know better pass the mode
//! for the turn themselves.

use super::options::Mode;
use crate::spec::ToolSpec;

/// Verbs that mark a message as a request to act.
pub const ACTION_WORDS: &[&str] = &[
    "schedule",
    "book",
    "send",
    "create",
    "add",
    "remove",
    "delete",
    "cancel",
    "update",
    "set",
    "move",
    "confirm",
    "search",
    "find",
    "look",
    "lookup",
    "check",
    "get",
    "fetch",
    "list",
    "show",
    "open",
    "upload",
    "save",
    "email",
    "invite",
    "resolve",
    "remind",
    "calculate",
    "compute",
    "convert",
    "translate",
    "summarize",
    "plan",
    "buy",
    "order",
    "pay",
    "reply",
];

fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            // camelCase: a capital after a lowercase letter starts a word.
            if c.is_uppercase() && prev_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase();
            current.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn stem(w: &str) -> &str {
    w.strip_suffix('s').filter(|s| s.len() >= 3).unwrap_or(w)
}

/// The mode for a turn whose user message is `message`.
pub fn choose_mode(message: &str, tools: &[ToolSpec]) -> Mode {
    let said = words(message);
    if said.iter().any(|w| ACTION_WORDS.contains(&stem(w))) {
        return Mode::ActFirst;
    }
    let tool_words: Vec<String> = tools
        .iter()
        .flat_map(|t| words(&t.name))
        .filter(|w| w.len() >= 4)
        .collect();
    if said
        .iter()
        .filter(|w| w.len() >= 4)
        .any(|w| tool_words.iter().any(|t| stem(t) == stem(w)))
    {
        Mode::ActFirst
    } else {
        Mode::TalkFirst
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actions_and_tool_words_are_act_first() {
        let tools = [ToolSpec::new(
            "network_scheduleMeeting",
            "",
            json!({"type": "object"}),
        )];
        assert_eq!(
            choose_mode("Can you set a half-hour meeting with Aviad?", &tools),
            Mode::ActFirst
        );
        assert_eq!(choose_mode("any meetings tomorrow", &tools), Mode::ActFirst);
        assert_eq!(
            choose_mode("Thanks, that is lovely!", &tools),
            Mode::TalkFirst
        );
        assert_eq!(choose_mode("How are you?", &tools), Mode::TalkFirst);
    }
}
