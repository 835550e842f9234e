// The types of the JS layer's data: pure declarations with no runtime code, so nothing here can
// drift from an implementation. The classes and functions are typed at their source (JSDoc in
// lib/*.mjs, checked by tsc) and their declarations (lib/*.d.mts) are generated from it.
import type { ToolContext } from './context.mjs'
import type { Needs } from './errors.mjs'

/** The closed set of error codes, identical in Rust, Python and Node. */
export type ErrorCode =
  | 'unknown_tool'
  | 'invalid_request'
  | 'malformed_arguments'
  | 'incomplete_arguments'
  | 'arguments_too_large'
  | 'invalid_arguments'
  | 'permission_denied'
  | 'scopes_missing'
  | 'rate_limited'
  | 'conflict'
  | 'approval_rejected'
  | 'approval_expired'
  | 'not_found'
  | 'ambiguous'
  | 'dependency_failed'
  | 'dependency_cycle'
  | 'unknown_dependency'
  | 'too_many_calls'
  | 'timeout'
  | 'deadline_exceeded'
  | 'cancelled'
  | 'external_api_error'
  | 'internal_error'
  | 'outcome_unknown'
  | 'unavailable'
  | 'output_too_large'
  | 'invalid_output'
  | 'pending_approval'
  | 'pending_external'
  | 'pending_job'

/** The error object of a failed envelope; code-specific details sit beside the three fields. */
export interface EnvelopeError {
  code: ErrorCode
  message: string
  retryable: boolean
  [detail: string]: unknown
}

/** What the model sees of one call (the same bytes in every language). */
export type Envelope<T = unknown> =
  | { ok: true; data: T }
  | { ok: false; needs: Record<string, true> }
  | { ok: false; error: EnvelopeError }

/** Where a call stands. */
export type CallStatus = 'done' | 'pending_approval' | 'pending_external' | 'pending_job' | 'waiting' | (string & {})

/** The result of one call: the envelope for the model and what the app needs beside it. */
export interface CallResult {
  callId: string
  tool: string
  status: CallStatus
  envelope: Envelope
  /** Handler attempts made (0 when the call never ran). */
  attempts: number
  repaired: boolean
  replayed: boolean
  cached: boolean
  /** The final arguments, after repair, references and hidden arguments. */
  arguments?: unknown
  /** When the first attempt started, in µs since the batch started. */
  startedUs?: number
  finishedUs: number
  durationUs: number
  /** What the model must not see: an unexpected failure's stack. */
  detail?: string
  /** The approval side: pending, decided, or allowed by a learned preference. */
  approval?: ApprovalInfo
  /** Its idempotency lease had lapsed and it ran again: its effect may have happened twice. */
  recovered?: boolean
  /** What the input schema's `default`s filled in, as JSON Pointers (`/unit`). */
  defaults?: string[]
  /** The call whose handler made this one (`ctx.call`), if any. */
  parent?: ParentCall
  /**
   * What the model sees in place of the data, when the tool's `toModelOutput` or its
   * `modelOutputMaxChars` budget changed it; the envelope keeps the whole data.
   */
  modelOutput?: unknown
  /** Fields later capabilities add (camelCase keys). */
  [field: string]: unknown
}

/** The results of a batch, in call order. */
export interface BatchResult {
  results: CallResult[]
  durationUs: number
  /** The run's id when it was persisted (it suspended, was atomic, can be compensated, or a `stateStore` is set). */
  runId?: string
  /** The automatic rollback of an atomic batch that failed. */
  rollback?: RollbackReport
  [field: string]: unknown
}

/** A call a model proposed. `arguments` is a JSON string (repaired if need be) or a value. */
export interface Call {
  id?: string
  tool: string
  arguments?: unknown
  dependsOn?: string[]
  runIfDependencyFailed?: boolean
  /** The app's request id (or the provider's tool-call id) for `idempotency: {mode: 'key'}` tools. */
  idempotencyKey?: string
  [field: string]: unknown
}

/** Who a batch runs for. Handlers see it; the model never does. */
export interface Caller {
  principal?: string | null
  tenant?: string | null
  roles?: string[]
  scopes?: string[]
  attributes?: Record<string, unknown>
  session?: string | null
  [field: string]: unknown
}

