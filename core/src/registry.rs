//! The registry: tools by name, schemas compiled once at registration.

use crate::arguments::Defaults;
use crate::handler::Handler;
pub use crate::registration_error::RegistrationError;
use crate::schema::{CompiledSchema, SchemaResources};
use crate::spec::{ToolSpec, check_name};
use crate::tool::Tool;
use crate::tool_search::ToolIndex;
use arc_swap::ArcSwap;
use foldhash::HashMap;
use std::sync::Arc;

/// A registered tool: its spec, compiled schemas and handler.
pub struct RegisteredTool {
    /// The spec as registered.
    pub spec: ToolSpec,
    /// The compiled input schema.
    pub input: CompiledSchema,
    /// The compiled output schema, if any.
    pub output: Option<CompiledSchema>,
    /// The input schema's default values, when it has any.
    pub defaults: Option<Defaults>,
    /// The handler; `None` for client-side tools.
    pub handler: Option<Arc<dyn Handler>>,
    /// What turns its data into the model's view, if anything.
    pub to_model_output: Option<Arc<dyn Handler>>,
    /// What runs after each successful call (`on_success.rs`), if anything.
    pub on_success: Option<Arc<dyn Handler>>,
    /// The name as a shared string, cloned into every call's context.
    pub name: Arc<str>,
}

#[derive(Default, Clone)]
struct Tools {
    by_name: HashMap<String, Arc<RegisteredTool>>,
    order: Vec<String>,
    aliases: HashMap<String, String>,
    /// Whether some tool may call tools (`may_call`): only then does a batch open the door
    /// its handlers call through.
    calling: bool,
    /// The search index of these tools, built on the first search (`tool_search.rs`).
    index: std::sync::OnceLock<Arc<ToolIndex>>,
}

/// Tools by name. Registration copies the table (rare); each batch reads one snapshot
/// without locking, so registering never blocks running batches.
pub struct Registry {
    /// Shared with the views a `search_tools` tool keeps ([`Registry::view`]).
    tools: Arc<ArcSwap<Tools>>,
    resources: SchemaResources,
    write: std::sync::Mutex<()>,
    /// Counts changes of the set of tools, for those who follow it (an MCP server's
    /// `tools/list_changed`).
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new(SchemaResources::default())
    }
}

/// A consistent view of the registry for the duration of one batch.
#[derive(Clone)]
pub struct Snapshot(Arc<Tools>);

