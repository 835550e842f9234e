//! What the JS layer receives per wake-up: the drained queue as one JSON text, read by
//! `#take` in `lib/dispatch.mjs`.
//!
//! The text is an array of slots, `[done, calls, runs, callers, aborts, asks]`. A slot with
//! nothing in it is `0`, and the empty slots at the end are left out, so a drain that only
//! ends a batch is `[[..]]`. Keys and empty lists are what the first form (an object of six
//! lists) spent its time on: V8 internalizes every key it parses and builds an array for
//! every list, and a one-call batch's two drains took 0.9 and 1.1 µs to parse, a fifth of the
//! batch from Node.
//!
//! - `done`: `[id, true, result]` per driven batch that ended (its result as
//!   `convert/rows.rs` writes it, put in as it is), `[id, false, why]` per one that failed.
//! - `calls`: `[token, toolIndex, callId, attempt, caller, args, run, appKey, listened,
//!   calls]` per handler call; `caller` indexes the JS layer's table of callers, `run` the
//!   `runs` slot. `listened`: whether anyone hears its progress; `calls`: whether it may call
//!   tools.
//! - `runs`: the distinct run ids of the drained calls.
//! - `callers`: `[base, caller, ..]` when the calls name callers the JS layer does not hold
//!   yet: it keeps the first `base` entries of its table and appends these. The table lasts
//!   across drains because an app's batches mostly run for the same few callers, and a
//!   caller (six keys, two lists and a map) cost more to parse than a call.
//! - `aborts`: tokens whose signal must fire.
//! - `asks`: `[token, "hook" | "resolver" | "predicate" | "http_auth", index, request]` per
//!   call of another app function.

use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use tooljig::Caller;

/// How many callers the table holds before a drain starts it over: enough for an app's few
/// service callers, few enough that a server running every batch for another user does not
/// keep a long list the JS layer holds too.
const CALLERS_KEPT: usize = 16;

/// One handler call waiting for the JS thread.
pub struct Request {
    /// What the JS layer settles the call by.
    pub token: u64,
    /// The handler's index in the JS layer's table.
    pub tool: u32,
    /// The rest of the call's `ToolContext`.
    pub call_id: Arc<str>,
    pub attempt: u32,
    pub caller: Arc<Caller>,
    pub run_id: Arc<str>,
    pub app_key: Option<Arc<str>>,
    /// The arguments, written out when the call was queued.
    pub args: Box<RawValue>,
    /// Whether anyone hears the call's progress.
    pub listened: bool,
    /// Whether the call may call tools.
    pub calls: bool,
}

/// A call of another app function (policy hook, resolver) waiting for the JS thread.
pub struct Ask {
    /// What the JS layer settles the call by.
    pub token: u64,
    /// Which function to call.
    pub function: AppFunction,
    /// Its one argument.
    pub request: Value,
}

/// The app functions other than handlers the JS layer keeps.
#[derive(Clone, Copy)]
pub enum AppFunction {
    /// The engine's policy hook.
    PolicyHook,
    /// The resolver at this index of the JS layer's resolver table.
    Resolver(u32),
    /// The engine's approval predicate.
    ApprovalPredicate,
    /// The auth hook at this index of the JS layer's auth table (MCP servers, inboxes).
    HttpAuth(u32),
}

/// The callers the JS layer holds, at the same indexes as its table.
#[derive(Default)]
pub struct Callers {
    held: Vec<Arc<Caller>>,
}

impl Callers {
    /// The index of `caller` in the table, adding it when no equal one is there. `fresh` is
    /// where this drain's additions start, once it makes any.
    fn index(&mut self, caller: &Arc<Caller>, fresh: &mut Option<usize>) -> usize {
        if let Some(i) = self.held.iter().position(|c| Arc::ptr_eq(c, caller)) {
            return i;
        }
        if let Some(i) = self.held.iter().position(|c| **c == **caller) {
            // The same caller in a new batch: held by its new pointer, so that the batch's
            // other calls find it without comparing.
            self.held[i] = caller.clone();
            return i;
        }
        fresh.get_or_insert(self.held.len());
        self.held.push(caller.clone());
        self.held.len() - 1
    }
}

/// A JSON array of slots, written in order: `0` for an empty one, the empty ones at the end
/// left out.
struct Slots {
    text: Vec<u8>,
    skipped: usize,
}