/** Options of one batch. */
export interface RunOptions {
  caller?: Caller
  /**
   * Most calls running the app's code (hooks, resolvers, handlers) at once (default 256). A
   * call waiting for the state store gives its place up meanwhile, except in an atomic batch.
   */
  concurrency?: number
  /** Wall-time budget of the whole batch. */
  deadlineMs?: number
  /** Most calls a batch may hold; later ones are refused with `too_many_calls`. */
  maxCalls?: number
  /** Cancels the batch: running calls end as `cancelled` and their handlers' signals fire. */
  signal?: AbortSignal
  /** Once a call fails no further call starts, and completed calls are compensated. */
  atomic?: boolean
  /** W3C Trace Context of the app's request: the batch's span is its child (`exportTraces`). */
  traceparent?: string
  [option: string]: unknown
}

/** Retries of retryable failures. */
export interface RetryPolicy {
  /** Total attempts, the first included. */
  attempts?: number
  backoffMs?: number
  multiplier?: number
  maxBackoffMs?: number
  /** Codes worth retrying; empty means every error flagged retryable. */
  on?: ErrorCode[]
}

/**
 * How a tool runs: `register`'s third argument. Keys are camelCase (snake_case works too);
 * only this level, `retry` and (on input) `approval`, `idempotency`, `cache` and each of
 * `rateLimits` are renamed, so fields guardrails add take their nested objects in the core's
 * spelling. `specs()` exports `approval`, `idempotency`, `cache` and `rate_limits` in the
 * core's spelling (`approver_roles`, `ttl_ms`, `per_ms`).
 */
export interface Policy {
  /** Time allowed for one attempt (default 30 000); null for none. */
  timeoutMs?: number | null
  retry?: RetryPolicy
  /** Tools this tool runs after when both are in one batch. */
  after?: string[]
  maxOutputBytes?: number | null
  onOutputTooLarge?: 'truncate' | 'error'
  /** How dangerous a call is; `approvalRules.minRisk` compares against it. */
  risk?: Risk
  /** Replays a finished call instead of running it twice (docs/durable-runs.md). */
  idempotency?: { mode: 'off' | 'arguments' | 'key'; ttlMs?: number; leaseMs?: number }
  /** Caches a read tool's results (docs/guardrails.md): per principal by default. */
  cache?: { ttlMs: number; scope?: 'principal' | 'tenant' | 'global' }
  /** Calls allowed per window, each limit on its own (docs/guardrails.md). */
  rateLimits?: { max: number; perMs: number; burst?: number; scope?: 'principal' | 'tenant' | 'global' }[]
  /** Whether calls need a human decision, and who may decide. */
  approval?: { required?: 'auto' | 'always' | 'never'; expiresMs?: number; approverRoles?: string[] }
  /** The tool that undoes this one on rollback. */
  compensation?: string
  /**
   * Whether a call may run again when a crash left its outcome unknown: `pure` and
   * `idempotent` do (with the same `ctx.idempotencyKey`), `at_most_once` ends as
   * `outcome_unknown`. Unset: `pure` for read tools, `at_most_once` for the others.
   */
  effectClass?: 'pure' | 'idempotent' | 'at_most_once'
  /** Tools this tool's handler may call through `ctx.call` / `ctx.run` (`'*'`: any). */
  mayCall?: string[]
  /**
   * Only other tools call it (`ctx.call` / `ctx.run`), never a model: left out of the specs a
   * model is handed and of tool search; a call in a batch no handler made is refused
   * `permission_denied` (`reason: 'internal'`).
   */
  internal?: boolean
  /**
   * How long a background job the handler accepts (`return accepted(job)`) may take before
   * its call ends as a `timeout`, in ms; unset, the engine's `externalExpiryMs`.
   */
  jobExpiryMs?: number
  /** Most characters of the tool's data the model reads (after `toModelOutput`); longer, a marked prefix. */
  modelOutputMaxChars?: number
  /** Most tokens (OpenAI's o200k_base) of the tool's data the model reads; longer, a marked prefix. */
  modelOutputMaxTokens?: number
  [field: string]: unknown
}

