// What a handler knows about the call it runs. Never reaches the model.

const abortReason = () =>
  new DOMException('tooljig ended this call (timeout, batch deadline or cancellation)', 'AbortError')

/** Fires a context's signal; internal to the dispatcher. */
export const abortCall = Symbol('tooljig.abort')

/** The context handed to `execute(args, ctx)`. */
export class ToolContext {
  /** @type {AbortController | undefined} */
  #controller
  #aborted = false

  /**
   * @param {string} callId
   * @param {string} tool
   * @param {number} attempt
   * @param {object} caller
   */
  constructor(callId, tool, attempt, caller) {
    /** The call's id in its batch. */
    this.callId = callId
    /** The tool's registered name. */
    this.tool = tool
    /** 1 for the first attempt, 2 for the first retry, ... */
    this.attempt = attempt
    /** Who the batch runs for (frozen; shared by the calls of a batch). */
    this.caller = caller
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
