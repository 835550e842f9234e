//! Step 1 and 2 of a call's path: plan the batch.
//!
//! Names are resolved, arguments parsed, and the dependency graph built from three
//! sources: declared `depends_on`, `{"$from": ...}` references in the arguments, and the
//! per-tool `after` ordering. Calls in a cycle, or naming an unknown call, are refused
//! before anything runs; the rest of the batch proceeds.

use crate::arguments::{Limits, parse_arguments};
use crate::call::{Call, CallResult};
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::registry::{RegisteredTool, Snapshot};
use foldhash::{HashMap, HashMapExt};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// The key that marks a reference to an earlier result inside arguments.
pub const FROM_KEY: &str = "$from";
/// The optional JSON pointer beside [`FROM_KEY`], into the earlier call's `data`.
pub const POINTER_KEY: &str = "pointer";

/// One call that passed planning.
pub struct Node {
    /// The call's id.
    pub id: Arc<str>,
    /// The resolved tool.
    pub tool: Arc<RegisteredTool>,
    /// Parsed arguments, references not yet substituted.
    pub arguments: Value,
    /// Whether parsing repaired them.
    pub repaired: bool,
    /// Indices of the calls this one waits for.
    pub deps: Vec<usize>,
    /// The part of `deps` that only orders this call (a tool's `after`): a failure there
    /// does not refuse it, unlike a declared dependency or a reference.
    pub order_only: Vec<usize>,
    /// Whether any reference must be substituted at start.
    pub has_refs: bool,
    /// Run even if a dependency failed.
    pub run_if_dependency_failed: bool,
}

/// A planned batch: per call, either a node ready to schedule or a refusal.
pub struct Plan {
    /// In call order.
    pub entries: Vec<Entry>,
}

/// A call after planning.
pub enum Entry {
    /// Will run once its dependencies finish.
    Ready(Node),
    /// Refused during planning (boxed: a result is several times the size of a node).
    Refused(Box<CallResult>),
}

impl Plan {
    /// Plans `calls` against a registry snapshot. A call without an id is named by its
    /// place, `call_{i}`, as a batch names it.
    pub fn build(
        calls: &[Call],
        tools: &Snapshot,
        limits: &Limits,
        max_calls: Option<usize>,
        visible: &dyn Fn(&crate::spec::ToolSpec) -> bool,
    ) -> Plan {
        // A batch numbers its calls before planning (`durable::run::number_calls`), so this
        // borrows every id but those of a caller that did not.
        let ids: Vec<Cow<str>> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| match c.id.as_str() {
                "" => Cow::Owned(format!("call_{i}")),
                id => Cow::Borrowed(id),
            })
            .collect();
        // Each id's first call: any other call with that id is a duplicate.
        let index = FirstOf::new(&ids);

