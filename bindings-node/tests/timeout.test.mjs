// Timeouts, deadlines and cancellation reach handlers through their AbortSignal.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, tool } from '../lib/index.mjs'
import { sleep } from './support.mjs'

test('a handler that never settles is ended by its timeout, and its signal fires', async () => {
  let signal
  const e = new Engine().register('hang', tool({ execute: (args, ctx) => { signal = ctx.signal; return new Promise(() => {}) } }), { timeoutMs: 100 })
  const t0 = performance.now()
  const out = await e.run([{ id: 'h', tool: 'hang' }])
  const ms = performance.now() - t0
  assert.equal(out.results[0].envelope.error.code, 'timeout')
  assert.ok(ms >= 95 && ms < 1000, `took ${ms.toFixed(1)} ms`)
  await sleep(20)
  assert.equal(signal.aborted, true)
  assert.equal(signal.reason.name, 'AbortError')
})

test('a signal read only after the timeout is already aborted', async () => {
  let ctx
  const e = new Engine().register('slow', tool({ execute: async (args, c) => { ctx = c; await sleep(150) } }), { timeoutMs: 30 })
  const out = await e.run([{ tool: 'slow' }])
  assert.equal(out.results[0].envelope.error.code, 'timeout')
  await sleep(10)
  assert.equal(ctx.signal.aborted, true)
})

test('a handler that honours its signal stops its own work', async () => {
  let finished = false
  const e = new Engine().register('work', tool({
    execute: async (args, ctx) => {
      await sleep(5000, undefined, { signal: ctx.signal })
      finished = true
    },
  }), { timeoutMs: 50 })
  const out = await e.run([{ tool: 'work' }])
  assert.equal(out.results[0].envelope.error.code, 'timeout')
  assert.equal(finished, false)
})

test('aborting the run cancels running calls and fires their signals', async () => {
  const signals = []
  const e = new Engine().register('hang', tool({ execute: (args, ctx) => { signals.push(ctx.signal); return new Promise(() => {}) } }))
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 50)
  const out = await e.run([{ id: 'a', tool: 'hang' }, { id: 'b', tool: 'hang' }], { signal: controller.signal })
  assert.deepEqual(out.results.map((r) => r.envelope.error.code), ['cancelled', 'cancelled'])
  await sleep(20)
  assert.equal(signals.length, 2)
  assert.ok(signals.every((s) => s.aborted))
})

test('an already aborted signal cancels the batch at once', async () => {
  const e = new Engine().register('t', tool({ execute: async () => { await sleep(1000); return 1 } }))
  const out = await e.run([{ tool: 't' }], { signal: AbortSignal.abort() })
  assert.equal(out.results[0].envelope.error.code, 'cancelled')
})

test('the batch deadline ends slow calls and lets fast ones finish', async () => {
  const e = new Engine().register('wait', tool({ execute: async ({ ms }, ctx) => { await sleep(ms, undefined, { signal: ctx.signal }); return ms } }))
  const out = await e.run([{ id: 'slow', tool: 'wait', arguments: { ms: 5000 } }, { id: 'fast', tool: 'wait', arguments: { ms: 1 } }], { deadlineMs: 100 })
  assert.equal(out.results[0].envelope.error.code, 'deadline_exceeded')
  assert.deepEqual(out.results[1].envelope, { ok: true, data: 1 })
  assert.ok(out.durationUs < 1_000_000)
})
