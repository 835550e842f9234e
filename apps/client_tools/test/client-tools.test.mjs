// Seed 001 end to end, the client driven by the `ai` package's own transport and reducer:
// one assistant message per turn with the tool's part and the answer; a dropped connection
// while posting a result is retried and the duplicate is harmless; keepalive while a tool
// runs; a handler that throws; the server's memory while many tools run (measured in a
// process of its own).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ToolClient } from '../client.mjs'
import { demo, tools } from '../main.mjs'
import { startServer } from '../server.mjs'

test('each turn is one assistant message: the tool ran on the client, then the answer', async () => {
  const transcript = await demo({ log: () => {} })
  const [sum, summary] = transcript.map((t) => t.message)
  assert.equal(sum.role, 'assistant')
  const part = sum.parts.find((p) => p.type === 'tool-add')
  assert.equal(part.state, 'output-available')
  assert.deepEqual(part.input, { a: 5, b: 3 })
  assert.deepEqual(part.output, { ok: true, data: 8 })
  assert.equal(sum.parts.filter((p) => p.type === 'text').at(-1).text, 'It is 8.')
  assert.match(summary.parts.filter((p) => p.type === 'text').at(-1).text, /Q3 revenue grew 12%/)
})

test('a dropped connection while posting a result is retried, and the duplicate is harmless', async (t) => {
  const server = await startServer({ keepaliveMs: 50 })
  t.after(() => server.close())
  let ran = 0
  const counted = { ...tools, add: { ...tools.add, handler: (args) => (ran++, tools.add.handler(args)) } }
  let drops = 0
  const flaky = async (url, init) => {
    if (String(url).endsWith('/api/tool-result') && drops < 2) {
      drops++
      // First drop: before the server hears it; second: after, with the answer lost.
      if (drops === 2) await fetch(url, init)
      throw new TypeError('fetch failed: socket hang up')
    }
    return fetch(url, init)
  }
  const client = new ToolClient(server.url, counted, { fetch: flaky })
  const { message, chunks } = await client.send('chat-2', 'What is 20 + 22?')
  assert.equal(message.parts.filter((p) => p.type === 'text').at(-1).text, 'It is 42.')
  assert.equal(ran, 1, 'the handler ran once')
  assert.equal(drops, 2)
  assert.equal(server.stats.duplicates, 1, 'the retried post was recognised')
  assert.equal(chunks.filter((c) => c.type === 'start').length, 1, 'one message')
  assert.equal(chunks.filter((c) => c.type === 'finish').length, 1)
})

test('the stream stays alive while a tool runs, and a failing handler reaches the model as an error', async (t) => {
  const server = await startServer({ keepaliveMs: 50 })
  t.after(() => server.close())
  // Raw: read the stream as bytes, post the result by hand after 400 ms.
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'raw', messages: [{ role: 'user', parts: [{ type: 'text', text: 'Summarise a.md' }] }], tools: { readFile: { inputSchema: { type: 'object' } } } }),
  })
  let text = ''
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    text += value
    const call = text.match(/"type":"tool-input-available","toolCallId":"([^"]+)"/)
    if (call && !text.includes('posted')) {
      text += '\n(posted)'
      setTimeout(() => fetch(`${server.url}/api/tool-result`, { method: 'POST', body: JSON.stringify({ chatId: 'raw', toolCallId: call[1], toolName: 'readFile', result: 'short' }) }), 400)
    }
  }
  assert.ok((text.match(/^: keepalive$/gm) ?? []).length >= 3, text)
  assert.match(text, /"type":"tool-output-available"/)
  assert.ok(text.trimEnd().endsWith('data: [DONE]'))

  const broken = { add: { ...tools.add, handler: () => { throw new Error('the calculator is offline') } } }
  const { message } = await new ToolClient(server.url, broken).send('chat-3', 'What is 1 + 1?')
  assert.match(message.parts.filter((p) => p.type === 'text').at(-1).text, /The tool failed: the calculator is offline/)
})

test('the server stays under 50 MB more while 100 conversations wait on their tools', async (t) => {
  const serverScript = fileURLToPath(new URL('../server.mjs', import.meta.url))
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { startServer } from ${JSON.stringify(serverScript)}; const s = await startServer(); console.log(s.url)`], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => child.kill())
  const url = (await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next()).value
  const stats = async () => (await fetch(`${url}/stats`)).json()
  // Warm up once, then measure.
  await new ToolClient(url, tools).send('warm', 'What is 1 + 2?')
  const before = await stats()
  let release
  const gate = new Promise((resolve) => (release = resolve))
  let started = 0
  const slow = { add: { ...tools.add, handler: async (args) => (started++, await gate, tools.add.handler(args)) } }
  const chats = Array.from({ length: 100 }, (_, i) => new ToolClient(url, slow).send(`c${i}`, `What is ${i} + 1?`))
  while (started < 100) await new Promise((resolve) => setTimeout(resolve, 20))
  const during = await stats()
  release()
  const done = await Promise.all(chats)
  assert.equal(done[99].message.parts.filter((p) => p.type === 'text').at(-1).text, 'It is 100.')
  const grew = (during.rss - before.rss) / 2 ** 20
  console.log(`server rss ${(before.rss / 2 ** 20).toFixed(1)} MB idle, +${grew.toFixed(1)} MB with 100 tools running`)
  assert.ok(grew < 50, `grew ${grew.toFixed(1)} MB`)
})
