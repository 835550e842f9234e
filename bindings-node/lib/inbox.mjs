// The approval inbox's handle: `engine.serveInbox()` (docs/operators.md).

/** A running approval inbox. Stop it to let Node exit. */
export class InboxServer {
  #native
  #stopped

  /** @param {any} native */
  constructor(native) {
    this.#native = native
    this.#stopped = native.stopped()
  }

  /** The inbox's URL, e.g. `http://127.0.0.1:38211/`. */
  get url() {
    return /** @type {string} */ (this.#native.url)
  }

  /**
   * Stops the server; resolves once it stopped.
   * @returns {Promise<void>}
   */
  async stop() {
    this.#native.stop()
    await this.#stopped
  }
}