impl Slots {
    fn new(capacity: usize) -> Self {
        let mut text = Vec::with_capacity(capacity);
        text.push(b'[');
        Slots { text, skipped: 0 }
    }

    fn put(&mut self, empty: bool, write: impl FnOnce(&mut Vec<u8>)) {
        if empty {
            self.skipped += 1;
            return;
        }
        for _ in 0..std::mem::take(&mut self.skipped) {
            self.separate();
            self.text.push(b'0');
        }
        self.separate();
        write(&mut self.text);
    }

    fn separate(&mut self) {
        if self.text.len() > 1 {
            self.text.push(b',');
        }
    }

    fn finish(mut self) -> String {
        self.text.push(b']');
        // Only UTF-8 went in: serde_json's output and the batches' result texts.
        String::from_utf8(self.text)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Writes `value` as JSON; the values here (serde_json's own, strings, numbers) always write.
fn json(text: &mut Vec<u8>, value: &impl serde::Serialize) {
    if serde_json::to_writer(&mut *text, value).is_err() {
        text.extend_from_slice(b"null");
    }
}

/// What one drain hands the JS layer.
pub struct Drain<'a> {
    /// `(id, ok, text)` per driven batch that ended: its result, or why it has none, as JSON.
    pub done: &'a [(u64, bool, String)],
    /// Handler calls to start.
    pub calls: &'a [Request],
    /// Other app functions to call.
    pub asks: &'a [Ask],
    /// Calls whose signal must fire.
    pub aborts: &'a [u64],
}

impl Drain<'_> {
    /// Whether there is nothing to hand over.
    pub fn is_empty(&self) -> bool {
        self.done.is_empty()
            && self.calls.is_empty()
            && self.asks.is_empty()
            && self.aborts.is_empty()
    }

    /// The drain's text (see the module's docs), naming callers by their place in `callers`,
    /// which it updates as the JS layer will.
    pub fn text(&self, callers: &mut Callers) -> String {
        if callers.held.len() >= CALLERS_KEPT {
            callers.held.clear();
        }
        let mut fresh = None;
        let mut runs: Vec<&str> = Vec::new();
        let rows: Vec<_> = self
            .calls
            .iter()
            .map(|r| {
                let caller = callers.index(&r.caller, &mut fresh);
                let run = match runs.iter().position(|&id| id == &*r.run_id) {
                    Some(i) => i,
                    None => {
                        runs.push(&r.run_id);
                        runs.len() - 1
                    }
                };
                (
                    r.token,
                    r.tool,
                    &*r.call_id,
                    r.attempt,
                    caller,
                    &*r.args,
                    run,
                    r.app_key.as_deref(),
                    r.listened,
                    r.calls,
                )
            })
            .collect();
        let done_bytes: usize = self.done.iter().map(|(_, _, t)| t.len() + 16).sum();
        let mut slots = Slots::new(64 + done_bytes + rows.len() * 96);
        slots.put(self.done.is_empty(), |text| {
            text.push(b'[');
            for (i, (id, ok, body)) in self.done.iter().enumerate() {
                if i > 0 {
                    text.push(b',');
                }
                text.push(b'[');
                json(text, id);
                text.extend_from_slice(if *ok { b",true," } else { b",false," });
                text.extend_from_slice(body.as_bytes());
                text.push(b']');
            }
            text.push(b']');
        });
        slots.put(rows.is_empty(), |text| json(text, &rows));
        slots.put(runs.is_empty(), |text| json(text, &runs));
        slots.put(fresh.is_none(), |text| {
            let base = fresh.unwrap_or(0);
            text.push(b'[');
            json(text, &base);
            for caller in &callers.held[base..] {
                text.push(b',');
                // Written as serde writes it: every key of a `Caller` is one word, the same
                // in camelCase, and its attributes are the app's data.
                json(text, &**caller);
            }
            text.push(b']');
        });
        slots.put(self.aborts.is_empty(), |text| json(text, &self.aborts));
        slots.put(self.asks.is_empty(), |text| {
            let asks: Vec<_> = self
                .asks
                .iter()
                .map(|a| match a.function {
                    AppFunction::PolicyHook => (a.token, "hook", 0, &a.request),
                    AppFunction::Resolver(i) => (a.token, "resolver", i, &a.request),
                    AppFunction::ApprovalPredicate => (a.token, "predicate", 0, &a.request),
                    AppFunction::HttpAuth(i) => (a.token, "http_auth", i, &a.request),
                })
                .collect();
            json(text, &asks);
        });
        slots.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(token: u64, caller: &Arc<Caller>, run: &str) -> Request {
        Request {
            token,
            tool: 0,
            call_id: format!("c{token}").into(),
            attempt: 1,
            caller: caller.clone(),
            run_id: run.into(),
            app_key: None,
            args: RawValue::from_string(r#"{"q":"x"}"#.into()).unwrap(),
            listened: false,
            calls: false,
        }
    }

    fn read(text: String) -> Value {
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn empty_slots_are_zero_and_left_out_at_the_end() {
        let mut callers = Callers::default();
        let drain = |done: &[(u64, bool, String)], aborts: &[u64]| {
            Drain {
                done,
                calls: &[],
                asks: &[],
                aborts,
            }
            .text(&mut Callers::default())
        };
        let ended = [
            (
                1,
                true,
                r#"[{"results":[]},[["c\"1",0]],["t"]]"#.to_string(),
            ),
            (2, false, Value::String("it \"failed\"".into()).to_string()),
        ];
        assert_eq!(
            read(drain(&ended, &[])),
            json!([[[1, true, [{"results": []}, [["c\"1", 0]], ["t"]]], [2, false, "it \"failed\""]]])
        );
        assert_eq!(drain(&[], &[3]), "[0,0,0,0,[3]]");
        let nothing = Drain {
            done: &[],
            calls: &[],
            asks: &[],
            aborts: &[],
        };
        assert!(nothing.is_empty());
        assert_eq!(nothing.text(&mut callers), "[]");
    }

    #[test]
    fn callers_are_sent_once_and_named_by_their_place_after() {
        let mut callers = Callers::default();
        let ana = Arc::new(Caller::principal("ana"));
        let bo = Arc::new(Caller::principal("bo"));
        let first = [call(1, &ana, "r1"), call(2, &bo, "r1"), call(3, &ana, "r1")];
        let text = read(
            Drain {
                done: &[],
                calls: &first,
                asks: &[],
                aborts: &[],
            }
            .text(&mut callers),
        );
        let indexes: Vec<&Value> = text[1].as_array().unwrap().iter().map(|c| &c[4]).collect();
        assert_eq!(indexes, [&json!(0), &json!(1), &json!(0)]);
        assert_eq!(text[2], json!(["r1"]));
        assert_eq!(text[3][0], json!(0));
        assert_eq!(text[3][1]["principal"], "ana");
        assert_eq!(text[3][2]["principal"], "bo");
        // A new batch for an equal caller (another pointer) names it by its place; a new
        // caller is appended after the table's two.
        let again = Arc::new(Caller::principal("bo"));
        let cy = Arc::new(Caller::principal("cy"));
        let second = [call(4, &again, "r2"), call(5, &cy, "r2")];
        let text = read(
            Drain {
                done: &[],
                calls: &second,
                asks: &[],
                aborts: &[],
            }
            .text(&mut callers),
        );
        assert_eq!(text[1][0][4], 1);
        assert_eq!(text[1][1][4], 2);
        assert_eq!(text[3], json!([2, Caller::principal("cy")]));
        // Nothing new: no callers slot.
        let third = [call(6, &ana, "r3")];
        let text = Drain {
            done: &[],
            calls: &third,
            asks: &[],
            aborts: &[],
        }
        .text(&mut callers);
        assert_eq!(read(text).as_array().unwrap().len(), 3);
    }

    #[test]
    fn a_full_table_starts_over_at_a_drain() {
        let mut callers = Callers::default();
        let many: Vec<_> = (0..CALLERS_KEPT + 2)
            .map(|i| call(i as u64, &Arc::new(Caller::principal(format!("p{i}"))), "r"))
            .collect();
        let drain = |calls: &[Request], callers: &mut Callers| {
            read(
                Drain {
                    done: &[],
                    calls,
                    asks: &[],
                    aborts: &[],
                }
                .text(callers),
            )
        };
        // One drain may hold more callers than the table keeps; the next starts over.
        let text = drain(&many, &mut callers);
        assert_eq!(text[3].as_array().unwrap().len(), CALLERS_KEPT + 3);
        let text = drain(&many[..1], &mut callers);
        assert_eq!(text[3], json!([0, Caller::principal("p0")]));
        assert_eq!(text[1][0][4], 0);
    }
}
