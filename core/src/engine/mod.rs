//! The engine: runs batches of calls over a registry, in dependency order and in parallel.
//!
//! Everything an app does with an engine is a method of [`Engine`], and every `impl Engine`
//! block lives in this folder: building one (`builder.rs`, or `options.rs` from data),
//! running batches (here, driven by `batch.rs`), the guardrails' operations (`guardrails.rs`)
//! and the durable runs' (`durable_runs.rs`). The behaviour behind them lives in `guard/`,
//! `durable/` and the steps; these methods hand each the narrow part of the engine it needs.

mod batch;
mod builder;
mod durable_runs;
mod guardrails;
mod operator_requests;
pub mod options;
mod sole_parts;

pub use crate::batch::{BatchOptions, BatchResult, DEFAULT_CONCURRENCY};
pub use options::{AuditSpec, CoordinationSpec, EngineOptions, OptionsError, StoreSpec};

use crate::arguments::Limits;
use crate::call::Call;
use crate::caller::Caller;
use crate::durable::{Durable, run};
use crate::guard::Guards;
use crate::registry::{RegistrationError, Registry, Snapshot};
use crate::spec::ToolSpec;
use crate::tool::Tool;
use crate::tool_calls::{NestedRequest, NestedSender};
use batch::Batch;
use std::sync::Arc;

/// Runs tool calls. Cheap to share: wrap it in an `Arc` and call [`Engine::run`] from
/// anywhere; registering a tool never blocks a running batch.
#[derive(Default)]
pub struct Engine {
    registry: Registry,
    limits: Limits,
    /// Access, hidden arguments, rate limits, cache, audit, telemetry (`guard/`).
    guards: Arc<Guards>,
    /// State store, approval rules, compensations (`durable/`).
    durable: Arc<Durable>,
}

impl Engine {
    /// An engine with no tools and default limits; set it up with the `with_*` builders.
    pub fn new() -> Self {
        Engine::default()
    }

    /// Registers a tool; its schemas compile now, or the registration fails.
    pub fn register(&self, tool: Tool) -> Result<(), RegistrationError> {
        self.registry.register(tool)
    }

    /// Registers one tool per operation of an OpenAPI 3.0 or 3.1 document, each calling the
    /// described endpoint (`import::openapi`; docs/tools.md). Operations that cannot be
    /// carried, or whose tool registration refuses, are reported as skipped; a document that
    /// is not OpenAPI 3, or has no absolute address, is refused whole.
    #[cfg(feature = "http")]
    pub fn register_openapi(
        &self,
        doc: &serde_json::Value,
        options: &crate::import::openapi::OpenApiOptions,
    ) -> Result<crate::import::openapi::OpenApiReport, crate::import::ImportError> {
        use crate::import::openapi::{OpenApiReport, Skipped, import_openapi};
        let imported = import_openapi(doc, options)?;
        let mut report = OpenApiReport {
            registered: Vec::new(),
            skipped: imported.skipped,
        };
        for (operation, tool) in imported.tools {
            let name = tool.spec.name.clone();
            match self.register(tool) {
                Ok(()) => report.registered.push(name),
                Err(e) => report.skipped.push(Skipped {
                    operation,
                    reason: e.to_string(),
                }),
            }
        }
        Ok(report)
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Provider-neutral specs of every tool, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.registry.specs()
    }

    /// Runs a batch for `caller` and returns one result per call, in call order.
    /// Never fails: every refusal and failure is an envelope. The caller may come shared
    /// (`Arc<Caller>`): a server that runs every call for the same one need not copy it.
    pub async fn run(
        &self,
        calls: Vec<Call>,
        caller: impl Into<Arc<Caller>>,
        options: BatchOptions,
    ) -> BatchResult {
        let caller = caller.into();
        let tools = self.registry.snapshot();
        if !tools.calling() {
            return self.run_with(calls, caller, options, tools, None).await;
        }
        // Boxed: only the batches of tools that call tools carry what serving them takes.
        Box::pin(self.serving(|door| self.run_with(calls, caller, options, tools, door))).await
    }

    /// [`Engine::run`], its handlers calling tools through `door` when some tool may.
    async fn run_with(
        &self,
        mut calls: Vec<Call>,
        caller: Arc<Caller>,
        mut options: BatchOptions,
        tools: Snapshot,
        door: Option<NestedSender>,
    ) -> BatchResult {
        // Durable runs (`durable/run.rs`): the batch is a run that may suspend, resume,
        // roll back.
        run::number_calls(&mut calls);
        let cancel = run::batch_token(&mut options, self.durable.explicit_store);
        let started = run::start(&self.durable, &calls, &caller, &options, &cancel).await;
        // Who a rollback's audit records name: the batch's caller, and its parent call when
        // a handler made the batch.
        let started_by = options.atomic.then(|| {
            let parent = options.lineage.as_ref().map(|l| l.parent.clone());
            (caller.clone(), parent)
        });
        let pass = started.pass.clone();
        let out = Batch::new(self, &tools, &calls, &caller, &options, pass, door)
            .drive()
            .await;
        let out = run::finish_pass(&tools, started, (calls, caller, options), out).await;
        if let (Some(report), Some((caller, parent))) = (&out.rollback, &started_by) {
            self.audit_rollback(report, caller, parent.as_ref());
        }
        // Step 11: the batch's audit records are durable before the app sees its results.
        self.guards.flush().await;
        out
    }

    /// Runs `work` (a batch, or a resumed one). When some tool may call tools (`may_call`),
    /// the batches its handlers ask for run here too, beside it, on this engine
    /// (`tool_calls.rs`); so do the batches theirs ask for, through the same door.
    async fn serving<F, T>(&self, work: impl FnOnce(Option<NestedSender>) -> F) -> T
    where
        F: std::future::Future<Output = T>,
    {
        let (door, mut asked) = tokio::sync::mpsc::unbounded_channel::<NestedRequest>();
        let main = work(Some(door.clone()));
        tokio::pin!(main);
        let mut nested = futures::stream::FuturesUnordered::new();
        loop {
            tokio::select! {
                out = &mut main => return out,
                Some(request) = asked.recv() => {
                    let door = door.clone();
                    nested.push(async move {
                        let tools = self.registry.snapshot();
                        let (calls, caller, options) = (request.calls, request.caller, request.options);
                        let out = self.run_with(calls, Arc::new(caller), options, tools, Some(door)).await;
                        let _ = request.reply.send(out);
                    });
                }
                Some(()) = futures::StreamExt::next(&mut nested), if !nested.is_empty() => {}
            }
        }
    }
}
