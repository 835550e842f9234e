// The agent loop: the idiomatic face of `src/agent.rs` and `src/model.rs`. Models (a JS
// function over the app's own SDK, the core's HTTP clients, a fallback chain, a script),
// the conversation state, and `Agent`, whose runs are awaited for their outcome and iterated
// (`for await`) for their events.
import native from '../index.js'
import { Dispatcher, wakeOf } from './dispatch.mjs'
import { appFunction, nativeEngine, pinUntil, releaseWhenCollected } from './engine.mjs'
import { ToolError } from './errors.mjs'
import { callResults } from './providers.mjs'
/** @import { AgentOptions, AgentRunOptions, BreakerStatus, Message, ModelErrorKind, ModelFunction, ModelRequest, ResultInput, RunCounters, RunStatus, TurnInput } from './types.mjs' */
/** @import { ModelTurn as ModelTurnData, AgentRun as AgentRunHandle, HttpModelOptions } from './types.mjs' */
/** @import { Engine } from './engine.mjs' */

const { NativeAgent, NativeFallback, NativeModel } = native

/**
 * Kinds of model failure; they decide retries and fallbacks.
 * @type {readonly ModelErrorKind[]}
 */
export const MODEL_ERROR_KINDS = Object.freeze([
  'rate_limited', 'server', 'timeout', 'network', 'auth', 'invalid_request', 'bad_response', 'circuit_open', 'other',
])

/** A failed model call. A model function throws one to say what kind of failure it was. */
export class ModelError extends Error {
  /**
   * @param {ModelErrorKind} kind
   * @param {string} message
   * @param {{status?: number, retryAfterMs?: number, cause?: unknown}} [options]
   */
  constructor(kind, message, options = {}) {
    if (!MODEL_ERROR_KINDS.includes(kind)) throw new TypeError(`unknown model error kind ${JSON.stringify(kind)}; expected one of ${MODEL_ERROR_KINDS.join(', ')}`)
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ModelError'
    this.kind = kind
    this.status = options.status
    this.retryAfterMs = options.retryAfterMs
  }
}

/** What the core reads of a model function's failure. SDK errors with a `status` keep it. */
function failureOf(e) {
  if (e instanceof ModelError) return { kind: e.kind, message: e.message, status: e.status, retryAfterMs: e.retryAfterMs }
  const status = Number.isInteger(e?.status) ? e.status : undefined
  const message = e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : `a non-Error value was thrown: ${String(e)}`
  // No kind: the core takes it from the status, as its HTTP clients do.
  return { message, status }
}

const wrap = Symbol('tooljig.model')

/** A model the agent can call. Build one with `Model.fromFunction`, `HttpModel`, `FallbackChain` or `ScriptedModel`. */
export class Model {
  #native
  /** What the model keeps alive with it: the dispatcher of a model in JavaScript. */
  #held

  /**
   * @param {symbol} token
   * @param {any} nativeModel
   * @param {object | null} [held]
   */
  constructor(token, nativeModel, held = null) {
    if (token !== wrap) throw new TypeError('use Model.fromFunction, HttpModel.*, new FallbackChain or new ScriptedModel')
    this.#native = nativeModel
    this.#held = held
  }

  /**
   * A model over the app's own SDK: `fn(request, emit)` answers a neutral request
   * (`{model, messages, tools, toolChoice, maxTokens, temperature, stream, responseSchema}`)
   * with a turn (`{content, toolCalls: [{id, name, arguments}], finishReason, usage}`) or a
   * string. While it answers it may `emit(...events)` stream events (`{type: 'text_delta',
   * delta}`, ...) for the run's consumers; events are dropped when nobody streams. Throwing a
   * `ModelError` says what kind of failure it was (an error with an HTTP `status` is
   * classified by it); anything else is `other`.
   * @param {ModelFunction} fn
   * @param {{name?: string}} [options]
   * @returns {Model}
   */
  static fromFunction(fn, { name } = {}) {
    if (typeof fn !== 'function') throw new TypeError('a model must be a function (request, emit) => turn')
    const dispatcher = new Dispatcher()
    const nativeModel = NativeModel.fromFunction(name ?? (fn.name || 'function'), wakeOf(dispatcher))
    dispatcher.native = nativeModel
    dispatcher.resolvers.push(async ({ request, stream }) => {
      const emit = (...events) => (stream === null ? false : nativeModel.emit(stream, JSON.stringify(events.flat())))
      try {
        // The core defaults the turn (a string is a text answer; `finishReason` inferred).
        return { turn: (await fn(request, emit)) ?? null }
      } catch (e) {
        return { error: failureOf(e) }
      }
    })
    const model = new Model(wrap, nativeModel, dispatcher)
    // Let go of its JS wrapper once the app no longer holds it, as an engine does: agents and
    // fallback chains hold the models they use, and an agent is pinned while it runs.
    releaseWhenCollected(model, nativeModel)
    return model
  }

