// examples/node/agent.mjs runs the meeting-scheduling conversation and serves a UI message stream.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const example = fileURLToPath(new URL('../../examples/node/agent.mjs', import.meta.url))

test('the agent example asks for the duration, schedules, and streams to useChat', () => {
  const r = spawnSync(process.execPath, [example], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, r.stderr)
  const lines = r.stdout.trim().split('\n')
  assert.equal(lines[0], 'status=needs_input answer="How long should the meeting be?"')
  assert.equal(lines[1], 'status=finished reason=answered answer="Done: 30 minutes with Aviad tomorrow."')
  assert.equal(lines[2], 'counters steps=3 toolCalls=2 needsLoops=1')
  assert.match(lines[3], /^ui-stream v1: start start-step tool-input-start tool-input-available tool-output-available finish-step start-step text-start text-delta text-end finish-step finish$/)
})
