// Runs JS handlers for the native engine: the JS half of `src/dispatcher.rs`.
//
// The engine wakes this side with everything queued as one JSON text; each handler runs,
// and its outcome is settled back in bulk (`[[token, kind, payload], ...]`, see
// `src/outcome.rs`): sync handlers in the same turn, Promise handlers once they settle,
// batched per microtask checkpoint. Nothing here throws into native code: every failure of
// a handler becomes data, which is what keeps a throwing handler from killing the process.
import { abortCall, ToolContext } from './context.mjs'
import { Accepted, InvalidArguments, Needs, ToolError } from './errors.mjs'
import { fromRows } from './rows.mjs'

const OK = 0
const TOOL_ERROR = 1
const NEEDS = 2
const UNEXPECTED = 3
const INVALID_ARGUMENTS = 4
const ACCEPTED = 5

// Whatever a handler hands back may be hostile: a Proxy whose every trap throws, a getter
// named `then` that throws, an object whose `toString` throws. Reading any of it can throw,
// so each function below that touches such a value is total: it catches, and says so.

/** `value` frozen, and every object and array in it: a caller as JSON made it. */
function deepFreeze(value) {
  if (value !== null && typeof value === 'object') {
    for (const key in value) deepFreeze(value[key])
    Object.freeze(value)
  }
  return value
}

const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function'

/**
 * What an `async function*` handler hands back, as a Promise of its result: each value it
 * yields is a partial output (`ctx.partial`), the last one the result. Anything else is
 * returned as is.
 */
function streamed(out, ctx) {
  if (out === null || typeof out !== 'object' || isThenable(out) || typeof out[Symbol.asyncIterator] !== 'function') return out
  return (async () => {
    let last
    for await (const value of out) {
      ctx?.partial(value)
      last = value
    }
    return last
  })()
}

/** What a value that cannot even be described is called. */
const UNPRINTABLE = 'a value that cannot be printed (reading it threw)'

/** The detail kept for the app (never shown to the model): the stack when there is one. */
function detailOf(e, depth = 0) {
  try {
    if (e instanceof Error) {
      const stack = typeof e.stack === 'string' ? e.stack : `${e.name}: ${e.message}`
      const cause = e.cause
      return cause === undefined || depth > 8 ? stack : `${stack}\ncaused by: ${detailOf(cause, depth + 1)}`
    }
    if (typeof e === 'string') return `a non-Error value was thrown: ${e}`
    try {
      return `a non-Error value was thrown: ${JSON.stringify(e) ?? String(e)}`
    } catch {
      return `a non-Error value was thrown: ${String(e)}`
    }
  } catch {
    return `a non-Error value was thrown: ${UNPRINTABLE}`
  }
}

/** Lone surrogates, which JSON text cannot carry to Rust. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * A settlement of kind UNEXPECTED with this detail (a text for the app, so a lone surrogate
 * in it may become U+FFFD), as JSON text that always reads back.
 * @param {string} detail
 * @returns {[number, string]}
 */
const unexpected = (detail) => [UNEXPECTED, JSON.stringify(detail.replace(LONE_SURROGATE, '\ufffd'))]

/**
 * The settlement of a returned value.
 * @returns {[number, string]}
 */
function fromValue(v) {
  try {
    if (v instanceof Needs) return [NEEDS, JSON.stringify(v.fields)]
    if (v instanceof Accepted) return [ACCEPTED, JSON.stringify(v.job)]
    // `undefined` (and functions, symbols) have no JSON form: they are null.
    return [OK, JSON.stringify(v) ?? 'null']
  } catch (e) {
    return unexpected(`the handler returned a value that is not JSON: ${detailOf(e)}`)
  }
}

/**
 * The settlement of a throw or rejection.
 * @returns {[number, string]}
 */
function fromThrow(e) {
  try {
    return readThrow(e)
  } catch (err) {
    return unexpected(`the handler threw ${UNPRINTABLE}: ${detailOf(err)}`)
  }
}

/** @returns {[number, string]} */
function readThrow(e) {
  if (e instanceof ToolError) {
    const thrown = { code: e.code, message: String(e.message), retryable: e.retryable ?? null, details: e.details ?? null }
    try {
      return [TOOL_ERROR, JSON.stringify(thrown)]
    } catch (err) {
      return unexpected(`a ToolError with details that are not JSON: ${detailOf(err)}`)
    }
  }
  if (e instanceof Needs) return [NEEDS, JSON.stringify(e.fields)]
  if (e instanceof Accepted) return [ACCEPTED, JSON.stringify(e.job)]
  if (e instanceof InvalidArguments) return [INVALID_ARGUMENTS, JSON.stringify(e.violations)]
  return unexpected(detailOf(e))
}

