// What a handler knows about the call it runs. Never reaches the model.
import { callsText } from './calls.mjs'
import { ToolError } from './errors.mjs'
import { idempotencyKey } from './native.mjs'

const abortReason = () =>
  new DOMException('tooljig ended this call (timeout, batch deadline or cancellation)', 'AbortError')

/** Fires a context's signal; internal to the dispatcher. */
export const abortCall = Symbol('tooljig.abort')

/** The context handed to `execute(args, ctx)`. */
export class ToolContext {
  /** @type {AbortController | undefined} */
  #controller
  #aborted = false
  /** @type {string | null} */
  #appKey
  /** @type {((parts: unknown[]) => void) | null} */
  #report
  /** @type {((calls: string, atomic: boolean) => Promise<string>) | null} */
  #tools

  /**
   * @param {string} callId
   * @param {string} tool
   * @param {number} attempt
   * @param {object} caller
   * @param {string} [runId]
   * @param {string | null} [appKey]
   * @param {{report?: ((parts: unknown[]) => void) | null, tools?: ((calls: string, atomic: boolean) => Promise<string>) | null}} [reach]
   *   Where progress goes (null when nobody listens) and the door to other tools (null when
   *   the tool's policy names none).
   */
  constructor(callId, tool, attempt, caller, runId = '', appKey = null, reach = {}) {
    /** The call's id in its batch. */
    this.callId = callId
    /** The tool's registered name. */
    this.tool = tool
    /** 1 for the first attempt, 2 for the first retry, ... */
    this.attempt = attempt
    /** Who the batch runs for: read-only (frozen to its leaves), and one object for every batch run for an equal caller. */
    this.caller = caller
    /** The run the call belongs to (the same across resumes and processes). */
    this.runId = runId
    this.#appKey = appKey
    this.#report = reach.report ?? null
    this.#tools = reach.tools ?? null
  }

  /**
   * Runs other tools of the engine as one batch, for this call's caller, through every
   * guardrail, within what is left of its deadline. The tool's policy must name them
   * (`mayCall`); each result names this call as its `parent`. With `atomic`, once a call
   * fails no further call starts and the completed ones are compensated (the result's
   * `rollback`).
   * @param {import('./types.d.mts').Call[]} calls
   * @param {{atomic?: boolean}} [options]
   * @returns {Promise<import('./types.d.mts').BatchResult>}
   */
  async run(calls, options = {}) {
    if (this.#tools === null) {
      throw new ToolError('permission_denied', `${this.tool} calls no tools: name the ones it may call in its policy's mayCall`)
    }
    return JSON.parse(await this.#tools(callsText(calls), options?.atomic === true))
  }

  /**
   * Runs one other tool of the engine (see `run`).
   * @param {string} tool
   * @param {unknown} [args]
   * @returns {Promise<import('./types.d.mts').CallResult>}
   */
  async call(tool, args = {}) {
    const out = await this.run([{ id: 'call_0', tool, arguments: args }])
    return out.results[0]
  }

  /**
   * Reports how far the call is: `fraction` of the work done (0 to 1) and a message for
   * whoever watches (the batch's events, a UI stream, an MCP client that asked). Never
   * blocks; a no-op when nobody listens.
   * @param {number | null} [fraction]
   * @param {string} [message]
   * @returns {void}
   */
  progress(fraction = null, message = undefined) {
    this.#report?.([typeof fraction === 'number' ? fraction : null, typeof message === 'string' ? message : null])
  }

  /**
   * Hands out a partial output before the result (a preliminary tool output in a UI
   * stream); an `async function*` handler does this with each value it yields. Only the
   * value returned is validated, stored and audited.
   * @param {unknown} output
   * @returns {void}
   */
  partial(output) {
    this.#report?.([null, null, output])
  }

  /**
   * A key that is the same every time this call runs (a retry, a resume after a crash,
   * another process): hand it to a downstream API that deduplicates on it, so running the
   * call again has its effect once. From the call's own idempotency key when the app gave
   * one, else from the run and the call's id.
   * @returns {string}
   */
  get idempotencyKey() {
    return idempotencyKey(this.runId, this.callId, this.tool, this.#appKey ?? undefined)
  }

  /**
   * Fires when this attempt times out, the batch deadline passes or the batch is cancelled.
   * @returns {AbortSignal}
   */
  get signal() {
    // Created on first use: most handlers never look, and a controller per call is not free.
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(abortReason())
    }
    return this.#controller.signal
  }

  [abortCall]() {
    if (this.#aborted) return
    this.#aborted = true
    this.#controller?.abort(abortReason())
  }
}