/** The call a nested call was made from. */
export interface ParentCall {
  runId: string
  callId: string
  tool: string
  /** 1 for a call a top-level call's handler made. */
  depth: number
}

/** Risk levels, lowest first. */
export type Risk = 'low' | 'medium' | 'high'

/** Where an approval request stands. */
export type ApprovalStatus = 'pending' | 'approved' | 'edited' | 'rejected' | 'expired'

/** The approval side of a call's result. */
export interface ApprovalInfo {
  /** The request's id; absent when a learned preference allowed the call. */
  id?: string
  status: ApprovalStatus
  /** SHA-256 of the canonical arguments; every decision must name it. */
  argumentsHash: string
  risk: Risk
  requestedBy?: string
  expiresAtMs?: number
  decidedBy?: string
  decidedAtMs?: number
  preferenceId?: string
  reason?: string
}

/** An approval request as stored. */
export interface ApprovalRecord {
  id: string
  runId: string
  callId: string
  tool: string
  /** Exactly what will run (after hidden arguments and resolvers). */
  arguments: unknown
  argumentsHash: string
  risk: Risk
  requestedBy: Caller
  requestedAtMs: number
  expiresAtMs: number
  approverRoles: string[]
  status: ApprovalStatus
  decision?: { by: string; atMs: number; message?: string; approvedArguments?: unknown; approvedHash?: string }
}

/** A human decision, bound to the arguments hash it was made for. */
export type Decision =
  | { decision: 'approve'; argumentsHash: string; remember?: { scope: string[] } }
  | { decision: 'reject'; argumentsHash: string; message?: string }
  | { decision: 'edit'; argumentsHash: string; arguments: unknown }

/** A standing "always allow" for one principal and tool. */
export interface Preference {
  id: string
  principal: string
  tenant?: string
  tool: string
  /** Top-level argument values a call must carry; empty allows every call. */
  values: Record<string, unknown>
  createdAtMs: number
}

/** A client-side call of a run, waiting for (or holding) its submitted result. */
export interface ExternalCall {
  runId: string
  callId: string
  tool: string
  arguments: unknown
  createdAtMs: number
  expiresAtMs: number
  status: 'pending' | 'submitted'
  envelope?: Envelope
  submittedAtMs?: number
}

/** A background job's call: where it stands, and what it returns once reported. */
export interface JobStatus {
  job: string
  state: 'pending' | 'completed' | 'failed' | 'expired'
  runId: string
  callId: string
  tool: string
  arguments: unknown
  createdAtMs: number
  expiresAtMs: number
  completedAtMs?: number
  envelope?: Envelope
}

/** One call's line in a rollback report. */
export interface RollbackEntry {
  callId: string
  tool: string
  outcome: 'compensated' | 'not_reversible' | 'nothing_to_undo' | 'failed' | 'already_rolled_back'
  /** The compensation that ran: a tool name, or `handler` (`compensateWith`). */
  compensation?: string
  envelope?: Envelope
  message: string
  atMs: number
}

/** What a rollback did, latest completion first. */
/**
 * An operator's request to resume or roll back a run (`tooljig resume`, `tooljig rollback`),
 * carried out by an app worker serving them. `result` is a resume's `BatchResult` or a
 * rollback's `RollbackReport`; `error` the engine's refusal.
 */
export interface OperatorRequest {
  id: string
  action: 'resume' | 'rollback'
  runId: string
  callId?: string
  askedBy?: string
  askedAtMs: number
  state: 'queued' | 'taken' | 'answered'
  worker?: string
  leaseUntilMs?: number
  answeredAtMs?: number
  result?: BatchResult | RollbackReport
  error?: { code: string; message: string; retryable: boolean; details: Record<string, unknown> }
}

export interface RollbackReport {
  runId: string
  entries: RollbackEntry[]
}

/** A run as stored: calls, caller, options, latest results and what happened. */
export interface RunRecord {
  id: string
  caller: Caller
  calls: Call[]
  options: Record<string, unknown>
  results: CallResult[]
  state: 'suspended' | 'finished'
  /** Calls that succeeded, in completion order. */
  completed: string[]
  steps: Array<{ atMs: number; pass: number; what: string; callId?: string; detail?: unknown }>
  passes: number
  createdAtMs: number
  rollback: RollbackEntry[]
  [field: string]: unknown
}

