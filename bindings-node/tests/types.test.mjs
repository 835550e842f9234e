// The types of the JS layer: generated from its source, fresh, and they compile against idiomatic use.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ErrorCodes } from '../lib/index.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))

test('lib/*.d.mts are what scripts/types.mjs writes from the JSDoc of lib/*.mjs (checked by tsc)', () => {
  const r = spawnSync(process.execPath, ['scripts/types.mjs', '--check'], { cwd: root, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})

test('lib/index.d.mts type-checks idiomatic use (tsc --strict)', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', 'tests/types/tsconfig.json'], { cwd: root, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})

test('the ErrorCode type lists exactly the core codes, in order', () => {
  const dts = readFileSync(new URL('../lib/types.d.mts', import.meta.url), 'utf8')
  const block = dts.match(/export type ErrorCode =([^]*?)\n\n/)[1]
  const typed = [...block.matchAll(/'([a-z_]+)'/g)].map((m) => m[1])
  assert.deepEqual(typed, ErrorCodes.map((c) => c.code))
})
