// Rate limits and the result cache shared through Redis, from Node, against the real server
// and a Redis Cluster (`redis+cluster://`): two engines (workers) share one budget and one cache; Redis unreachable fails the limited
// call closed (`unavailable`). Each test has its own key prefix, deleted after.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Engine, tool } from '../lib/index.mjs'

const base = process.env.TOOLJIG_REDIS_URL ?? 'redis://127.0.0.1:6379'
const ana = { principal: 'ana' }

/** @param {string[]} args */
function cli(...args) {
  return spawnSync('redis-cli', ['-u', base, ...args], { encoding: 'utf8', timeout: 30_000 })
}

const script = fileURLToPath(new URL('../../scripts/redis-cluster.sh', import.meta.url))
const places = ['server', 'cluster']

/**
 * A URL whose `?prefix=` is the test's own, on the test server (keys deleted after) or on a
 * Redis Cluster of the test's own (`redis+cluster://`, stopped after); or null (skipped)
 * when neither can be had outside CI.
 */
function scratch(t, where = 'server') {
  const prefix = `tj_node_${randomUUID().replaceAll('-', '')}:`
  if (where === 'cluster') {
    const dir = join(tmpdir(), `tj-cluster-${randomUUID()}`)
    const started = spawnSync('bash', [script, 'start', dir], { encoding: 'utf8', timeout: 120_000 })
    if (started.status === 3) {
      if (process.env.CI === 'true') throw new Error(`no Redis Cluster under CI=true: ${started.stderr}`)
      t.skip(`no Redis Cluster here: ${started.stderr.trim()}`)
      return null
    }
    assert.equal(started.status, 0, started.stderr)
    t.after(() => spawnSync('bash', [script, 'stop', dir], { timeout: 60_000 }))
    return `${started.stdout.trim()}?prefix=${prefix}`
  }
  if (cli('PING').stdout?.trim() !== 'PONG') {
    if (process.env.CI === 'true') throw new Error(`Redis at ${base} is unreachable under CI=true`)
    t.skip(`Redis at ${base} is unreachable (or redis-cli is missing)`)
    return null
  }
  t.after(() => {
    const keys = cli('--scan', '--pattern', `${prefix}*`).stdout.split(/\s+/).filter(Boolean)
    if (keys.length) cli('DEL', ...keys)
  })
  return `${base}?prefix=${prefix}`
}

function worker(url, runs) {
  const engine = new Engine({ rateLimiter: url, resultCache: url })
  engine.register('ping', tool({ execute: () => (runs.push('ping'), 'pong') }), { rateLimits: [{ max: 3, per_ms: 60_000 }] })
  engine.register('lookup', tool({ execute: (a) => (runs.push('lookup'), { q: a.q }) }), { effect: 'read', cache: { ttl_ms: 60_000 } })
  return engine
}

for (const where of places)
  test(`workers share a rate-limit budget and a result cache through Redis (${where})`, async (t) => {
  const url = scratch(t, where)
  if (!url) return
  const runs = []
  const [a, b] = [worker(url, runs), worker(url, runs)]
  const calls = [0, 1].map((i) => ({ id: `p${i}`, tool: 'ping', arguments: {} }))
  const results = [...(await a.run(calls, { caller: ana })).results, ...(await b.run(calls, { caller: ana })).results]
  const codes = results.map((r) => (r.envelope.ok ? 'ok' : r.envelope.error.code))
  assert.deepEqual(codes.filter((c) => c === 'ok').length, 3, codes.join())
  assert.deepEqual(codes.filter((c) => c === 'rate_limited').length, 1, codes.join())
  await a.run([{ id: 'l', tool: 'lookup', arguments: { q: 'x' } }], { caller: ana })
  const hit = (await b.run([{ id: 'l', tool: 'lookup', arguments: { q: 'x' } }], { caller: ana })).results[0]
  assert.equal(hit.cached, true)
  assert.deepEqual(hit.envelope, { ok: true, data: { q: 'x' } })
  assert.equal(runs.filter((r) => r === 'lookup').length, 1)
})

