// Parallelism is real: handlers awaiting timers overlap.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, tool } from '../lib/index.mjs'
import { sleep } from './support.mjs'

test('10 handlers that each await a 200 ms timer finish in under 250 ms', async () => {
  const e = new Engine().register('wait', tool({ execute: async () => { await sleep(200); return 'done' } }))
  // Warm up the addon and the JIT so the bound measures the batch, not the first load.
  await e.run([{ tool: 'wait' }])
  const calls = Array.from({ length: 10 }, (_, i) => ({ id: `c${i}`, tool: 'wait', arguments: {} }))
  const t0 = performance.now()
  const out = await e.run(calls)
  const ms = performance.now() - t0
  assert.ok(out.results.every((r) => r.envelope.ok), JSON.stringify(out.results.map((r) => r.envelope)))
  assert.ok(ms < 250, `took ${ms.toFixed(1)} ms`)
  assert.ok(ms >= 200, `took ${ms.toFixed(1)} ms: the timers did not run`)
})

test('concurrency bounds how many handlers run at once', async () => {
  let running = 0
  let peak = 0
  const e = new Engine().register('t', tool({ execute: async () => { running++; peak = Math.max(peak, running); await sleep(20); running--; return null } }))
  const calls = Array.from({ length: 12 }, () => ({ tool: 't' }))
  await e.run(calls, { concurrency: 3 })
  assert.equal(peak, 3)
})

test('sync handlers run on the JS thread while Rust keeps the batch moving', async () => {
  const e = new Engine().register('n', tool({ execute: ({ n }) => n * 2 }))
  const calls = Array.from({ length: 2000 }, (_, n) => ({ tool: 'n', arguments: { n } }))
  const out = await e.run(calls)
  assert.equal(out.results.length, 2000)
  out.results.forEach((r, n) => assert.equal(r.envelope.data, n * 2))
})

test('batches run concurrently on one engine', async () => {
  const e = new Engine().register('wait', tool({ execute: async ({ ms }) => { await sleep(ms); return ms } }))
  const t0 = performance.now()
  const outs = await Promise.all([1, 2, 3, 4].map(() => e.run([{ tool: 'wait', arguments: { ms: 100 } }])))
  const ms = performance.now() - t0
  assert.ok(outs.every((o) => o.results[0].envelope.data === 100))
  assert.ok(ms < 190, `took ${ms.toFixed(1)} ms`)
})
