// The server of seed 001: a chat endpoint that streams the conversation as a Vercel AI SDK UI
// message stream, with tools whose handlers live on the client. The client sends the tools'
// schemas (never handlers) with its messages; tooljig registers them as client-side tools, so
// a call to one suspends the run with the call streamed to the client (`tool-input-*`). The
// response stays open, with keepalive comments, until the client posts the result to
// `/api/tool-result` (`{chatId, toolCallId, toolName, result | error}`); then the run resumes
// and the same assistant message goes on.
import { createServer } from 'node:http'
import { Agent, AgentState, Engine, UiMessageStream } from 'tooljig'
import { model as defaultModel } from './model.mjs'

/**
 * Starts the server on `port` (0: any). `keepaliveMs`: how often an open stream that waits
 * for a tool says it is alive. Resolves with `{url, close, stats}`.
 */
export async function startServer({ port = 0, keepaliveMs = 5_000, model = defaultModel() } = {}) {
  /** Conversations by id: the engine with the client's tools, the agent, the state. */
  const conversations = new Map()
  /** Calls waiting for the client, by conversation and tool call id (a model's call ids
   * repeat across conversations): `{resolve, result}`. */
  const waiting = new Map()
  /** Calls whose result came and was used, so a late retry of the post is known. */
  const answered = new Set()
  const stats = { resultsPosted: 0, duplicates: 0, keepalives: 0 }

  const conversation = (id, tools) => {
    let c = conversations.get(id)
    if (!c) {
      const engine = new Engine()
      for (const [name, t] of Object.entries(tools ?? {})) {
        // A client-side tool: no execute here; its calls wait for the client's result.
        engine.registerSpec({ name, description: t.description ?? '', inputSchema: t.inputSchema ?? { type: 'object' } })
      }
      c = { agent: new Agent(engine, model), state: null }
      conversations.set(id, c)
    }
    return c
  }

  const waitFor = (callId) => {
    let entry = waiting.get(callId)
    if (!entry) {
      let resolve
      const promise = new Promise((r) => (resolve = r))
      entry = { promise, resolve, result: null }
      waiting.set(callId, entry)
    }
    return entry
  }

  const chat = async (body, res) => {
    const c = conversation(body.id, body.tools)
    const text = lastUserText(body.messages)
    const ui = new UiMessageStream(body.messageId ?? `msg_${Date.now().toString(36)}`)
    res.writeHead(200, UiMessageStream.HEADERS)
    // One assistant message across the passes: the first pass's `start`, the last's
    // `finish`; a pass that suspends on the client's tools does not finish the message.
    let started = false
    const pipe = async (run) => {
      let finish = null
      for await (const event of run) {
        if (event.type === 'start' && started) continue
        if (event.type === 'finish') {
          finish = event
          continue
        }
        started = true
        const frames = ui.encode(event)
        if (frames) res.write(frames)
      }
      const outcome = await run.outcome
      if (finish && outcome.status.status !== 'suspended') res.write(ui.encode(finish))
      return outcome
    }
    let outcome
    if (c.state === null) {
      c.state = new AgentState(text)
      outcome = await pipe(c.agent.run(c.state))
    } else {
      outcome = await pipe(c.agent.send(c.state, text))
    }
    // Suspended on the client's tools: wait for their results, alive, then go on.
    while (outcome.status.status === 'suspended') {
      const calls = outcome.status.pending.filter((p) => p.status === 'pending_external')
      const keepalive = setInterval(() => {
        stats.keepalives++
        res.write(': keepalive\n\n')
      }, keepaliveMs)
      const keys = calls.map((p) => `${body.id}:${p.callId}`)
      const results = await Promise.all(keys.map((key) => waitFor(key).promise))
      clearInterval(keepalive)
      for (const key of keys) {
        waiting.delete(key)
        answered.add(key)
      }
      outcome = await pipe(c.agent.resumeWithResults(c.state, results))
    }
    res.end(ui.done())
  }

  const toolResult = (body) => {
    stats.resultsPosted++
    const key = `${body.chatId}:${body.toolCallId}`
    if (answered.has(key)) {
      stats.duplicates++
      return { accepted: false, duplicate: true }
    }
    const entry = waitFor(key)
    if (entry.result !== null) {
      // A retried post whose first attempt arrived: harmless, the first result stands.
      stats.duplicates++
      return { accepted: false, duplicate: true }
    }
    entry.result = {
      callId: body.toolCallId,
      tool: body.toolName,
      envelope: body.error === undefined ? { ok: true, data: body.result } : { ok: false, error: { code: 'external_api_error', message: String(body.error) } },
    }
    entry.resolve(entry.result)
    return { accepted: true, duplicate: false }
  }

  const server = createServer(async (req, res) => {
    try {
      if (req.method === 'GET' && req.url === '/stats') return json(res, 200, { ...stats, rss: process.memoryUsage().rss, heapUsed: process.memoryUsage().heapUsed, open: conversations.size })
      if (req.method !== 'POST') return json(res, 405, { error: 'POST only' })
      const body = JSON.parse(await read(req))
      if (req.url === '/api/chat') return await chat(body, res)
      if (req.url === '/api/tool-result') {
        if (typeof body.toolCallId !== 'string' || typeof body.chatId !== 'string') return json(res, 400, { error: 'chatId and toolCallId are required' })
        return json(res, 200, toolResult(body))
      }
      json(res, 404, { error: 'no such endpoint' })
    } catch (e) {
      console.error(`client-tools server: ${req.url}: ${e?.stack ?? e}`)
      if (!res.headersSent) json(res, 500, { error: String(e?.message ?? e) })
      else res.end()
    }
  })
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${server.address().port}`
  return { url, stats, server, close: () => new Promise((resolve) => server.close(resolve)) }
}

function lastUserText(messages = []) {
  const last = [...messages].reverse().find((m) => m.role === 'user')
  return (last?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('\n')
}

function read(req) {
  return new Promise((resolve, reject) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c) => (body += c))
    req.on('end', () => resolve(body))
    req.on('error', reject)
  })
}

function json(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(value))
}