        // First pass: per-call checks, and the calls each one names (its `depends_on` and
        // the `$from` references in its arguments) as indices.
        let mut entries: Vec<Entry> = Vec::with_capacity(calls.len());
        let mut deps_of: Vec<Vec<usize>> = Vec::with_capacity(calls.len());
        let mut unknown: Vec<Option<String>> = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let id: &str = &ids[i];
            let refuse = |code, msg: String| {
                Entry::Refused(Box::new(CallResult::refused(
                    id,
                    &call.tool,
                    Envelope::error(code, msg),
                )))
            };
            deps_of.push(Vec::new());
            unknown.push(None);
            if index.get(id) != Some(i) {
                entries.push(refuse(
                    ErrorCode::InvalidRequest,
                    format!("call id {id:?} is used twice in this batch"),
                ));
                continue;
            }
            if max_calls.is_some_and(|max| i >= max) {
                let max = max_calls.unwrap_or_default();
                entries.push(refuse(
                    ErrorCode::TooManyCalls,
                    format!("a batch may hold at most {max} calls; this one was not run, call it again in a later turn"),
                ));
                continue;
            }
            let Some(tool) = tools.get(&call.tool) else {
                entries.push(Entry::Refused(Box::new(unknown_tool(
                    id, call, tools, visible,
                ))));
                continue;
            };
            let parsed = match &call.arguments_error {
                Some(why) => Err(ToolError::new(
                    ErrorCode::InvalidArguments,
                    format!("the arguments could not be read as JSON: {why}"),
                )),
                None => parse_arguments(&call.arguments, limits),
            };
            let parsed = match parsed {
                Ok(p) => p,
                Err(e) => {
                    let mut r = CallResult::refused(id, tool.spec.name.clone(), Envelope::Error(e));
                    r.repaired = false;
                    entries.push(Entry::Refused(Box::new(r)));
                    continue;
                }
            };
            let mut refs = Vec::new();
            collect_refs(&parsed.value, &mut refs);
            let named = call.depends_on.iter().chain(&refs);
            for d in named {
                match index.get(d.as_str()) {
                    // A call naming itself is a cycle of one, refused with the others.
                    Some(j) => deps_of[i].push(j),
                    None => {
                        unknown[i] = Some(format!(
                            "it depends on call {d:?}, which is not in this batch"
                        ))
                    }
                }
            }
            entries.push(Entry::Ready(Node {
                id: Arc::from(id),
                tool: tool.clone(),
                arguments: parsed.value,
                repaired: parsed.repaired,
                deps: Vec::new(),
                order_only: Vec::new(),
                has_refs: !refs.is_empty(),
                run_if_dependency_failed: call.run_if_dependency_failed,
            }));
        }

        // Second pass: tool ordering (`policy.after`) into indices, when some tool has one.
        let ordered = entries
            .iter()
            .any(|e| matches!(e, Entry::Ready(n) if !n.tool.spec.policy.after.is_empty()));
        let mut by_tool: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut order_of: Vec<Vec<usize>> = Vec::new();
        if ordered {
            for (i, e) in entries.iter().enumerate() {
                if let Entry::Ready(n) = e {
                    by_tool.entry(&n.tool.spec.name).or_default().push(i);
                }
            }
            order_of = vec![Vec::new(); entries.len()];
        }
        for (i, e) in entries.iter().enumerate() {
            let Entry::Ready(n) = e else { continue };
            let deps = &mut deps_of[i];
            deps.sort_unstable();
            deps.dedup();
            if !ordered {
                continue;
            }
            let mut order = Vec::new();
            for after in &n.tool.spec.policy.after {
                let Some(calls) = by_tool.get(after.as_str()) else {
                    continue;
                };
                if *after == n.tool.spec.name {
                    // A tool after itself runs its calls one by one, in call order: each waits
                    // for the one before it only (a chain), which orders them all with one
                    // edge a call instead of one per earlier call.
                    let before = calls.partition_point(|&j| j < i);
                    order.extend(
                        before
                            .checked_sub(1)
                            .map(|k| calls[k])
                            .filter(|j| deps.binary_search(j).is_err()),
                    );
                } else {
                    order.extend(
                        calls
                            .iter()
                            .copied()
                            .filter(|&j| j != i && deps.binary_search(&j).is_err()),
                    );
                }
            }
            order.sort_unstable();
            order.dedup();
            deps.extend_from_slice(&order);
            deps.sort_unstable();
            order_of[i] = order;
        }
        for (i, why) in unknown.into_iter().enumerate() {
            if let Some(why) = why {
                refuse_in_place(
                    &mut entries[i],
                    ErrorCode::UnknownDependency,
                    format!("the call was not run: {why}"),
                );
            }
        }
        // Without a single edge there is no cycle to look for.
        if deps_of.iter().any(|d| !d.is_empty()) {
            for i in cycle_members(&deps_of, &entries) {
                refuse_in_place(
                    &mut entries[i],
                    ErrorCode::DependencyCycle,
                    "the call was not run: its dependencies form a cycle; split it into separate turns"
                        .into(),
                );
            }
        }
        for (i, e) in entries.iter_mut().enumerate() {
            if let Entry::Ready(n) = e {
                n.deps = std::mem::take(&mut deps_of[i]);
                n.order_only = order_of.get_mut(i).map(std::mem::take).unwrap_or_default();
            }
        }
        Plan { entries }
    }
}

