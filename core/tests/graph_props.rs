//! Property tests of batch scheduling on random dependency graphs: every call starts after
//! its dependencies finished, none runs twice, the concurrency limit holds, calls on a cycle
//! are refused, calls that depend on them fail, and everything else still runs.

use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tooljig::{BatchOptions, BatchResult, Call, Caller, Engine, ErrorCode, Tool};

/// How call `from` depends on call `to`.
#[derive(Debug, Clone, Copy)]
enum Edge {
    /// Declared in `depends_on`.
    Declared,
    /// A `{"$from": ...}` reference in the arguments.
    Reference,
}

/// A random batch: `n` calls, edges `(from, to, kind)` meaning `from` waits for `to`.
#[derive(Debug, Clone)]
struct Graph {
    n: usize,
    edges: Vec<(usize, usize, Edge)>,
    /// The order the calls are listed in the batch.
    listing: Vec<usize>,
    concurrency: usize,
    /// Per call, how often its handler yields to the scheduler, to vary interleavings.
    spins: Vec<u8>,
}

fn edge_kind() -> impl Strategy<Value = Edge> {
    prop_oneof![Just(Edge::Declared), Just(Edge::Reference)]
}

/// Any graph, cycles and self-dependencies included.
fn any_graph() -> impl Strategy<Value = Graph> {
    (1usize..24).prop_flat_map(|n| {
        (
            proptest::collection::vec((0..n, 0..n, edge_kind()), 0..=n * 2),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            1usize..6,
            proptest::collection::vec(0u8..4, n),
        )
            .prop_map(move |(edges, listing, concurrency, spins)| Graph {
                n,
                edges,
                listing,
                concurrency,
                spins,
            })
    })
}

/// A graph without cycles: every edge points from a higher node number to a lower one
/// (the listing is shuffled, so dependencies may come later in the batch).
fn dag() -> impl Strategy<Value = Graph> {
    any_graph().prop_map(|mut g| {
        g.edges = g
            .edges
            .into_iter()
            .filter(|(a, b, _)| a != b)
            .map(|(a, b, k)| (a.max(b), a.min(b), k))
            .collect();
        g
    })
}