/** What an approval predicate sees. */
export interface ApprovalQuery {
  tool: string
  arguments: unknown
  caller: Caller
  risk: Risk
}

/** A tool as data, as `specs()` exports it. */
export interface ToolSpec {
  name: string
  description: string
  inputSchema: JsonSchema
  outputSchema?: JsonSchema
  originalName?: string
  policy: Policy
  [field: string]: unknown
}

/** A JSON Schema object (draft 2020-12 or draft 7). */
export type JsonSchema = Record<string, unknown> | boolean

/** The Standard Schema interface (zod 4, Valibot, ArkType, ...), as far as tooljig uses it. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1
    readonly vendor: string
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>
    readonly types?: { readonly input: Input; readonly output: Output } | undefined
  }
}

export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> }> }

export type InferOutput<S> = S extends StandardSchemaV1<any, infer O> ? O : never

/** What `execute` may return: data (JSON), `needs(...)`, or a Promise of either. */
export type Execute<Args, Out> = (args: Args, ctx: ToolContext) => Out | Needs | Promise<Out | Needs>

/** What a tool's `onSuccess` hook receives: the call's arguments (as validated, defaults filled) and its data. */
export interface SuccessEvent<Args = Record<string, unknown>, Out = unknown> {
  arguments: Args
  result: Out
}

/** A tool's hooks on its results, beside `execute`. */
export interface ToolHooks<Out = unknown, Args = Record<string, unknown>> {
  /**
   * Turns the tool's data into what the model reads (a summary, a reference to an image); the
   * app still gets the whole result (`CallResult.modelOutput` holds the model's). It runs like
   * `execute`, under the tool's timeout; if it throws, the model reads that the output could not
   * be shown, never the data.
   */
  toModelOutput?: (output: Out, ctx: ToolContext) => unknown
  /**
   * Runs after each call that succeeded, out of the model's reach (a notification, an outbox
   * record): once per run of `execute`, never for a refusal, a failure or a replayed duplicate.
   * It runs like `execute`, under the tool's timeout; what it returns is ignored, and if it
   * throws the result stays as it was and `detail` (and the audit record) says why.
   */
  onSuccess?: (event: SuccessEvent<Args, Out>, ctx: ToolContext) => unknown
}

/** A tool definition, as in the Vercel AI SDK. Without `execute`, the tool is client-side. */
export interface Tool<Args = any, Out = unknown> extends ToolHooks<Out, Args> {
  description?: string
  /** A zod (Standard) schema, or a JSON Schema object. Default: an object with any properties. */
  inputSchema?: StandardSchemaV1<any, Args> | JsonSchema
  /** Checked after every successful run (`invalid_output` when violated). */
  outputSchema?: StandardSchemaV1<any, Out> | JsonSchema
  execute?: Execute<Args, Out>
  /**
   * With a Standard Schema input: parse validated arguments with it before `execute` (defaults,
   * transforms, refinements; a refinement failure is `invalid_arguments`). Default true.
   */
  parseArguments?: boolean
}

/** Events of a batch, as they happen (`atUs`: µs since the batch started). */
export type BatchEvent =
  /** `runId`: the batch's run, known before any call runs (`cancelRun(runId)` with a `stateStore`). */
  | { type: 'batch_started'; atUs: number; calls: number; runId: string }
  | { type: 'call_planned'; atUs: number; callId: string; tool: string; dependsOn: string[] }
  | { type: 'call_started'; atUs: number; callId: string; tool: string; attempt: number }
  | { type: 'call_retried'; atUs: number; callId: string; tool: string; attempt: number; delayMs: number; error: EnvelopeError }
  | { type: 'call_finished'; atUs: number; result: CallResult }
  | { type: 'batch_finished'; atUs: number; durationUs: number }

/** A running batch: its events (`for await`) and its final result. */
export interface BatchStream extends AsyncIterable<BatchEvent> {
  readonly result: Promise<BatchResult>
}

/** What the policy hook is asked, once per call, after validation and hidden arguments. */
export interface AccessRequest {
  tool: string
  callId: string
  /** The final arguments: validated, hidden ones filled, references resolved. */
  arguments: unknown
  caller: Caller
  risk: string
  effect: string
  [field: string]: unknown
}

