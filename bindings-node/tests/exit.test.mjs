// The process lifecycle: a script exits on its own; failing handlers never kill it.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./fixtures/exits.mjs', import.meta.url))

/** Runs `code` as a module in a child from the package's root; it must exit on its own with 0. */
function exitsCleanly(code, timeout) {
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    timeout,
    cwd: fileURLToPath(new URL('..', import.meta.url)),
  })
  assert.equal(child.error, undefined, `the child did not exit on its own: ${child.error}`)
  assert.equal(child.status, 0, child.stderr)
  return child
}

test('a script that runs a batch exits on its own, with every failure as an envelope', () => {
  const t0 = performance.now()
  const child = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 10_000 })
  const ms = performance.now() - t0
  assert.equal(child.error, undefined, `the child did not exit on its own: ${child.error}`)
  assert.equal(child.status, 0, child.stderr)
  assert.ok(ms < 5000, `took ${ms.toFixed(0)} ms`)
  const envelopes = JSON.parse(child.stdout)
  assert.deepEqual(envelopes[0], { ok: true, data: 'fine' })
  assert.deepEqual(envelopes.slice(1).map((e) => e.error.code), ['internal_error', 'internal_error', 'timeout', 'timeout'])
  assert.equal(child.stderr, '')
})

test('an engine that is never run does not keep the process alive', () => {
  const code = "import { Engine, tool } from './lib/index.mjs'; new Engine().register('t', tool({ execute: () => 1 }))"
  exitsCleanly(code, 10_000)
})

test('batches of sync handlers awaited back to back leave nothing behind at exit', () => {
  // Such a chain can run for long without the event loop turning: the wake-ups the engine's
  // threads send meanwhile once piled up undelivered, and the exit reported each as a throw.
  const code = `import { Engine, tool } from './lib/index.mjs'
    const e = new Engine().register('t', tool({ execute: ({ n }) => n + 1 }))
    const calls = Array.from({ length: 1000 }, (_, n) => ({ id: 'c' + n, tool: 't', arguments: JSON.stringify({ n }) }))
    for (let i = 0; i < 40; i++) {
      const out = await e.run(calls)
      if (!out.results.every((r, n) => r.envelope.ok && r.envelope.data === n + 1)) throw new Error('a call failed')
    }`
  assert.equal(exitsCleanly(code, 60_000).stderr, '')
})
