// MCP both ways (docs/mcp.md): the handles `engine.serveMcp()` and `engine.connectMcp()`
// return. The behaviour is the core's; these classes only hold the native halves.
import { Server } from './server.mjs'

/**
 * @typedef {object} McpServeOptions
 * @property {string} [bind] Address to listen on (`'127.0.0.1:0'` by default; anything but
 *   loopback needs `auth` or `tokens`).
 * @property {string} [path] The endpoint's path (`'/mcp'`).
 * @property {import('./types.d.mts').Caller} [caller] Who calls when neither `auth` nor `tokens` is given (and over stdio).
 * @property {Record<string, import('./types.d.mts').Caller>} [tokens] Bearer tokens, each standing for one caller.
 * @property {(request: import('./server.mjs').HttpRequest) => import('./types.d.mts').Caller | Promise<import('./types.d.mts').Caller>} [auth]
 *   Maps each HTTP request to its caller; a throw refuses it with 401.
 * @property {string} [name] `serverInfo.name`.
 * @property {string} [version] `serverInfo.version`.
 * @property {string} [instructions] Instructions for the model, sent at initialization.
 * @property {boolean} [elicitation] Ask the user for approvals and missing fields when the client can (true).
 * @property {number} [deadlineMs] Wall-time budget of one `tools/call`.
 * @property {string[]} [allowedHosts] `Host` values accepted besides loopback names.
 * @property {string[]} [allowedOrigins] Browser origins allowed besides this machine's own (localhost, 127.0.0.1, [::1]).
 * @property {number} [maxBodyBytes] Largest request body read (4 MiB); larger ones get 413.
 */

/**
 * @typedef {object} McpClientOptions
 * @property {Record<string, string>} [headers] HTTP headers sent with every request (a URL server).
 * @property {Record<string, string>} [env] Environment of a command server.
 * @property {string} [cwd] Working directory of a command server.
 * @property {string} [prefix] Put before each tool's name.
 * @property {import('./types.d.mts').Policy} [policy] The policy of every tool of the server.
 * @property {Record<string, import('./types.d.mts').Policy>} [tools] Policies of single tools, by the server's name.
 * @property {string[]} [include] Only these tools (the server's names).
 * @property {boolean} [trusted] Take the server's annotations as the policy's defaults.
 * @property {number} [maxResponseBytes] Largest JSON response accepted from an HTTP server.
 * @property {number} [connectTimeoutMs] How long connecting may take (10 s).
 */

/** A running Streamable HTTP server: `engine.serveMcp()`; its `url`, `stop()`, `wait()`. */
export class McpServer extends Server {}

/** A connection to an MCP server whose tools an engine runs: `engine.connectMcp()`. */
export class McpClient {
  #native
  #settled

  /**
   * @param {any} native
   * @param {string[]} tools
   * @param {(text: string) => any} settled
   */
  constructor(native, tools, settled) {
    this.#native = native
    this.#settled = settled
    /** The names its tools were registered under. */
    this.tools = tools
  }

  /**
   * Connects again, after the server died or restarted; the tools keep their names.
   * @returns {Promise<void>}
   */
  async reconnect() {
    this.#settled(await this.#native.reconnect())
  }

  /**
   * Closes the connection (a started command is stopped); its tools answer `unavailable`
   * until `reconnect()`.
   * @returns {Promise<void>}
   */
  async close() {
    await this.#native.close()
  }
}

/**
 * The native target of `connectMcp(server, options)`.
 * @param {string | string[] | object} server
 * @param {McpClientOptions} options
 */
export function mcpTarget(server, options) {
  if (typeof server === 'string') return { url: server, headers: options.headers ?? {} }
  if (Array.isArray(server)) {
    const target = { command: server.map(String), env: options.env ?? {} }
    return options.cwd === undefined ? target : { ...target, cwd: options.cwd }
  }
  if (server === null || typeof server !== 'object') {
    throw new TypeError('an MCP server is a URL, a command (an array) or {url, headers} / {command, env, cwd}')
  }
  return server
}