/** The policy hook's answer: `true` allows, `false` or `{allow: false, reason}` refuses. */
export type AccessDecision = boolean | { allow: boolean; reason?: string }

/** What a resolver is asked: turn a human reference into a value the server trusts. */
export interface ResolveRequest {
  tool: string
  /** The hidden parameter to fill. */
  parameter: string
  /** The model-facing argument the reference came from. */
  input: string
  /** The human reference the model passed. */
  value: unknown
  caller: Caller
  [field: string]: unknown
}

/** A resolver's answer. */
export type Resolution =
  | { status: 'found'; value: unknown }
  | { status: 'not_found' }
  | { status: 'ambiguous'; candidates: unknown[] }

/** Enabled flags: tool name (or `'*'`) → on/off, per level; system overrides tenant, then department, then user. */
export interface Settings {
  system?: Record<string, boolean>
  tenants?: Record<string, Record<string, boolean>>
  departments?: Record<string, Record<string, boolean>>
  users?: Record<string, Record<string, boolean>>
}

/** Filters of `engine.audit()`. */
export interface AuditQuery {
  principal?: string
  tenant?: string
  tool?: string
  callId?: string
  outcome?: string
  code?: ErrorCode
  sinceMs?: number
  untilMs?: number
  limit?: number
}

/** One audited call (camelCase keys; nested values as the core writes them). */
export interface AuditRecord {
  callId: string
  tool: string
  outcome: string
  code?: ErrorCode | null
  [field: string]: unknown
}

/** Engine-wide options. */
export interface EngineOptions {
  /** Argument size and nesting limits. */
  limits?: { maxArgumentBytes?: number; maxDepth?: number }
  /** Documents schemas may `$ref`, by URI (nothing is fetched). */
  schemaResources?: Record<string, JsonSchema>
  /** Enabled flags per level. */
  settings?: Settings
  /** Where audit records go: in memory, an SQLite file, or a JSON Lines file. */
  audit?: 'memory' | `sqlite:${string}` | `jsonl:${string}` | `postgres:${string}` | `postgresql:${string}` | { sqlite: string } | { jsonl: string } | { postgres: string }
  /** The app's own access check, the last word before a call runs. A throw fails closed. */
  policyHook?: (request: AccessRequest) => AccessDecision | Promise<AccessDecision>
  /** Resolvers hidden parameters name (`{from: 'resolver', resolver: name}` in a policy). */
  resolvers?: Record<string, (request: ResolveRequest) => Resolution | Promise<Resolution>>
  /** Where durable state lives; with one, every batch is a run resumable from any process sharing it. */
  stateStore?: 'memory' | `sqlite:${string}` | `postgres:${string}` | `postgresql:${string}` | `redis:${string}` | { sqlite: string } | { postgres: string } | { redis: string }
  /** Where rate-limit budgets live: `'memory'` (per process) or `'redis://HOST:PORT/DB?prefix=NAME'` (a cluster: `'redis+cluster://HOST:PORT,HOST:PORT'`; shared by every worker; unreachable: limited calls end `unavailable`). */
  rateLimiter?: 'memory' | `redis:${string}`
  /** Where read tools' cached results live: `'memory'` (per process) or `'redis://HOST:PORT/DB?prefix=NAME'` (a cluster: `'redis+cluster://HOST:PORT,HOST:PORT'`; shared by every worker; unreachable: a miss). */
  resultCache?: 'memory' | `redis:${string}`
  /** Calls of tools at this risk or above need approval. */
  approvalRules?: { minRisk?: Risk | null }
  /** The app's rule: true when a call needs a human decision. A throw or a non-boolean counts as true. */
  approvalPredicate?: (query: ApprovalQuery) => boolean | Promise<boolean>
  /** How long client-side calls wait for a submitted result (default 24 h). */
  externalExpiryMs?: number
  /** How soon another process may take over a run whose process died (default 15 000 ms). */
  runLeaseMs?: number
  /**
   * The app's secret (at least 32 bytes) sealing the audit chain and stored approval decisions
   * with HMAC-SHA256: bytes, or `'env:NAME'`, `'file:PATH'`, `'hex:HEX'` or the key itself.
   */
  sealKey?: Uint8Array | string | null
  /** Where the audit log's head is written after every commit, out of band (a file-backed log). */
  auditAnchor?: string | null
}

