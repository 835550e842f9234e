// Long-running tools from Node: a handler returns (or throws) `accepted(job)`, the call is
// `pending_job` until the app reports how the job ended (here from another Node process on a
// Redis state store), then the run resumes; status queries, refusals and the expiry.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Accepted, Engine, ToolError, accepted, tool } from '../lib/index.mjs'
import { byId } from './support.mjs'

const base = process.env.TOOLJIG_REDIS_URL ?? 'redis://127.0.0.1:6379'
const index = fileURLToPath(new URL('../lib/index.mjs', import.meta.url))
const video = { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] }

/** A Redis URL whose `?prefix=` is the test's own, or null (skipped) when the server is away outside CI. */
function scratch(t) {
  const cli = (...args) => spawnSync('redis-cli', ['-u', base, ...args], { encoding: 'utf8', timeout: 30_000 })
  if (cli('PING').stdout?.trim() !== 'PONG') {
    if (process.env.CI === 'true') throw new Error(`Redis at ${base} is unreachable under CI=true`)
    t.skip(`Redis at ${base} is unreachable (or redis-cli is missing)`)
    return null
  }
  const prefix = `tj_node_jobs_${randomUUID().replaceAll('-', '')}:`
  t.after(() => {
    const keys = cli('--scan', '--pattern', `${prefix}*`).stdout.split(/\s+/).filter(Boolean)
    if (keys.length) cli('DEL', ...keys)
  })
  return `${base}?prefix=${prefix}`
}

/** `render` accepts a job named by its id (throwing for ids starting `throw`); `publish` echoes. */
function renderer(options = {}, policy = {}) {
  const runs = []
  const engine = new Engine(options)
  engine.register(
    'render',
    tool({
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      outputSchema: video,
      execute: async ({ id }) => {
        runs.push(id)
        if (id.startsWith('throw')) throw accepted(`render-${id}`)
        return accepted(`render-${id}`)
      },
    }),
    policy,
  )
  engine.register('publish', tool({ execute: (a) => a }))
  return { engine, runs }
}

const calls = (id) => [
  { id: 'r', tool: 'render', arguments: { id } },
  { id: 'p', tool: 'publish', arguments: { url: { $from: 'r', pointer: '/url' } } },
]

async function refused(promise, code, reason) {
  await assert.rejects(promise, (e) => e instanceof ToolError && e.code === code && e.details?.reason === reason)
}

test('a job reported by another process on a Redis store resumes the run', async (t) => {
  const url = scratch(t)
  if (!url) return
  const { engine, runs } = renderer({ stateStore: url })
  const out = await engine.run(calls('v1'))
  const r = byId(out, 'r')
  assert.equal(r.status, 'pending_job')
  assert.equal(r.envelope.error.code, 'pending_job')
  assert.equal(r.envelope.error.job, 'render-v1')
  assert.equal(byId(out, 'p').status, 'waiting')
  assert.deepEqual(await engine.pendingExternal(out.runId), [], 'nobody is asked to run a job')
  const status = await engine.jobStatus('render-v1')
  assert.deepEqual([status.state, status.runId, status.callId, status.tool], ['pending', out.runId, 'r', 'render'])

  const worker = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { Engine, tool } from ${JSON.stringify(index)}
       const engine = new Engine({ stateStore: ${JSON.stringify(url)} })
       engine.register('render', tool({ outputSchema: ${JSON.stringify(video)}, execute: () => null }))
       try { await engine.completeJob('render-v1', { url: 3 }) } catch (e) { console.log('refused', e.code, e.details.reason) }
       console.log(JSON.stringify(await engine.completeJob('render-v1', { url: 'https://v/1.mp4' })))`,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  )
  assert.equal(worker.status, 0, worker.stderr)
  const [first, second] = worker.stdout.trim().split('\n')
  assert.equal(first, 'refused invalid_output invalid_result')
  const done = JSON.parse(second)
  assert.deepEqual([done.state, done.runId], ['completed', out.runId])

  const resumed = await engine.resume(out.runId)
  assert.deepEqual(byId(resumed, 'r').envelope, { ok: true, data: { url: 'https://v/1.mp4' } })
  assert.deepEqual(byId(resumed, 'p').envelope, { ok: true, data: { url: 'https://v/1.mp4' } })
  assert.deepEqual(runs, ['v1'], 'the handler ran once')
  await refused(engine.completeJob('render-v1', { url: 'x' }), 'conflict', 'duplicate')
})

test('a thrown accepted, a failed job, and refusals', async () => {
  const { engine } = renderer()
  const out = await engine.run(calls('throw-1'))
  assert.equal(byId(out, 'r').status, 'pending_job')
  const failed = await engine.completeJob('render-throw-1', new ToolError('external_api_error', 'encoder crashed'))
  assert.equal(failed.state, 'failed')
  const resumed = await engine.resume(out.runId)
  assert.equal(byId(resumed, 'r').envelope.error.code, 'external_api_error')
  assert.equal(byId(resumed, 'p').status, 'done')
  assert.equal(byId(resumed, 'p').envelope.ok, false)
  await refused(engine.completeJob('render-nope', { url: 'u' }), 'not_found', 'unknown_job')
  assert.equal(await engine.jobStatus('render-nope'), null)
  assert.throws(() => accepted(''), TypeError)
  assert.ok(accepted('x') instanceof Accepted)
})

test('a job not reported before its expiry times out', async () => {
  const { engine } = renderer({}, { jobExpiryMs: 100 })
  const out = await engine.run(calls('slow'))
  assert.equal(byId(out, 'r').status, 'pending_job')
  await new Promise((resolve) => setTimeout(resolve, 150))
  assert.equal((await engine.jobStatus('render-slow')).state, 'expired')
  await refused(engine.completeJob('render-slow', { url: 'u' }), 'conflict', 'late')
  const resumed = await engine.resume(out.runId)
  assert.equal(byId(resumed, 'r').envelope.error.code, 'timeout')
})