test('Redis unreachable fails limited calls closed and retryably', async () => {
  const runs = []
  const out = await worker('redis://127.0.0.1:1', runs).run([{ id: 'p', tool: 'ping', arguments: {} }], { caller: ana })
  const { code, retryable, reason } = out.results[0].envelope.error
  assert.deepEqual([code, retryable, reason], ['unavailable', true, 'limiter_unavailable'])
  assert.deepEqual(runs, [])
})

for (const where of places)
  test(`a run kept in Redis is decided and resumed by another worker (${where})`, async (t) => {
  const url = scratch(t, where)
  if (!url) return
  const sent = []
  const mail = () => {
    const engine = new Engine({ stateStore: url })
    engine.register('send', tool({ execute: (a) => (sent.push(a.to), a) }), { approval: { required: 'always' } })
    return engine
  }
  const [a, b] = [mail(), mail()]
  const out = await a.run([{ id: 'm', tool: 'send', arguments: { to: 'bo' } }], { caller: ana })
  const { id, argumentsHash } = out.results[0].approval
  assert.deepEqual((await b.pending()).map((p) => p.id), [id])
  await b.approve(id, { argumentsHash, approver: ana })
  assert.deepEqual((await b.resume(out.runId)).results[0].envelope, { ok: true, data: { to: 'bo' } })
  assert.deepEqual((await a.resume(out.runId)).results[0].envelope, { ok: true, data: { to: 'bo' } })
  assert.deepEqual(sent, ['bo'])
})

for (const where of places)
  test(`a worker waiting for decisions is woken by the decision another makes (${where})`, async (t) => {
  const url = scratch(t, where)
  if (!url) return
  const mail = () => new Engine({ stateStore: url }).register('send', tool({ execute: (a) => a }), { approval: { required: 'always' } })
  const [agent, inbox] = [mail(), mail()]
  const out = await agent.run([{ id: 'm', tool: 'send', arguments: { to: 'bo' } }], { caller: ana })
  assert.equal(await agent.waitForDecisions(out.runId, { timeoutMs: 50 }), false)
  const waiting = agent.waitForDecisions(out.runId, { timeoutMs: 20_000 })
  await new Promise((resolve) => setTimeout(resolve, 100))
  const { id, argumentsHash } = out.results[0].approval
  const decidedAt = Date.now()
  await inbox.approve(id, { argumentsHash, approver: ana })
  assert.equal(await waiting, true)
  assert.ok(Date.now() - decidedAt < 1500, 'woken by the decision, not at the timeout')
  assert.deepEqual((await agent.resume(out.runId)).results[0].envelope, { ok: true, data: { to: 'bo' } })
})

for (const where of places)
  test(`a run kept in Redis is cancelled from another worker, at once (${where})`, async (t) => {
  const url = scratch(t, where)
  if (!url) return
  const [a, b] = [new Engine({ stateStore: url }), new Engine({ stateStore: url })]
  let started
  const runIdKnown = new Promise((resolve) => (started = resolve))
  a.register('hold', tool({
    // The default lease beats every 5 s: only the wake-up through Redis stops it sooner.
    execute: (_args, ctx) => new Promise((resolve) => {
      started(ctx.runId)
      const never = setTimeout(() => resolve('never stopped'), 5_000)
      ctx.signal.addEventListener('abort', () => (clearTimeout(never), resolve('stopped')))
    }),
  }))
  a.register('after', tool({ execute: () => 'ran' }))
  const running = a.run([
    { id: 'h', tool: 'hold', arguments: {} },
    { id: 'n', tool: 'after', arguments: {}, dependsOn: ['h'] },
  ], { caller: ana })
  const runId = await runIdKnown
  const asked = Date.now()
  assert.equal(await b.cancelRun(runId, 'the user left'), true)
  const out = await running
  assert.ok(Date.now() - asked < 1000, `stopped ${Date.now() - asked} ms after it was asked`)
  assert.deepEqual(out.results.map((r) => r.envelope.error?.code), ['cancelled', 'cancelled'])
  assert.equal(await b.cancelRun(runId), false)
  await assert.rejects(b.cancelRun('no-such-run'), (e) => e.code === 'not_found')
})
