// An engine (or a model in JavaScript) the app no longer holds is freed, its native half
// released, and work still running on it (a batch, a stream, an agent run, a server)
// finishes first.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./fixtures/unheld-engines.mjs', import.meta.url))

/** What the fixture prints in `mode`, run in a process of its own with `gc()`. */
function run(mode) {
  const r = spawnSync(process.execPath, ['--expose-gc', script, mode], { encoding: 'utf8', timeout: 110_000 })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').at(-1))
}

test('work on an engine or model the app let go of still finishes', { timeout: 120_000 }, () => {
  const out = run('work')
  assert.equal(out.run, 'timeout', 'a batch whose engine nobody holds still times its call out')
  assert.equal(out.stream, 'timeout', 'so does a stream')
  assert.equal(out.agent.status.status, 'finished', 'an agent run finishes')
  assert.equal(out.agent.counters.toolSuccesses, 1, 'its tool call through the engine succeeds')
  assert.deepEqual(out.mcp, { ok: true, data: 7 }, 'a server still answers')
})

test('engines let go of are freed', { timeout: 120_000 }, () => {
  // 900 engines more, about 360 KB each when none was freed (over 300 MB).
  const grown = run('engines')
  assert.ok(grown < 100, `the process grew by ${grown} MB over 900 engines let go of`)
})

test('models in JavaScript let go of are freed', { timeout: 120_000 }, () => {
  // 9,000 models more, about 3.5 KB each when none was freed (over 30 MB).
  const grown = run('models')
  assert.ok(grown < 15, `the process grew by ${grown} MB over 9,000 models let go of`)
})

test('an MCP server’s tools live as long as their engine', { timeout: 120_000, skip: process.platform !== 'linux' && 'finds the server’s process in /proc' }, () => {
  const out = run('mcp')
  assert.deepEqual(out.held, { ok: true, data: { product: 42 } }, 'the tools work with the client’s handle let go of')
  assert.equal(out.running, 1, 'the server was started as a child')
  assert.equal(out.left, 0, 'it is stopped once the engine is collected')
})