/**
 * Resolves a batch with its result made of rows; a result that cannot be made (only a bug of
 * the native side could send one) rejects that batch alone, and the drained queue goes on.
 */
function settleRows(batch, result) {
  try {
    batch.resolve(fromRows(result))
  } catch (e) {
    batch.reject(new Error(`tooljig: the batch's result could not be read: ${detailOf(e)}`))
  }
}

/**
 * Batches that wait on native work (a handler's promise, a timer, a store, a call on another
 * thread): their owners (the engines) are held here until they end, since nothing else is
 * sure to (see `wakeOf`), and Node is kept running meanwhile by one interval for the process,
 * referenced only while some batch waits. The interval is made here, outside any engine,
 * because a timer keeps its callback, and a callback made in an engine's method would keep
 * that engine (and all it holds) forever.
 */
const waiting = {
  /** @type {ReturnType<typeof setInterval> | null} */
  timer: null,
  /** Owners with batches waiting, and how many each. @type {Map<object, number>} */
  owners: new Map(),
  /** @param {object} owner */
  started(owner) {
    this.owners.set(owner, (this.owners.get(owner) ?? 0) + 1)
    if (this.owners.size === 1) (this.timer ??= setInterval(Object, 2 ** 30)).ref()
  },
  /** @param {object} owner */
  ended(owner) {
    const left = (this.owners.get(owner) ?? 1) - 1
    if (left > 0) return this.owners.set(owner, left)
    this.owners.delete(owner)
    if (this.owners.size === 0) this.timer?.unref()
  },
}

/**
 * The function the native side wakes `dispatcher` through. A threadsafe function keeps what
 * it calls as a GC root, so this reaches the dispatcher only weakly: its owner (an engine, a
 * model in JavaScript) holds it, and a handler that holds its own engine (a tool that runs
 * other tools) then makes a cycle the collector can free, rather than one held from a root
 * for good. Work in flight holds the owner (`waiting` below, `pinUntil`), and a collected owner has its
 * native half released (`releaseWhenCollected`), so nothing wakes a dispatcher that is gone.
 * @param {Dispatcher} dispatcher
 * @returns {(text: string) => void}
 */
export function wakeOf(dispatcher) {
  const weak = new WeakRef(dispatcher)
  return (text) => weak.deref()?.dispatch(text)
}

/** The JS side of one native engine: the handler table and the calls in flight. */
export class Dispatcher {
  /** @type {{name: string, execute: Function, parse: Function | null}[]} */
  handlers = []
  /** The engine's policy hook, if any. */
  hook = null
  /** Resolver functions, by the index the native engine knows them by. */
  resolvers = []
  /** The engine's approval predicate, if any. */
  predicate = null
  /** Auth hooks of the engine's servers (MCP, inbox), by the index the native engine knows them by. */
  httpAuths = []
  /** Calls in flight by token; a token missing here was timed out or cancelled. */
  live = new Map()
  outbox = []
  flushQueued = false
  /** The callers the native engine names calls' callers by (`src/drained.rs`). */
  callers = []
  /** The native engine (progress, tools called by tools); set right after it is built. */
  native = null
  /**
   * Delivers settled outcomes to the native side and returns the next drained queue, or
   * null: its `settle`, unless a faster way is set (an engine's driver, src/engine.rs).
   * @type {(settled: string) => string | null}
   */
  deliver = (settled) => this.native.settle(settled)

  /** Indexes of released entries, reused by `add`. */
  free = []

  /** Batches the native engine drives on this thread, by id: how to settle their promises. */
  batches = new Map()
  /** The last batch id handed out. */
  lastBatch = 0

  /** Adds a handler and returns its index (what the native engine calls it by). */
  add(entry) {
    const index = this.free.pop()
    if (index === undefined) {
      this.handlers.push(entry)
      return this.handlers.length - 1
    }
    this.handlers[index] = entry
    return index
  }

  /** Frees an entry nothing native calls any more (an agent's selector, once the agent is gone). */
  release(index) {
    this.handlers[index] = null
    this.free.push(index)
  }

  /**
   * Runs a batch the native engine drives on this thread: `start(id)` starts it and returns
   * what to do now (a drained queue, or null). Resolves with the batch's result (sent as
   * rows, see `rows.mjs`); `owner` (the engine, or this dispatcher) is held until then.
   * @param {(id: number) => string | null} start
   * @param {object} [owner]
   * @returns {Promise<any>}
   */
  runBatch(start, owner = this) {
    const id = (this.lastBatch = (this.lastBatch + 1) >>> 0)
    const result = new Promise((resolve, reject) => this.batches.set(id, { resolve, reject, owner: null }))
    let text
    try {
      text = start(id)
    } catch (e) {
      this.batches.delete(id)
      throw e
    }
    if (text) this.dispatch(text)
    const batch = this.batches.get(id)
    if (batch) {
      batch.owner = owner
      waiting.started(owner)
    }
    return result
  }