  /**
   * The model's name.
   * @returns {string}
   */
  get name() {
    return this.#native.name
  }

  /**
   * Asks the model once (no tools run): resolves with its turn; rejects with a `ModelError`.
   * @param {ModelRequest} request
   * @returns {Promise<ModelTurnData>}
   */
  async respond(request) {
    const answer = this.#native.respond(request)
    // A model in JavaScript answers through its dispatcher, which only the model holds.
    pinUntil(this, answer)
    try {
      return JSON.parse(await answer)
    } catch (e) {
      const m = typeof e?.message === 'string' ? e.message : ''
      if (!m.startsWith('ModelError: ')) throw e
      const f = JSON.parse(m.slice('ModelError: '.length))
      throw new ModelError(f.kind, f.message, { status: f.status, retryAfterMs: f.retryAfterMs, cause: e })
    }
  }

  /** @internal the native model, for `Agent` and `FallbackChain`. */
  static native(model) {
    if (!(model instanceof Model)) throw new TypeError('expected a tooljig Model')
    return model.#native
  }
}

/**
 * The core's HTTP clients (streaming, timeouts, retries with backoff on 429 and 5xx, API key
 * from the environment). Options: `{baseUrl, apiKey, apiKeyEnv, timeoutMs, connectTimeoutMs,
 * maxRetries, initialBackoffMs, maxBackoffMs, stream, strict, headers}`; `headers`
 * (`{name: value}`) go with every request, replacing a default of the same name.
 */
export const HttpModel = Object.freeze({
  /** Chat Completions at OpenAI (`OPENAI_API_KEY`) or any compatible server (`baseUrl`: Ollama, vLLM, llama.cpp). */
  openaiCompatible: (/** @type {string} */ model, /** @type {HttpModelOptions | undefined} */ options = undefined) => new Model(wrap, NativeModel.http('openai_compatible', model, options ?? null)),
  /** OpenAI Responses (`OPENAI_API_KEY`). */
  openaiResponses: (/** @type {string} */ model, /** @type {HttpModelOptions | undefined} */ options = undefined) => new Model(wrap, NativeModel.http('openai_responses', model, options ?? null)),
  /** Anthropic Messages (`ANTHROPIC_API_KEY`). */
  anthropic: (/** @type {string} */ model, /** @type {HttpModelOptions | undefined} */ options = undefined) => new Model(wrap, NativeModel.http('anthropic', model, options ?? null)),
  /** Gemini (`GEMINI_API_KEY`). */
  gemini: (/** @type {string} */ model, /** @type {HttpModelOptions | undefined} */ options = undefined) => new Model(wrap, NativeModel.http('gemini', model, options ?? null)),
})

/**
 * Models behind circuit breakers: a request goes to the first model whose breaker is closed,
 * and on failure on to the next. `threshold` failures in a row open a breaker for `cooldownMs`.
 */
export class FallbackChain extends Model {
  /** The models it falls back across, held while it is. */
  #models

  /**
   * @param {Model[]} models
   * @param {{threshold?: number, cooldownMs?: number}} [options]
   */
  constructor(models, { threshold, cooldownMs } = {}) {
    const builder = new NativeFallback()
    for (const m of models) builder.add(Model.native(m))
    super(wrap, builder.build(threshold ?? null, cooldownMs ?? null))
    this.#models = [...models]
  }

  /**
   * Each model's breaker: `{model, state, consecutiveFailures, successes, failures}`.
   * @returns {BreakerStatus[]}
   */
  status() {
    return Model.native(this).status()
  }
}

/**
 * A model that plays back a script, for tests and examples: each step is a turn (or a
 * string: a text answer) or `{error: {kind, message}}`.
 */