/** One violation found by a handler's own validation: where, and what is wrong. */
export interface Violation {
  /** Keys and indexes leading to the offending value; empty (or absent) for the whole. */
  path?: Array<string | number>
  message: string
}

/** Codes of registration mistakes. */
export type RegistrationErrorCode =
  | 'invalid_name'
  | 'duplicate_tool'
  | 'invalid_schema'
  | 'invalid_policy'
  | 'invalid_spec'
  | 'invalid_tool'

export type ProviderName = 'openai_chat' | 'openai_responses' | 'anthropic' | 'gemini'

/** A tool call as a model made it: `arguments` exactly as received (JSON text or a value). */
export interface ToolCall {
  id: string
  name: string
  arguments: unknown
  /** The stream ended inside the arguments: the call must never run. */
  incomplete?: boolean
  /** What must be echoed back to the provider (a Responses item id, a Gemini thought signature). */
  providerData?: unknown
}

/** One call's result in a conversation. */
export interface ToolResult {
  callId: string
  name: string
  envelope: Envelope
}

/** One message of a provider-neutral conversation. */
export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; results: ToolResult[] }

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'refusal' | 'unfinished' | 'other'

export interface Usage {
  inputTokens: number
  outputTokens: number
}

/** What one model call produced, whatever the provider. */
export interface ModelTurn {
  content: string
  toolCalls: ToolCall[]
  finishReason: FinishReason
  rawFinishReason?: string
  usage?: Usage
  refusal?: string
  model?: string
}

export type ToolChoice = 'auto' | 'required' | 'none' | { tool: string }

/** Everything a model call needs, provider-neutral. */
export interface ModelRequest {
  model: string
  messages: Message[]
  tools?: ToolSpec[]
  toolChoice?: ToolChoice
  maxTokens?: number
  temperature?: number
  stream?: boolean
  responseSchema?: unknown
}

export interface ProviderOptions {
  /** OpenAI formats: offer tools in strict mode. */
  strict?: boolean
  /** Ask for one call at a time. */
  sequentialToolCalls?: boolean
  /** Gemini: parameters in the OpenAPI subset. */
  openapiSchema?: boolean
}

/** A call result the app made itself needs only these fields. */
export type ResultInput = Partial<CallResult> & { callId: string; tool: string; envelope: Envelope }

export interface JsonProtocolOptions {
  shape?: 'per_tool' | 'flat'
  dependencies?: boolean
  reasoning?: boolean
  maxCalls?: number
}

export interface JsonPlan {
  calls: Call[]
  reasoning: string | null
  repaired: boolean
}

/** One thing that happened while a model answered or a run went on. */
export type StreamEvent =
  | { type: 'start'; runId: string }
  | { type: 'step_start'; step: number }
  | { type: 'text_delta'; delta: string }
  | { type: 'reasoning_delta'; delta: string }
  | { type: 'tool_input_start'; callId: string; tool: string }
  | { type: 'tool_input_delta'; callId: string; delta: string; partial?: unknown }
  | { type: 'tool_input_available'; callId: string; tool: string; input: unknown }
  | { type: 'tool_input_incomplete'; callId: string; tool: string; text: string; partial?: unknown; reason: string }
  | { type: 'tool_output_available'; callId: string; tool: string; output: unknown }
  | { type: 'tool_output_error'; callId: string; tool: string; error: EnvelopeError }
  | { type: 'tool_approval_request'; callId: string; tool: string; approvalId: string }
  | { type: 'tool_output_pending'; callId: string; tool: string; input: unknown }
  | { type: 'step_finish'; step: number; finishReason: FinishReason; usage: Usage }
  | { type: 'finish'; finishReason: FinishReason }
  | { type: 'error'; message: string }

/** What `pipeUiMessageStream` writes to: a `node:http` ServerResponse, or alike. */
export interface ResponseLike {
  readonly headersSent?: boolean
  writeHead(status: number, headers: Record<string, string>): unknown
  write(chunk: string): unknown
  end(chunk?: string): unknown
}

export * from './agent-types.mjs'
