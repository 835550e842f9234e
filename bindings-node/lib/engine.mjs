// `Engine`: the idiomatic face of `NativeEngine` (src/engine.rs).
import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { callsText } from './calls.mjs'
import { Dispatcher, wakeOf } from './dispatch.mjs'
import { RegistrationError, ToolError } from './errors.mjs'
import { NativeEngine } from './native.mjs'
import { clampMs, linkSignal, outcomeText, settled } from './native-calls.mjs'
import { isStandardSchema, standardParser, toJsonSchema } from './schema.mjs'
import { checkDefinition, checkHooks } from './tool.mjs'
import { InboxServer } from './inbox.mjs'
import { McpClient, McpServer, mcpTarget } from './mcp.mjs'
/** @import { ApprovalRecord, AuditQuery, AuditRecord, BatchResult, BatchStream, Call, Caller, Decision, EngineOptions, Envelope, Execute, ExternalCall, JobStatus, OperatorRequest, Policy, Preference, RollbackReport, RunOptions, RunRecord, Settings, Tool, ToolHooks, ToolSpec } from './types.mjs' */

/** Splits run options into the JSON the core reads and the AbortSignal. */
function splitOptions(options) {
  if (options === undefined || options === null) return ['{}', undefined]
  if (typeof options !== 'object') throw new TypeError('run options must be an object')
  const { signal, ...rest } = options
  return [JSON.stringify(rest), signal]
}

/**
 * The native half of an engine the app no longer holds is released (`NativeEngine.release`):
 * it drops the threadsafe function Rust wakes JS through (a GC root, though it reaches the
 * dispatcher only weakly, `wakeOf`) and fails what still waits. So work in flight holds its
 * engine until it ends: a batch that waits (`runBatch`), and everything else that may call
 * the app's functions (`pinUntil`: streams, servers, agent runs, resumes, decisions, ...).
 */
const unheld = new FinalizationRegistry((native) => native.release())

/**
 * Calls `native.release()` once `owner` (an engine, a model in JavaScript) is collected.
 * @param {object} owner
 * @param {{release(): void}} native
 */
export function releaseWhenCollected(owner, native) {
  unheld.register(owner, native)
}

/** Pins of work in flight: `[holder]` each, dropped as it ends (`pinUntil`). */
const pins = new Set()

/**
 * Keeps `holder` (an engine, an agent) alive until `settled` settles: a server until it stops,
 * a stream or an agent run until its result, whether or not the app still holds it.
 * @param {object} holder
 * @param {Promise<unknown>} settled
 */
export function pinUntil(holder, settled) {
  const pin = [holder]
  pins.add(pin)
  const unpin = () => pins.delete(pin)
  settled.then(unpin, unpin)
}

/** The native half of an `Engine`, for the agent loop (`agent.mjs`); set in the class body. */
export let nativeEngine

/**
 * Adds app code the native engine calls like a handler (an agent's selector) to an engine's
 * table: `[index, release]`; set in the class body.
 */
export let appFunction

/**
 * Runs tool calls: registers tools, then runs batches of calls in dependency order and in
 * parallel, each call ending as an envelope. Handlers run on this thread, orchestrated by Rust.
 */
export class Engine {
  #dispatcher = new Dispatcher()
  #native
  /** The native `run` without a cancel switch, as a plain function (`driver()` in src/engine.rs). */
  #run

