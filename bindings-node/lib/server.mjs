// A server the addon runs for the app: `engine.serveMcp()` and `engine.serveInbox()` answer one.

/**
 * What a server's auth hook sees of one HTTP request (`auth` of `serveMcp()` and
 * `serveInbox()`); the hook answers the caller, or throws to refuse with 401.
 * @typedef {object} HttpRequest
 * @property {string} method `GET`, `POST`, ...
 * @property {string} path The request path.
 * @property {Record<string, string>} headers Its headers, names lowercased.
 */

/** A running server. It keeps Node alive, like an `http.Server`, until it is stopped. */
export class Server {
  #native
  #stopped

  /** @param {any} native */
  constructor(native) {
    this.#native = native
    this.#stopped = native.stopped()
  }

  /** The server's URL, e.g. `http://127.0.0.1:38211/mcp`. */
  get url() {
    return /** @type {string} */ (this.#native.url)
  }

  /**
   * Stops accepting, ends every open connection and session, and resolves once it stopped.
   * @returns {Promise<void>}
   */
  async stop() {
    this.#native.stop()
    await this.#stopped
  }

  /**
   * Resolves once the server stopped (serve until then).
   * @returns {Promise<void>}
   */
  wait() {
    return this.#stopped
  }
}