  /** Called by the native engine with the drained queue (see `Drained` in Rust). */
  dispatch = (text) => {
    this.#take(text)
    this.flush()
  }

  /**
   * Settles the batches that ended and starts the calls queued: a drained queue, whose slots
   * `src/drained.rs` describes (`0` or absent when empty).
   */
  #take(text) {
    try {
      const [done, calls, runs, callers, aborts, asks] = JSON.parse(text)
      if (done) {
        for (const [id, ok, result] of done) {
          const batch = this.batches.get(id)
          if (!batch) continue
          this.batches.delete(id)
          if (batch.owner) waiting.ended(batch.owner)
          if (!ok) batch.reject(new Error(result))
          else settleRows(batch, result)
        }
      }
      if (aborts) {
        for (const token of aborts) {
          const ctx = this.live.get(token)
          if (ctx) {
            this.live.delete(token)
            ctx[abortCall]()
          }
        }
      }
      if (callers) {
        // Kept across drains, shared by every batch run for an equal caller: frozen to the
        // leaves, so that no handler can change the caller another batch sees.
        const table = this.callers
        table.length = callers[0]
        for (let i = 1; i < callers.length; i++) table.push(deepFreeze(callers[i]))
      }
      if (calls) {
        for (const [token, tool, callId, attempt, caller, args, run, appKey, listened, callsTools] of calls) {
          const entry = this.handlers[tool]
          const reach = {
            report: listened ? (parts) => this.#progress(token, parts) : null,
            tools: callsTools ? (text, atomic) => this.native.callTools(token, text, atomic) : null,
          }
          const ctx = new ToolContext(callId, entry.name, attempt, this.callers[caller], runs[run], appKey, reach)
          this.live.set(token, ctx)
          this.#start(token, entry, args, ctx)
        }
      }
      if (asks) {
        for (const [token, kind, index, request] of asks) {
          const fn =
            kind === 'hook' ? this.hook : kind === 'predicate' ? this.predicate : kind === 'http_auth' ? this.httpAuths[index] : this.resolvers[index]
          this.live.set(token, null)
          this.#start(token, { execute: fn, parse: null }, request, undefined)
        }
      }
    } catch (e) {
      // Only a bug of this layer can land here; say so loudly but never throw into Rust.
      process.emitWarning(`tooljig: the dispatcher failed: ${detailOf(e)}`)
    }
  }

  /** A live call's progress report (`ctx.progress`, `ctx.partial`), straight to the engine. */
  #progress(token, parts) {
    if (!this.live.has(token)) return
    this.native.progress(JSON.stringify([token, ...parts]))
  }

  #start(token, entry, args, ctx) {
    let out
    let thenable
    try {
      const parsed = entry.parse === null ? args : entry.parse(args)
      out = isThenable(parsed) ? parsed.then((a) => streamed(entry.execute(a, ctx), ctx)) : streamed(entry.execute(parsed, ctx), ctx)
      // Inside the try: a `then` getter (or a Proxy's trap) may throw, which is the
      // handler failing, not this layer.
      thenable = isThenable(out)
    } catch (e) {
      this.#settle(token, fromThrow(e))
      return
    }
    if (thenable) {
      Promise.resolve(out).then(
        (v) => this.#settle(token, fromValue(v)),
        (e) => this.#settle(token, fromThrow(e)),
      )
    } else {
      this.#settle(token, fromValue(out))
    }
  }

  #settle(token, [kind, payload]) {
    // A call that timed out or was cancelled is no longer awaited: drop its late outcome.
    if (!this.live.delete(token)) return
    this.outbox.push(`[${token},${kind},${payload}]`)
    if (!this.flushQueued) {
      this.flushQueued = true
      queueMicrotask(this.flush)
    }
  }

  /**
   * Hands every settled outcome to the native engine in one call, and does what that
   * leads to at once (batches it ended, calls they queued), until nothing is left: a loop,
   * not recursion, however long a chain of sync handlers.
   */
  flush = () => {
    this.flushQueued = false
    while (this.outbox.length > 0) {
      const text = `[${this.outbox.join(',')}]`
      this.outbox = []
      let next
      try {
        next = this.deliver(text)
      } catch (e) {
        process.emitWarning(`tooljig: settling results failed: ${detailOf(e)}`)
      }
      if (typeof next === 'string') this.#take(next)
    }
  }
}
