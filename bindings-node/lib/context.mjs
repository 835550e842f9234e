// What a handler knows about the call it runs. Never reaches the model.
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

  /**
   * @param {string} callId
   * @param {string} tool
   * @param {number} attempt
   * @param {object} caller
   * @param {string} [runId]
   * @param {string | null} [appKey]
   * @param {((parts: unknown[]) => void) | null} [report] Where progress goes; null when nobody listens.
   */
  constructor(callId, tool, attempt, caller, runId = '', appKey = null, report = null) {
    /** The call's id in its batch. */
    this.callId = callId
    /** The tool's registered name. */
    this.tool = tool
    /** 1 for the first attempt, 2 for the first retry, ... */
    this.attempt = attempt
    /** Who the batch runs for (frozen; shared by the calls of a batch). */
    this.caller = caller
    /** The run the call belongs to (the same across resumes and processes). */
    this.runId = runId
    this.#appKey = appKey
    this.#report = report
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