export class ScriptedModel extends Model {
  /**
   * @param {Array<TurnInput | {error: {kind: ModelErrorKind, message: string}}>} steps
   * @param {{name?: string, streaming?: boolean, forever?: TurnInput}} [options]
   */
  constructor(steps, { name = 'scripted', streaming = false, forever } = {}) {
    // The core reads each step (a turn, a string, `{error}`) as it reads every binding's scripts.
    super(wrap, NativeModel.scripted(name, [...steps], streaming, forever ?? null))
  }

  /**
   * Every request received, in order.
   * @returns {ModelRequest[]}
   */
  requests() {
    return Model.native(this).requests()
  }
}

/**
 * A conversation run's state. `JSON.stringify(state)` stores it (the core's own format, the
 * same the Python binding stores); `AgentState.fromJSON` reads it back, maybe in another
 * process, to resume a suspended run.
 */
export class AgentState {
  #text

  /**
   * A new run whose first user message is `message`.
   * @param {string} [message]
   */
  constructor(message = '') {
    this.#text = NativeAgent.newState(String(message))
  }

  /**
   * A run over an existing neutral conversation (`[{role, content, toolCalls?, results?}]`).
   * @param {Message[]} messages
   * @returns {AgentState}
   */
  static fromMessages(messages) {
    const s = new AgentState()
    s.#text = NativeAgent.stateFromMessages(messages)
    return s
  }

  /**
   * A state stored with `JSON.stringify(state)` (text, or the parsed object).
   * @param {string | object} stored
   * @returns {AgentState}
   */
  static fromJSON(stored) {
    const text = typeof stored === 'string' ? stored : JSON.stringify(stored)
    NativeAgent.stateView(text)
    const s = new AgentState()
    s.#text = text
    return s
  }

  /**
   * The stored form (the core's JSON, as an object).
   * @returns {object}
   */
  toJSON() {
    return JSON.parse(this.#text)
  }

  /**
   * Every field, camelCase: `{runId, messages, status, counters, answer, suspended, ...}`.
   * @returns {Record<string, unknown> & {runId: string, messages: Message[], status: RunStatus, counters: RunCounters, answer: string}}
   */
  view() {
    return NativeAgent.stateView(this.#text)
  }

  /**
   * @returns {string}
   */
  get runId() {
    return this.view().runId
  }

  /**
   * The neutral conversation so far.
   * @returns {Message[]}
   */
  get messages() {
    return this.view().messages
  }

  /**
   * Where the run stands: `{status: 'idle' | 'finished' | 'needs_input' | 'suspended', ...}`.
   * @returns {RunStatus}
   */
  get status() {
    return this.view().status
  }

  /**
   * The run's counters.
   * @returns {RunCounters}
   */
  get counters() {
    return this.view().counters
  }

  /** @internal */
  static text(state) {
    if (!(state instanceof AgentState)) throw new TypeError('expected an AgentState')
    return state.#text
  }

  /** @internal */
  static update(state, text) {
    state.#text = text
  }
}

/** The events of one run (`for await`) and its outcome (`await run`, or `run.outcome`). */
class AgentRun {
  #native
  /** Keeps the agent (and the selector its engine calls) alive while the run goes on. */
  #agent

  constructor(nativeRun, state, agent) {
    this.#native = nativeRun
    this.#agent = agent
    this.outcome = nativeRun.result().then((text) => {
      const done = JSON.parse(text)
      if (done.error) {
        const { code, message, retryable, ...details } = done.error
        throw new ToolError(code, message, { retryable, details })
      }
      AgentState.update(state, done.state)
      return done.outcome
    })
    // Iterating only the events must not leave an unhandled rejection behind.
    this.outcome.catch(() => {})
  }

  then(resolve, reject) {
    return this.outcome.then(resolve, reject)
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      const text = await this.#native.next()
      if (text === null) return
      yield* JSON.parse(text)
    }
  }
}

function runOptions(options) {
  if (options === undefined || options === null) return null
  if (typeof options !== 'object') throw new TypeError('run options must be an object ({caller, mode})')
  return JSON.stringify(options)
}

/**
 * Planner → executor → responder over an engine's tools, until the model answers in text or
 * a limit ends the run (always with an answer). `options`: `{responder, system, limits:
 * {maxSteps, maxToolCallsPerStep, maxToolCallsPerRun, deadlineMs, tokenBudget,
 * batchDeadlineMs}, mode: 'act_first' | 'talk_first' | 'auto', responderTools, protocol:
 * 'native' | {json: {shape, dependencies, reasoning, maxCalls}}, maxTokens, temperature,
 * concurrency, offerTools, selectTools}` (`offerTools`: at most this many tools a turn, the
 * best matches of the user's latest message plus `search_tools`; `selectTools(message, tools)`,
 * may be async: the names of the tools a turn offers, picked from the specs the caller may
 * use; names it makes up are ignored, and if it throws every candidate is offered;
 * `reviewPlan(message, calls, tools)`, may be async: the last word on each turn's plan, the
 * calls to run (`{id?, name, arguments?}`) from the model's (`{id, name, arguments}`) and the
 * names of the tools the caller may use, such as a needed call the model skipped; if it
 * throws the model's calls run). The responder may also be the third argument.
 */
/** Frees an agent's hooks from its engine's table once the agent is collected. */
const selectors = new FinalizationRegistry((release) => release())

export class Agent {
  #native
  /** The engine its tools run through, and its models: held while it is. */
  #uses