fn refuse_in_place(entry: &mut Entry, code: ErrorCode, message: String) {
    if let Entry::Ready(n) = entry {
        let mut r = CallResult::refused(
            n.id.as_ref(),
            n.tool.spec.name.clone(),
            Envelope::error(code, message),
        );
        r.repaired = n.repaired;
        *entry = Entry::Refused(Box::new(r));
    }
}

/// Longest name an `unknown_tool` refusal echoes or compares for suggestions; registered
/// names are at most 64 characters, so anything longer cannot be a near miss.
const NAME_SHOWN: usize = 64;

fn unknown_tool(
    id: &str,
    call: &Call,
    tools: &Snapshot,
    visible: &dyn Fn(&crate::spec::ToolSpec) -> bool,
) -> CallResult {
    // A name far beyond the rule is never compared (an edit distance is quadratic) nor echoed
    // whole: the model and the audit log get its head and its size.
    let (name, nearest) = match call.tool.char_indices().nth(NAME_SHOWN) {
        Some((cut, _)) => (
            format!("{}… ({} bytes)", &call.tool[..cut], call.tool.len()),
            Vec::new(),
        ),
        // Suggest only tools the caller may use: a suggestion must not reveal a hidden tool.
        None => (call.tool.clone(), tools.nearest(&call.tool, 3, visible)),
    };
    let hint = if nearest.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", nearest.join(", "))
    };
    let err = ToolError::new(
        ErrorCode::UnknownTool,
        format!("there is no tool named {name:?}{hint}"),
    )
    .with("suggestions", nearest);
    CallResult::refused(id, name, Envelope::Error(err))
}

/// Each id's first call in a batch. A batch of a few calls (most are) finds an id by
/// scanning them, which costs less than hashing every id into a map first.
enum FirstOf<'a> {
    Scan(&'a [Cow<'a, str>]),
    Map(HashMap<&'a str, usize>),
}

impl<'a> FirstOf<'a> {
    /// Batches up to this many calls are scanned.
    const SCAN_MAX: usize = 8;

    fn new(ids: &'a [Cow<'a, str>]) -> Self {
        if ids.len() <= Self::SCAN_MAX {
            return FirstOf::Scan(ids);
        }
        // Reversed, so that the first call of an id is the one kept.
        FirstOf::Map(
            ids.iter()
                .enumerate()
                .rev()
                .map(|(i, id)| (id.as_ref(), i))
                .collect(),
        )
    }

    fn get(&self, id: &str) -> Option<usize> {
        match self {
            FirstOf::Scan(ids) => ids.iter().position(|known| known == id),
            FirstOf::Map(map) => map.get(id).copied(),
        }
    }
}

/// Collects the call ids referenced by `{"$from": ...}` objects.
pub fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(id)) = map.get(FROM_KEY) {
                out.push(id.clone());
            } else {
                map.values().for_each(|v| collect_refs(v, out));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Replaces every reference with the data it points at. `lookup` gives a finished call's
/// data by id, or `None` when that call did not succeed.
pub fn substitute_refs(
    value: &mut Value,
    lookup: &dyn Fn(&str) -> Option<Value>,
) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(id)) = map.get(FROM_KEY) {
                let data = lookup(id).ok_or_else(|| format!("call {id:?} did not return data"))?;
                let pointer = map.get(POINTER_KEY).and_then(Value::as_str).unwrap_or("");
                *value = data.pointer(pointer).cloned().ok_or_else(|| {
                    format!("the result of call {id:?} has nothing at {pointer:?}")
                })?;
                return Ok(());
            }
            for v in map.values_mut() {
                substitute_refs(v, lookup)?;
            }
        }
        Value::Array(items) => {
            for v in items {
                substitute_refs(v, lookup)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Indices of ready calls that sit on a dependency cycle, self-dependencies included
/// (Tarjan's SCC, iterative).
fn cycle_members(deps: &[Vec<usize>], entries: &[Entry]) -> Vec<usize> {
    let n = deps.len();
    let live = |i: usize| matches!(entries[i], Entry::Ready(_));
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for root in 0..n {
        if index[root] != usize::MAX || !live(root) {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = deps[v].get(*child) {
                *child += 1;
                if !live(w) {
                    continue;
                }
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || deps[v].contains(&v) {
                    out.extend(component);
                }
            }
        }
    }
    out
}