impl Registry {
    /// An empty registry; remote `$ref`s resolve against `resources`.
    pub fn new(resources: SchemaResources) -> Self {
        Registry {
            tools: Arc::new(ArcSwap::from_pointee(Tools::default())),
            resources,
            write: Default::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Sets the documents remote `$ref`s resolve against, for tools registered from now on.
    pub fn set_resources(&mut self, resources: SchemaResources) {
        self.resources = resources;
    }

    /// Registers a tool, compiling its schemas. Fails on a bad name, a duplicate, or a
    /// schema that does not compile.
    pub fn register(&self, tool: Tool) -> Result<(), RegistrationError> {
        let Tool {
            spec,
            handler,
            to_model_output,
            on_success,
        } = tool;
        check_name(&spec.name).map_err(RegistrationError::InvalidName)?;
        if spec.policy.retry.attempts == 0 {
            return Err(RegistrationError::InvalidPolicy {
                tool: spec.name.clone(),
                message: "retry.attempts must be at least 1 (the first attempt counts)".into(),
            });
        }
        spec.policy
            .check_guards()
            .map_err(|message| RegistrationError::InvalidPolicy {
                tool: spec.name.clone(),
                message,
            })?;
        let input =
            CompiledSchema::compile(&spec.input_schema, &self.resources).map_err(|message| {
                RegistrationError::InvalidSchema {
                    tool: spec.name.clone(),
                    which: "input schema",
                    message,
                }
            })?;
        let output =
            match &spec.output_schema {
                Some(s) => Some(CompiledSchema::compile(s, &self.resources).map_err(
                    |message| RegistrationError::InvalidSchema {
                        tool: spec.name.clone(),
                        which: "output schema",
                        message,
                    },
                )?),
                None => None,
            };
        let _guard = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut tools = Tools::clone(&self.tools.load());
        let taken = |n: &str| tools.by_name.contains_key(n) || tools.aliases.contains_key(n);
        if taken(&spec.name) {
            return Err(RegistrationError::Duplicate(spec.name));
        }
        if let Some(original) = &spec.original_name
            && original != &spec.name
        {
            if taken(original) {
                return Err(RegistrationError::Duplicate(original.clone()));
            }
            tools.aliases.insert(original.clone(), spec.name.clone());
        }
        let name: Arc<str> = Arc::from(spec.name.as_str());
        tools.calling |= !spec.policy.may_call.is_empty();
        tools.index = Default::default();
        tools.order.push(spec.name.clone());
        tools.by_name.insert(
            spec.name.clone(),
            Arc::new(RegisteredTool {
                defaults: Defaults::of(&spec.input_schema),
                spec,
                input,
                output,
                handler,
                to_model_output,
                on_success,
                name,
            }),
        );
        self.tools.store(Arc::new(tools));
        self.changes.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Removes a tool (and the alias of its original name); false when there was none.
    /// Batches already running keep the snapshot they started with.
    pub fn unregister(&self, name: &str) -> bool {
        let _guard = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut tools = Tools::clone(&self.tools.load());
        if tools.by_name.remove(name).is_none() {
            return false;
        }
        tools.order.retain(|n| n != name);
        tools.aliases.retain(|_, target| target != name);
        tools.index = Default::default();
        tools.calling = tools
            .by_name
            .values()
            .any(|t| !t.spec.policy.may_call.is_empty());
        self.tools.store(Arc::new(tools));
        self.changes.send_modify(|n| *n += 1);
        true
    }

    /// Sees every later registration or removal (the value counts them).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The current tools, for one batch.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.tools.load_full())
    }

    /// Whether some tool may call tools (`may_call`), without taking a snapshot.
    pub fn calling(&self) -> bool {
        self.tools.load().calling
    }

    /// A handle that sees the registry as it changes, for a tool that looks at the others
    /// (`search_tools`). It holds the registry weakly: the tool lives in the registry, and
    /// a strong hold would make the registry's tools never its alone (`visit_sole_handlers`).
    pub fn view(&self) -> RegistryView {
        RegistryView(Arc::downgrade(&self.tools))
    }

    /// The specs of every tool, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.snapshot().specs()
    }

    /// Calls `visit` with the handlers and hooks of the tools this registry alone holds (see
    /// `engine/sole_parts.rs`): none while a snapshot of the current tools is held.
    pub(crate) fn visit_sole_handlers(&self, visit: &mut dyn FnMut(&Arc<dyn Handler>)) {
        if Arc::strong_count(&self.tools) != 1 {
            return;
        }
        let tools = self.tools.load_full();
        // Two owners: the `ArcSwap` and `tools`.
        if Arc::strong_count(&tools) != 2 {
            return;
        }
        for tool in tools.by_name.values().filter(|t| Arc::strong_count(t) == 1) {
            let parts = [&tool.handler, &tool.to_model_output, &tool.on_success];
            parts.into_iter().flatten().for_each(&mut *visit);
        }
    }
}

/// What [`Registry::view`] answers.
#[derive(Clone)]
pub struct RegistryView(std::sync::Weak<ArcSwap<Tools>>);

impl RegistryView {
    /// The current tools; none once the registry is gone.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(match self.0.upgrade() {
            Some(tools) => tools.load_full(),
            None => Arc::default(),
        })
    }
}

impl Snapshot {
    /// The specs best matching `query` among those `visible` accepts, best first, at most
    /// `limit` (see `tool_search.rs`).
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        visible: &dyn Fn(&ToolSpec) -> bool,
    ) -> Vec<ToolSpec> {
        let order = &self.0.order;
        let index = self.0.index.get_or_init(|| {
            let specs: Vec<ToolSpec> = order
                .iter()
                .filter_map(|n| self.0.by_name.get(n))
                .map(|t| t.spec.clone())
                .collect();
            Arc::new(ToolIndex::new(&specs))
        });
        index
            .search(query, order.len())
            .into_iter()
            .filter_map(|(i, _)| self.0.by_name.get(order.get(i)?))
            .map(|t| &t.spec)
            .filter(|spec| visible(spec))
            .take(limit)
            .cloned()
            .collect()
    }

    /// Whether some tool may call tools (`may_call`).
    pub fn calling(&self) -> bool {
        self.0.calling
    }

    /// Looks a tool up by name or by the name it was imported under.
    pub fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.0
            .by_name
            .get(name)
            .or_else(|| self.0.aliases.get(name).and_then(|n| self.0.by_name.get(n)))
    }

    /// The specs of every tool, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.0
            .order
            .iter()
            .filter_map(|n| self.0.by_name.get(n))
            .map(|t| t.spec.clone())
            .collect()
    }

    /// Registered names closest to `name` among the tools `visible` accepts, best first, for
    /// `unknown_tool` suggestions.
    pub fn nearest(
        &self,
        name: &str,
        max: usize,
        visible: &dyn Fn(&ToolSpec) -> bool,
    ) -> Vec<String> {
        let lower = name.to_lowercase();
        let mut scored: Vec<(f64, &String)> = self
            .0
            .order
            .iter()
            .filter(|n| self.0.by_name.get(*n).is_some_and(|t| visible(&t.spec)))
            .map(|n| {
                (
                    strsim::normalized_damerau_levenshtein(&lower, &n.to_lowercase()),
                    n,
                )
            })
            .filter(|(score, n)| {
                *score >= 0.4
                    || n.to_lowercase().contains(&lower)
                    || lower.contains(&n.to_lowercase())
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .take(max)
            .map(|(_, n)| n.clone())
            .collect()
    }
}
