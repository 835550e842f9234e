// Spans over OTLP from Node: a worker process exports with OTLP/JSON to a collector in this
// process; its batches' spans are children of the `traceparent` it was given, in a resume
// too, and each call's span carries its tool, outcome and code. The worker is a child process
// because the export is process-wide.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const index = fileURLToPath(new URL('../lib/index.mjs', import.meta.url))
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'

test('batches and calls are spans under the caller’s trace, across a resume', async (t) => {
  const bodies = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      bodies.push({ type: req.headers['content-type'], body })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => server.close())
  const endpoint = `http://127.0.0.1:${server.address().port}`
  const script = `
    import { Engine, exportTraces, tool } from ${JSON.stringify(index)}
    const exporting = exportTraces(${JSON.stringify(endpoint)}, { protocol: 'http/json', serviceName: 'node-worker' })
    const engine = new Engine()
    engine.register('echo', tool({ execute: (a) => a }))
    engine.register('pay', tool({ execute: () => ({ paid: true }) }), { approval: { required: 'always' } })
    const traceparent = '00-${TRACE}-${PARENT}-01'
    await engine.run([{ id: 'ok', tool: 'echo', arguments: {} }, { id: 'nope', tool: 'echo', arguments: [] }], { traceparent })
    const out = await engine.run([{ id: 'p', tool: 'pay', arguments: {} }], { caller: { principal: 'ana' }, traceparent })
    const { id, argumentsHash } = out.results[0].approval
    await engine.decide(id, { decision: 'approve', argumentsHash }, { principal: 'ana' })
    await engine.resume(out.runId)
    exporting.flush()
    try { exportTraces(${JSON.stringify(endpoint)}) } catch (e) { console.log('second refused', /already installed/.test(e.message)) }
  `
  // Spawned, not spawnSync: the collector answers from this process's event loop.
  const worker = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
  assert.equal(worker.status, 0, worker.stderr)
  assert.match(worker.stdout, /second refused true/)
  const spans = []
  for (const { type, body } of bodies) {
    assert.equal(type, 'application/json')
    for (const rs of JSON.parse(body).resourceSpans) {
      const service = rs.resource.attributes.find((a) => a.key === 'service.name').value.stringValue
      assert.equal(service, 'node-worker')
      for (const ss of rs.scopeSpans) spans.push(...ss.spans)
    }
  }
  const batches = spans.filter((s) => s.name === 'tooljig.batch')
  assert.equal(batches.length, 3)
  for (const b of batches) assert.deepEqual([b.traceId.toLowerCase(), b.parentSpanId.toLowerCase()], [TRACE, PARENT])
  const attrs = (s) => Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]))
  const calls = spans.filter((s) => s.name === 'tooljig.call').map((s) => ({ ...attrs(s), trace: s.traceId.toLowerCase() }))
  const ok = calls.find((c) => c['tooljig.call_id'] === 'ok')
  assert.deepEqual([ok['tooljig.tool'], ok['tooljig.outcome'], String(ok['tooljig.attempts'])], ['echo', 'ok', '1'])
  assert.equal(calls.find((c) => c['tooljig.call_id'] === 'nope')['tooljig.code'], 'invalid_arguments')
  assert.deepEqual(calls.filter((c) => c['tooljig.call_id'] === 'p').map((c) => c['tooljig.outcome']).sort(), ['ok', 'pending_approval'])
  assert.ok(calls.every((c) => c.trace === TRACE))
})