  static {
    nativeEngine = (engine) => (engine instanceof Engine ? engine.#native : null)
    appFunction = (engine, name, execute) => {
      const dispatcher = engine.#dispatcher
      const index = dispatcher.add({ name, execute, parse: null })
      return [index, () => dispatcher.release(index)]
    }
  }

  /**
   * @param {EngineOptions} [options] `limits` (`{maxArgumentBytes, maxDepth}`), `schemaResources`
   *   (`{uri: schema}`: documents schemas may `$ref`; nothing is fetched), `settings` (enabled
   *   flags `{system, tenants, departments, users}`), `audit` (`'memory'`, `{sqlite: path}`, `'postgres://...'` or
   *   `{jsonl: path}`), `policyHook` (`(request) => boolean | {allow, reason}`, may be async)
   *   and `resolvers` (`{name: (request) => resolution}`, may be async). Durable runs
   *   (docs/durable-runs.md): `stateStore` (`'memory'`, `'sqlite://PATH'` or `{sqlite: path}`, `'postgres://...'`; with one, every
   *   batch is a run that can be resumed or rolled back by id, from any process opening the
   *   same file), `approvalRules` (`{minRisk}`), `approvalPredicate` (`({tool, arguments,
   *   caller, risk}) => boolean`, may be async: true when the call needs a human decision; a
   *   throw or a non-boolean counts as true) and `externalExpiryMs` (how long client-side
   *   calls wait for a result). Tamper evidence: `sealKey` (a Uint8Array, or a string:
   *   `'env:NAME'`, `'file:PATH'`, `'hex:HEX'` or the key itself; at least 32 bytes) seals
   *   the audit chain and stored approval decisions with HMAC-SHA256; `auditAnchor` (a path,
   *   out of band) receives the log's head after every commit, so a cut log is detected.
   */
  constructor(options = undefined) {
    const { policyHook, resolvers, approvalPredicate, sealKey, ...rest } = options ?? {}
    /** @type {Record<string, any>} */
    const native = { ...rest }
    if (sealKey instanceof Uint8Array) native.sealKey = `hex:${Buffer.from(sealKey).toString('hex')}`
    else if (sealKey !== undefined) native.sealKey = sealKey
    if (approvalPredicate !== undefined && approvalPredicate !== null) {
      if (typeof approvalPredicate !== 'function') throw new TypeError('options.approvalPredicate must be a function')
      this.#dispatcher.predicate = approvalPredicate
      native.approvalPredicate = true
    }
    if (policyHook !== undefined && policyHook !== null) {
      if (typeof policyHook !== 'function') throw new TypeError('options.policyHook must be a function')
      this.#dispatcher.hook = policyHook
      native.policyHook = true
    }
    if (resolvers !== undefined && resolvers !== null) {
      if (typeof resolvers !== 'object') throw new TypeError('options.resolvers must map names to functions')
      native.resolvers = []
      for (const [name, fn] of Object.entries(resolvers)) {
        if (typeof fn !== 'function') throw new TypeError(`options.resolvers.${name} must be a function`)
        native.resolvers.push(name)
        this.#dispatcher.resolvers.push(fn)
      }
    }
    this.#native = new NativeEngine(wakeOf(this.#dispatcher), native)
    this.#dispatcher.native = this.#native
    ;[this.#run, this.#dispatcher.deliver] = this.#native.driver()
    releaseWhenCollected(this, this.#native)
  }

  /**
   * Registers a tool under `name`. `options` is its policy (`timeoutMs`, `retry`, `after`,
   * `maxOutputBytes`, `onOutputTooLarge`, and the fields guardrails add). Throws a
   * `RegistrationError` (with a `code`) on any mistake.
   * @template Args, Out
   * @param {string} name
   * @param {Tool<Args, Out>} definition
   * @param {Policy} [options]
   * @returns {this}
   */
  register(name, definition, options = undefined) {
    if (typeof name !== 'string') {
      throw new RegistrationError('invalid_name', `a tool name must be a string, got ${typeof name}`)
    }
    checkDefinition(name, definition)
    const spec = {
      name,
      description: definition.description ?? '',
      inputSchema: toJsonSchema(name, 'input', definition.inputSchema),
    }
    const outputSchema = toJsonSchema(name, 'output', definition.outputSchema)
    if (outputSchema !== undefined) spec.outputSchema = outputSchema
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') throw new RegistrationError('invalid_policy', `tool ${JSON.stringify(name)}: options must be an object`)
      spec.policy = options
    }
    let parse = null
    if (isStandardSchema(definition.inputSchema) && definition.parseArguments !== false) {
      parse = standardParser(definition.inputSchema)
    }
    return this.#register(spec, definition.execute, parse, definition)
  }

  /**
   * Registers a tool from its spec as data (`{name, description, inputSchema, outputSchema,
   * policy}`, camelCase or snake_case keys), as `specs()` exports it and conformance vectors
   * spell it. Without `execute`, the tool is client-side. `hooks` as for `register`'s
   * definition: `toModelOutput`, `onSuccess`.
   * @param {Partial<ToolSpec> & {name: string}} spec
   * @param {Execute<any, unknown>} [execute]
   * @param {ToolHooks<unknown>} [hooks]
   * @returns {this}
   */
  registerSpec(spec, execute = undefined, hooks = {}) {
    if (spec === null || typeof spec !== 'object') throw new RegistrationError('invalid_spec', 'a tool spec must be an object')
    if (execute !== undefined && typeof execute !== 'function') {
      throw new RegistrationError('invalid_tool', `tool ${JSON.stringify(spec.name)}: execute must be a function`)
    }
    checkHooks(`tool ${JSON.stringify(spec.name)}`, hooks)
    return this.#register(spec, execute, null, hooks)
  }

  #register(spec, execute, parse, hooks = {}) {
    let index = null
    if (execute !== undefined) {
      index = this.#dispatcher.add({ name: spec.name, execute, parse })
    }
    // A hook runs as a handler does, with its one input as the arguments.
    const hook = (f) => (f === undefined ? null : this.#dispatcher.add({ name: spec.name, execute: f, parse: null }))
    let problem
    try {
      problem = this.#native.register(spec, index, hook(hooks.toModelOutput), hook(hooks.onSuccess))
    } catch (e) {
      // napi could not read the spec as JSON (a BigInt, a function, a cycle).
      throw new RegistrationError('invalid_spec', `tool ${JSON.stringify(spec.name)}: the spec is not JSON: ${e?.message ?? e}`, { cause: e })
    }
    if (problem) throw new RegistrationError(problem.code, problem.message)
    return this
  }

  /**
   * Registers one tool per operation of an OpenAPI 3.0 or 3.1 `document` (parsed JSON or
   * YAML), each calling the described endpoint (docs/tools.md). `baseUrl` overrides the
   * document's server; `prefix` goes before every name; `include` keeps only these operation
   * ids; `credentials` (`{attribute: 'githubToken', header: 'Authorization', scheme: 'Bearer'}`)
   * names the caller attribute holding the secret, never an argument the model writes;
   * `headers` go with every request; `policy` applies to every tool. Throws a TypeError for a
   * document that is not OpenAPI 3 or has no absolute address.
   * @param {object} document
   * @param {{baseUrl?: string, prefix?: string, include?: string[], credentials?: {attribute: string, header?: string, scheme?: string}, headers?: Record<string, string>, policy?: Policy}} [options]
   * @returns {{registered: string[], skipped: {operation: string, reason: string}[]}}
   */
  registerOpenApi(document, options = {}) {
    try {
      return this.#native.registerOpenApi(document, options ?? {})
    } catch (e) {
      throw new TypeError(e?.message ?? String(e), { cause: e })
    }
  }

  /**
   * Provider-neutral specs of every tool, in registration order. With a caller: only the
   * tools that caller may use, hidden parameters removed (what to hand the model).
   * @param {Caller} [caller]
   * @returns {ToolSpec[]}
   */
  specs(caller = undefined) {
    return this.#native.specs(caller ?? null)
  }

  /**
   * The tools `caller` may use that best match `query` (names, descriptions and parameters,
   * BM25 ranked), best first, at most `limit` (5), as a model sees them: for registries too
   * large to offer whole (docs/tools.md).
   * @param {string} query
   * @param {{limit?: number, caller?: Caller}} [options]
   * @returns {ToolSpec[]}
   */
  searchTools(query, options = {}) {
    const { limit = 5, caller = null } = options ?? {}
    if (typeof query !== 'string') throw new TypeError('query must be a string')
    if (!Number.isInteger(limit) || limit < 0) throw new TypeError('limit must be a non-negative integer')
    return this.#native.searchTools(query, limit, caller)
  }

  /**
   * Registers `search_tools`, a tool the model calls with `{query, limit}` to find the tools
   * it was not offered (only those its caller may use).
   * @returns {this}
   */
  enableToolSearch() {
    const problem = this.#native.enableToolSearch()
    if (problem) throw new RegistrationError(problem.code, problem.message)
    return this
  }

  /**
   * Replaces the enabled flags (`{system, tenants, departments, users}`) for every call that
   * starts after this, in batches already running too.
   * @param {Settings} settings
   * @returns {void}
   */
  setSettings(settings) {
    this.#native.setSettings(settings)
  }

  /**
   * Audit records matching `query` (`{principal, tenant, tool, callId, outcome, code, sinceMs, untilMs, limit}`).
   * @param {AuditQuery} [query]
   * @returns {Promise<AuditRecord[]>}
   */
  async audit(query = undefined) {
    return JSON.parse(await this.#native.audit(query ?? null))
  }

  /**
   * Walks the audit hash chain: `{records, broken?}`; `broken` names the first broken link.
   * @returns {Promise<{records: number, broken?: unknown}>}
   */
  async verifyAudit() {
    return JSON.parse(await this.#native.verifyAudit())
  }

  /**
   * Counters and latency histograms per tool, so far.
   * @returns {Record<string, unknown>}
   */
  telemetry() {
    return this.#native.telemetry()
  }

  /**
   * Runs a batch of calls and resolves with one result per call, in call order. Never
   * rejects for a call's failure: every refusal and failure is an envelope.
   * @param {Call[]} calls `{id?, tool, arguments?, dependsOn?, runIfDependencyFailed?}`
   * @param {RunOptions} [options] `{caller, concurrency, deadlineMs, maxCalls, signal}`
   * @returns {Promise<BatchResult>}
   */
  async run(calls, options = undefined) {
    const text = callsText(calls)
    const [opts, signal] = splitOptions(options)
    const [cancel, unlink] = linkSignal(signal)
    const start = cancel === null ? (id) => this.#run(id, text, opts) : (id) => this.#native.run(id, text, opts, cancel)
    try {
      return await this.#dispatcher.runBatch(start, this)
    } finally {
      unlink()
    }
  }

  /**
   * `pending`, with this engine held until it settles: native work that may call the app's
   * functions (handlers, hooks, compensations) needs the dispatcher, which only the engine
   * holds (see `wakeOf`).
   * @template T
   * @param {Promise<T>} pending
   * @returns {Promise<T>}
   */
  #held(pending) {
    pinUntil(this, pending)
    return pending
  }

  /**
   * Runs a batch and yields its events as they happen (`for await`); `result` resolves with
   * what `run` would have returned.
   * @param {Call[]} calls
   * @param {RunOptions} [options]
   * @returns {BatchStream}
   */
  stream(calls, options = undefined) {
    const text = callsText(calls)
    const [opts, signal] = splitOptions(options)
    const [cancel, unlink] = linkSignal(signal)
    let native
    try {
      native = this.#native.stream(text, opts, cancel)
    } catch (e) {
      unlink()
      throw e
    }
    const result = native.result().then(
      (t) => {
        unlink()
        return JSON.parse(t)
      },
      (e) => {
        unlink()
        throw e
      },
    )
    // Reading only the events must not leave an unhandled rejection behind.
    result.catch(() => {})
    pinUntil(this, result)
    return {
      result,
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const text = await native.next()
          if (text === null) return
          yield* JSON.parse(text)
        }
      },
    }
  }
  // Durable runs (docs/durable-runs.md). A refusal of the core (a forged or replayed
  // decision, a late result, a busy run) is thrown as a ToolError whose `details.reason`
  // names why.

  /**
   * Decides a pending approval. `decision`: `{decision: 'approve', argumentsHash, remember?:
   * {scope}}`, `{decision: 'reject', argumentsHash, message?}` or `{decision: 'edit',
   * argumentsHash, arguments}`; `approver` is the deciding caller. Resolves with the approval
   * record; continue the run with `resume(runId)`.
   * @param {string} approvalId
   * @param {Decision} decision
   * @param {Caller} approver
   * @returns {Promise<ApprovalRecord>}
   */
  async decide(approvalId, decision, approver) {
    return settled(await this.#held(this.#native.decide(String(approvalId), decision, approver ?? {})))
  }

  /**
   * Approves a pending request as asked: `decide` with `{decision: 'approve'}`.
   * @param {string} approvalId
   * @param {{argumentsHash: string, approver: Caller, remember?: {scope: string[]}}} options
   * @returns {Promise<ApprovalRecord>}
   */
  async approve(approvalId, { argumentsHash, approver, remember }) {
    return this.decide(approvalId, { decision: 'approve', argumentsHash, remember }, approver)
  }

  /**
   * Rejects a pending request; the model sees `message`: `decide` with `{decision: 'reject'}`.
   * @param {string} approvalId
   * @param {{argumentsHash: string, approver: Caller, message?: string}} options
   * @returns {Promise<ApprovalRecord>}
   */
  async reject(approvalId, { argumentsHash, approver, message }) {
    return this.decide(approvalId, { decision: 'reject', argumentsHash, message }, approver)
  }

  /**
   * Approves a pending request with other `args`, checked again and run exactly: `decide` with `{decision: 'edit'}`.
   * @param {string} approvalId
   * @param {Record<string, unknown>} args
   * @param {{argumentsHash: string, approver: Caller}} options
   * @returns {Promise<ApprovalRecord>}
   */
  async edit(approvalId, args, { argumentsHash, approver }) {
    return this.decide(approvalId, { decision: 'edit', argumentsHash, arguments: args }, approver)
  }

  /**
   * The approval inbox: requests awaiting a decision, oldest first; the same as `pendingApprovals`.
   * @param {string} [tenant]
   * @returns {Promise<ApprovalRecord[]>}
   */
  async pending(tenant = undefined) {
    return this.pendingApprovals(tenant)
  }

  /**
   * One approval request as stored, or null.
   * @param {string} approvalId
   * @returns {Promise<ApprovalRecord | null>}
   */
  async approval(approvalId) {
    return settled(await this.#native.approval(String(approvalId)))
  }

  /**
   * Pending approval requests, oldest first; of one tenant, or of every tenant.
   * @param {string} [tenant]
   * @returns {Promise<ApprovalRecord[]>}
   */
  async pendingApprovals(tenant = undefined) {
    return settled(await this.#native.pendingApprovals(tenant ?? null))
  }

  /**
   * Lets `caller` run `tool` without approval for calls whose top-level arguments equal `values` (empty: every call).
   * @param {Caller} caller
   * @param {string} tool
   * @param {Record<string, unknown>} [values]
   * @returns {Promise<Preference>}
   */
  async allowAlways(caller, tool, values = undefined) {
    return settled(await this.#native.allowAlways(caller ?? {}, String(tool), values ?? null))
  }

  /**
   * `caller`'s learned preferences ("always allow"), every tool.
   * @param {Caller} caller
   * @returns {Promise<Preference[]>}
   */
  async preferences(caller) {
    return settled(await this.#native.preferences(caller ?? {}))
  }

  /**
   * Revokes one of `caller`'s preferences; false when it has none with that id.
   * @param {Caller} caller
   * @param {string} id
   * @returns {Promise<boolean>}
   */
  async revokePreference(caller, id) {
    return settled(await this.#native.revokePreference(caller ?? {}, String(id)))
  }

  /**
   * Completes a client-side call of a run: `outcome` is the data it returned, or a
   * `ToolError` it failed with (the model sees it as submitted). `caller` is who submits: a
   * run started for a principal takes results from that principal (and tenant) alone.
   * Resolves with the envelope.
   * @param {string} runId
   * @param {string} callId
   * @param {unknown} outcome
   * @param {Caller} [caller]
   * @returns {Promise<Envelope>}
   */
  async submitResult(runId, callId, outcome, caller = undefined) {
    return settled(await this.#held(this.#native.submitResult(String(runId), String(callId), outcomeText(outcome), caller ?? null)))
  }

  /**
   * Reports how the background job `job` ended (a handler returned `accepted(job)`):
   * `outcome` is the data it produced, or a `ToolError` it failed with. Data is checked
   * against the tool's output schema. Any process sharing the engine's state store may
   * report. Resolves with the job's status; continue the run with `resume(status.runId)`.
   * @param {string} job
   * @param {unknown} outcome
   * @returns {Promise<JobStatus>}
   */
  async completeJob(job, outcome) {
    return settled(await this.#held(this.#native.completeJob(String(job), outcomeText(outcome))))
  }

  /**
   * Where the background job `job` stands: `state` (`pending`, `completed`, `failed`,
   * `expired`), `runId`, `callId`, `tool`, `arguments`, `expiresAtMs`, and the `envelope`
   * once reported; `null` when no call accepted it.
   * @param {string} job
   * @returns {Promise<JobStatus | null>}
   */
  async jobStatus(job) {
    return settled(await this.#native.jobStatus(String(job)))
  }

  /**
   * The client-side calls of a run that still await a result.
   * @param {string} runId
   * @returns {Promise<ExternalCall[]>}
   */
  async pendingExternal(runId) {
    return settled(await this.#native.pendingExternal(String(runId)))
  }

  /**
   * `server`, with this engine kept alive until it stops.
   * @template {{wait(): Promise<void>}} S
   * @param {S} server
   * @returns {S}
   */
  #serving(server) {
    pinUntil(this, server.wait())
    return server
  }

  /**
   * Starts the approval inbox (docs/operators.md) over this engine's state store and audit
   * log: pending requests decided in the browser by an operator. Who is one: `tokens` (bearer
   * token → caller; the browser signs in with one), or `auth` (request → caller, may be
   * async; a throw refuses; the sign-in cookie arrives as `authorization: Bearer ...`). The
   * running inbox keeps Node alive until `stop()`.
   * @param {{tokens?: Record<string, import('./types.d.mts').Caller>, auth?: (request: import('./server.mjs').HttpRequest) => import('./types.d.mts').Caller | Promise<import('./types.d.mts').Caller>, bind?: string}} options
   * @returns {InboxServer}
   */
  serveInbox(options) {
    const { tokens, auth, bind = '127.0.0.1:0' } = options ?? {}
    if (auth !== undefined && auth !== null) {
      if (typeof auth !== 'function') throw new TypeError('options.auth must be a function')
      const index = this.#dispatcher.httpAuths.push(auth) - 1
      return this.#serving(new InboxServer(this.#native.serveInbox(null, String(bind), index)))
    }
    if (tokens === null || typeof tokens !== 'object' || Object.keys(tokens).length === 0) {
      throw new TypeError('serveInbox needs operator tokens ({tokens: {token: caller}}) or an auth hook')
    }
    return this.#serving(new InboxServer(this.#native.serveInbox(tokens, String(bind), null)))
  }

  /**
   * Serves this engine's tools over MCP's Streamable HTTP (docs/mcp.md). `tools/list` shows
   * what the caller may use; `tools/call` runs the whole path of one call; approvals and
   * missing fields are asked through elicitation when the client can. Who calls: `auth`
   * (request → caller), or `tokens` (bearer token → caller), or on loopback only `caller`.
   * @param {import('./mcp.mjs').McpServeOptions} [options]
   * @returns {McpServer}
   */
  serveMcp(options = undefined) {
    const { auth, ...rest } = options ?? {}
    let index = null
    if (auth !== undefined && auth !== null) {
      if (typeof auth !== 'function') throw new TypeError('options.auth must be a function')
      index = this.#dispatcher.httpAuths.push(auth) - 1
    }
    return this.#serving(new McpServer(this.#native.serveMcpHttp(rest, index)))
  }

  /**
   * Serves this engine's tools to the client that started this process, over stdin and
   * stdout, until it disconnects. Calls run for `options.caller`; nothing else may write to
   * stdout meanwhile.
   * @param {Omit<import('./mcp.mjs').McpServeOptions, 'auth' | 'tokens' | 'bind' | 'path'>} [options]
   * @returns {Promise<void>}
   */
  async serveMcpStdio(options = undefined) {
    settled(await this.#held(this.#native.serveMcpStdio(options ?? null)))
  }

  /**
   * Connects to an MCP server (a Streamable HTTP URL, or a command speaking stdio) and
   * registers its tools into this engine, each as `prefix + name` under `policy`, so every
   * guardrail applies. Calls that cannot reach the server end `unavailable` (retryable).
   * The tools hold the connection: the returned client is needed only to reconnect or close
   * it; once neither it nor this engine is left, the connection closes (a command is stopped).
   * @param {string | string[] | {url: string, headers?: Record<string, string>} | {command: string[], env?: Record<string, string>, cwd?: string}} server
   * @param {import('./mcp.mjs').McpClientOptions} [options]
   * @returns {Promise<McpClient>}
   */
  async connectMcp(server, options = undefined) {
    const { headers, env, cwd, ...rest } = options ?? {}
    const native = this.#native.mcpClient(mcpTarget(server, { headers, env, cwd }), rest)
    const tools = settled(await native.connect())
    return new McpClient(native, tools, settled)
  }

  /**
   * Resumes a suspended run (in this process or any other sharing its store); resolves with every call's result.
   * The run is named by its id or by the `BatchResult` that suspended (a result with a pending call always has a
   * `runId`, so the caller need not narrow `runId?`); a result that is no run (nothing in it waited, and no store
   * kept it) throws a `TypeError`.
   * @param {string | BatchResult} run
   * @returns {Promise<BatchResult>}
   */
  async resume(run) {
    const runId = typeof run === 'object' && run !== null ? run.runId : run
    if (runId === undefined) throw new TypeError('this batch is not a run: none of its calls waited and no store kept it')
    return settled(await this.#held(this.#native.resume(String(runId))))
  }

  /**
   * A run as stored (calls, caller, options, latest results, step log, rollback entries), or null.
   * @param {string} runId
   * @returns {Promise<RunRecord | null>}
   */
  async runRecord(runId) {
    return settled(await this.#native.runRecord(String(runId)))
  }

  /**
   * Asks a run to stop, in whichever process runs it (one sharing this engine's store): calls
   * not yet started end `cancelled`, running handlers see `ctx.signal` abort, and a suspended
   * run is cancelled by its next resume. With a PostgreSQL or Redis store the process running it
   * hears at once, else at its next lease heartbeat (5 s by default). Resolves false when the run
   * had already finished; rejects with a `ToolError` `not_found` when there is no such run.
   * @param {string} runId
   * @param {string} [reason]
   * @returns {Promise<boolean>}
   */
  async cancelRun(runId, reason = undefined) {
    return settled(await this.#held(this.#native.cancelRun(String(runId), reason ?? null)))
  }

  /**
   * Waits until none of the run's approval requests awaits a decision (each decided, from any
   * process sharing the store, or expired): resolves true once none does, false when
   * `timeoutMs` ran out. Woken by the decision itself (PostgreSQL and Redis stores carry it
   * between processes), so an agent suspended on approvals goes on as soon as the inbox
   * decides; then `resume(runId)`.
   * @param {string} runId
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<boolean>}
   */
  async waitForDecisions(runId, { timeoutMs = 60_000 } = {}) {
    return settled(await this.#held(this.#native.waitForDecisions(String(runId), clampMs(timeoutMs))))
  }

  /**
   * Undoes the completed calls of a run (or only `callId`), latest first; resolves with the report.
   * @param {string} runId
   * @param {string} [callId]
   * @returns {Promise<RollbackReport>}
   */
  async rollback(runId, callId = undefined) {
    return settled(await this.#held(this.#native.rollback(String(runId), callId ?? null)))
  }

  /**
   * Carries out operators' requests until `signal` aborts. `tooljig resume RUN` and `tooljig
   * rollback RUN` have no handlers: they leave a request in the state store, and the workers
   * serving them take each one (exactly one does), resume or roll back the run with this
   * engine's handlers and record the answer the command prints. `worker` names this process
   * (default `host:pid`); a failing store is retried after a second, with a warning.
   * @param {{worker?: string, signal?: AbortSignal}} [options]
   * @returns {Promise<void>}
   */
  async serveOperatorRequests({ worker = `${hostname()}:${process.pid}`, signal } = {}) {
    while (!signal?.aborted) {
      try {
        await this.serveOperatorRequest({ worker, signal })
      } catch (e) {
        if (!(e instanceof ToolError)) throw e
        console.warn(`tooljig: serving operator requests failed, retrying: ${e.message}`)
        await sleep(1000, undefined, { signal }).catch(() => {})
      }
    }
  }

  /**
   * Waits up to `timeoutMs` for one operator request, carries it out and records the answer;
   * resolves with the answered request, or null when none came (or `signal` aborted the wait).
   * @param {{worker?: string, timeoutMs?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<OperatorRequest | null>}
   */
  async serveOperatorRequest({ worker = `${hostname()}:${process.pid}`, timeoutMs = 60_000, signal } = {}) {
    const [cancel, unlink] = linkSignal(signal)
    try {
      return settled(await this.#held(this.#native.serveOperatorRequest(String(worker), clampMs(timeoutMs), cancel)))
    } finally {
      unlink()
    }
  }

  /**
   * What `tooljig resume` / `tooljig rollback` do, from code without the handlers: leaves the
   * request for the app's workers and wakes them; rejects `not_found` for an unknown run.
   * @param {'resume' | 'rollback'} action
   * @param {string} runId
   * @param {{callId?: string, askedBy?: string}} [options]
   * @returns {Promise<OperatorRequest>}
   */
  async askOperator(action, runId, { callId, askedBy } = {}) {
    return settled(await this.#held(this.#native.askOperator(String(action), String(runId), callId ?? null, askedBy ?? null)))
  }

  /**
   * Waits for a worker's answer to request `id`: `state` is `answered` (`result` or `error`),
   * or when `timeoutMs` ran out `queued` (no worker took it: withdrawn) or `taken`.
   * @param {string} id
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<OperatorRequest>}
   */
  async waitOperatorRequest(id, { timeoutMs = 30_000 } = {}) {
    return settled(await this.#native.waitOperatorRequest(String(id), clampMs(timeoutMs)))
  }

  /**
   * An operator's request as stored now, or null.
   * @param {string} id
   * @returns {Promise<OperatorRequest | null>}
   */
  async operatorRequest(id) {
    return settled(await this.#native.operatorRequest(String(id)))
  }

  /**
   * Registers `fn` as the compensation of `tool`, run by `rollback`: it receives
   * `{arguments, result}` (the call's arguments and data) and a context, like a handler.
   * @param {string} tool
   * @param {Execute<{arguments: unknown, result: unknown}, unknown>} fn
   * @returns {this}
   */
  compensateWith(tool, fn) {
    if (typeof fn !== 'function') throw new TypeError('compensateWith: the compensation must be a function')
    const index = this.#dispatcher.add({ name: String(tool), execute: fn, parse: null })
    this.#native.compensateWith(String(tool), index)
    return this
  }
}