/// What the handler saw: starts and ends in the order they happened, and the most calls
/// running at once.
#[derive(Default)]
struct Trace {
    log: Mutex<Vec<(usize, bool)>>,
    running: AtomicUsize,
    max_running: AtomicUsize,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

fn id(k: usize) -> String {
    format!("n{k}")
}

fn run(g: &Graph) -> (BatchResult, Arc<Trace>) {
    let trace = Arc::new(Trace::default());
    let engine = Engine::new();
    let t = trace.clone();
    engine
        .register(Tool::from_fn(
            "visit",
            "Records when it runs.",
            json!({"type": "object", "required": ["node"]}),
            move |args: Value, _| {
                let t = t.clone();
                async move {
                    let node = args["node"].as_u64().unwrap_or(u64::MAX) as usize;
                    t.log.lock().unwrap().push((node, true));
                    let now = t.running.fetch_add(1, Ordering::SeqCst) + 1;
                    t.max_running.fetch_max(now, Ordering::SeqCst);
                    for _ in 0..args["spin"].as_u64().unwrap_or(0) {
                        tokio::task::yield_now().await;
                    }
                    t.running.fetch_sub(1, Ordering::SeqCst);
                    t.log.lock().unwrap().push((node, false));
                    Ok(json!({"node": node, "refs": args["refs"]}))
                }
            },
        ))
        .expect("visit registers");
    let calls = g
        .listing
        .iter()
        .map(|&k| {
            let mut refs = Vec::new();
            let mut call = Call::new(id(k), "visit", Value::Null);
            for &(from, to, kind) in &g.edges {
                if from != k {
                    continue;
                }
                match kind {
                    Edge::Declared => call = call.depends_on(id(to)),
                    Edge::Reference => refs.push(json!({"$from": id(to), "pointer": "/node"})),
                }
            }
            call.arguments = json!({"node": k, "spin": g.spins[k], "refs": refs});
            call
        })
        .collect();
    let options = BatchOptions {
        concurrency: Some(g.concurrency),
        ..Default::default()
    };
    let out = runtime().block_on(engine.run(calls, Caller::default(), options));
    (out, trace)
}

/// `reach[a][b]`: a waits, directly or not, for b.
fn reachability(g: &Graph) -> Vec<Vec<bool>> {
    let mut reach = vec![vec![false; g.n]; g.n];
    for &(a, b, _) in &g.edges {
        reach[a][b] = true;
    }
    for k in 0..g.n {
        let via = reach[k].clone();
        for row in reach.iter_mut().filter(|row| row[k]) {
            for (r, v) in row.iter_mut().zip(&via) {
                *r |= *v;
            }
        }
    }
    reach
}

/// Checks the calls that ran: once each, after their dependencies, within the limit.
fn check_runs(
    g: &Graph,
    out: &BatchResult,
    trace: &Trace,
    ran: &[bool],
) -> Result<(), TestCaseError> {
    let log = trace.log.lock().unwrap().clone();
    let position = |node: usize, start: bool| log.iter().position(|&e| e == (node, start));
    for (k, &once) in ran.iter().enumerate() {
        let starts = log.iter().filter(|&&e| e == (k, true)).count();
        prop_assert_eq!(starts, usize::from(once), "call {} ran {} times", k, starts);
    }
    for &(from, to, kind) in &g.edges {
        if !ran[from] {
            continue;
        }
        prop_assert!(
            ran[to],
            "call {} ran although its dependency {} did not",
            from,
            to
        );
        let (Some(end), Some(start)) = (position(to, false), position(from, true)) else {
            return Err(TestCaseError::fail(format!("{from} or {to} left no trace")));
        };
        prop_assert!(end < start, "call {} started before {} finished", from, to);
        let (a, b) = (out.get(&id(from)).unwrap(), out.get(&id(to)).unwrap());
        prop_assert!(a.started_us.unwrap() >= b.finished_us);
        if matches!(kind, Edge::Reference) {
            let refs = &a.envelope.data().unwrap()["refs"];
            prop_assert!(
                refs.as_array().unwrap().contains(&json!(to)),
                "call {}'s reference to {} was not substituted: {}",
                from,
                to,
                refs
            );
        }
    }
    prop_assert!(trace.max_running.load(Ordering::SeqCst) <= g.concurrency);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn acyclic_batches_run_every_call_once_after_its_dependencies(g in dag()) {
        let (out, trace) = run(&g);
        prop_assert_eq!(out.results.len(), g.n);
        for (r, &k) in out.results.iter().zip(&g.listing) {
            prop_assert_eq!(&r.call_id, &id(k), "results come back in call order");
            prop_assert!(r.envelope.is_ok(), "call {} failed: {:?}", k, r.envelope);
            prop_assert_eq!(r.attempts, 1);
        }
        check_runs(&g, &out, &trace, &vec![true; g.n])?;
    }

    #[test]
    fn cycles_are_refused_and_the_rest_proceeds(g in any_graph()) {
        let reach = reachability(&g);
        let on_cycle: Vec<bool> = (0..g.n).map(|k| reach[k][k]).collect();
        let blocked: Vec<bool> = (0..g.n)
            .map(|k| !on_cycle[k] && (0..g.n).any(|c| on_cycle[c] && reach[k][c]))
            .collect();
        let (out, trace) = run(&g);
        let mut ran = vec![false; g.n];
        for k in 0..g.n {
            let r = out.get(&id(k)).unwrap();
            let want = if on_cycle[k] {
                Some(ErrorCode::DependencyCycle)
            } else if blocked[k] {
                Some(ErrorCode::DependencyFailed)
            } else {
                None
            };
            prop_assert_eq!(r.envelope.code(), want, "call {}: {:?}", k, r.envelope);
            ran[k] = want.is_none();
            prop_assert_eq!(r.attempts, u32::from(ran[k]));
        }
        check_runs(&g, &out, &trace, &ran)?;
    }
}