  /**
   * @param {Engine} engine
   * @param {Model} model
   * @param {Model | AgentOptions} [responder]
   * @param {AgentOptions} [options]
   */
  constructor(engine, model, responder = undefined, options = undefined) {
    if (!(responder instanceof Model)) {
      options = responder
      responder = options?.responder
    }
    const { responder: _ignored, selectTools, reviewPlan, ...rest } = options ?? {}
    const nativeEng = nativeEngine(engine)
    if (!nativeEng) throw new TypeError('Agent needs a tooljig Engine')
    let selector = null
    if (selectTools !== undefined) {
      if (typeof selectTools !== 'function') throw new TypeError('selectTools must be a function')
      const [index, release] = appFunction(engine, 'select_tools', (request) => selectTools(request.message, request.tools))
      selectors.register(this, release)
      selector = index
    }
    let reviewer = null
    if (reviewPlan !== undefined) {
      if (typeof reviewPlan !== 'function') throw new TypeError('reviewPlan must be a function')
      const [index, release] = appFunction(engine, 'review_plan', (request) => reviewPlan(request.message, request.calls, request.tools))
      selectors.register(this, release)
      reviewer = index
    }
    this.#native = new NativeAgent(nativeEng, Model.native(model), responder ? Model.native(responder) : null, rest, selector, reviewer)
    this.#uses = [engine, model, responder]
  }

  #start(action, state, input, options) {
    const run = new AgentRun(this.#native.start(action, AgentState.text(state), input, runOptions(options)), state, this)
    // Its engine and models must outlive the app's hold on them meanwhile.
    pinUntil(this, run.outcome)
    return run
  }

  /**
   * Runs the conversation in `state` (ending with a user message). `options`: `{caller,
   * mode}`. Await it for the outcome `{status, answer, counters}`; iterate it for events.
   * @param {AgentState} state
   * @param {AgentRunOptions} [options]
   * @returns {AgentRunHandle}
   */
  run(state, options = undefined) {
    return this.#start('run', state, null, options)
  }

  /**
   * Adds the user's message (a new request, or the answer to a question) and runs.
   * @param {AgentState} state
   * @param {string} message
   * @param {AgentRunOptions} [options]
   * @returns {AgentRunHandle}
   */
  send(state, message, options = undefined) {
    return this.#start('send', state, String(message), options)
  }

  /**
   * Continues a suspended run once its calls were settled through the engine.
   * @param {AgentState} state
   * @param {AgentRunOptions} [options]
   * @returns {AgentRunHandle}
   */
  resume(state, options = undefined) {
    return this.#start('resume', state, null, options)
  }

  /**
   * Continues a suspended run with results the app obtained itself (`{callId, tool, status, envelope}` each).
   * @param {AgentState} state
   * @param {ResultInput[]} results
   * @param {AgentRunOptions} [options]
   * @returns {AgentRunHandle}
   */
  resumeWithResults(state, results, options = undefined) {
    return this.#start('resumeWithResults', state, JSON.stringify(callResults(results)), options)
  }
}
