// Runs every language-neutral vector of tests/conformance (or $TOOLJIG_CONFORMANCE_DIR) through
// Node, each scripted handler written in JS. The format is tests/conformance/README.md; like the
// Rust runner, this one refuses keys it does not know, so a vector written for a newer format
// fails here instead of passing unchecked.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { Engine, ToolError, needs } from '../lib/index.mjs'

const dir = process.env.TOOLJIG_CONFORMANCE_DIR ?? fileURLToPath(new URL('../../tests/conformance', import.meta.url))

const VECTOR_KEYS = ['name', 'engine', 'tools', 'caller', 'options', 'calls', 'expect', 'then']
const ENGINE_KEYS = ['limits', 'settings', 'resolvers', 'policy_hook']
const HOOK_KEYS = ['deny']
const DENY_KEYS = ['tool', 'pointer', 'equals', 'reason']
const STEP_KEYS = ['wait_ms', 'caller', 'calls', 'expect']
const STEP_EXPECT_KEYS = ['results', 'audit']
const AUDIT_KEYS = ['call_id', 'tool', 'principal', 'tenant', 'session', 'arguments', 'hidden', 'outcome', 'code', 'risk', 'effect', 'attempts', 'cached', 'replayed', 'repaired']
const TOOL_KEYS = ['spec', 'script']
const SCRIPT_KEYS = ['sleep_ms', 'fail_times', 'return', 'echo', 'error', 'needs', 'panic', 'hang']
const SCRIPT_ERROR_KEYS = ['code', 'message', 'retryable']
const EXPECT_KEYS = ['results', 'order', 'overlap', 'disjoint', 'within_ms', 'invocations', 'registration_error', 'audit', 'visible', 'model_schemas']
const RESULT_KEYS = ['call_id', 'tool', 'status', 'envelope', 'attempts', 'repaired', 'replayed', 'cached', 'arguments', 'error_code', 'has_detail', 'message_contains', 'hidden', 'retry_after_ms_at_most']

function onlyKeys(obj, allowed, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Error(`${where} must be an object`)
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) {
      throw new Error(`unknown key ${JSON.stringify(key)} in ${where}; this runner knows ${allowed.join(', ')} (extend bindings-node/tests/conformance.test.mjs for new keys)`)
    }
  }
}

function discover(root) {
  const out = []
  for (const name of readdirSync(root)) {
    const path = join(root, name)
    if (statSync(path).isDirectory()) out.push(...discover(path))
    else if (name.endsWith('.json')) out.push(path)
  }
  return out.sort()
}

/** The README's script table as a JS handler; counts invocations per tool. */
function scripted(script, counts, name) {
  onlyKeys(script, SCRIPT_KEYS, `the script of tool ${name}`)
  const outcomes = ['return', 'echo', 'error', 'needs', 'panic', 'hang'].filter((k) => k in script)
  if (outcomes.length > 1) throw new Error(`a script has one outcome, tool ${name} has ${outcomes.join(', ')}`)
  if (script.echo === false || script.hang === false) throw new Error('`echo` and `hang` are only ever `true`')
  if (script.error) onlyKeys(script.error, SCRIPT_ERROR_KEYS, `the script error of tool ${name}`)
  return async (args, ctx) => {
    counts.set(name, (counts.get(name) ?? 0) + 1)
    if (script.sleep_ms !== undefined) await sleep(script.sleep_ms, undefined, { signal: ctx.signal })
    if (script.fail_times !== undefined && ctx.attempt <= script.fail_times) {
      throw new ToolError('external_api_error', 'transient failure')
    }
    if ('return' in script) return script.return
    if (script.error) {
      const { code, message, retryable } = script.error
      throw new ToolError(code, message, retryable === undefined ? {} : { retryable })
    }
    if (script.needs) return needs(script.needs)
    if (script.panic !== undefined) throw new Error(script.panic)
    if (script.hang) return new Promise(() => {})
    return args
  }
}

const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

function compareResults(expected, actual, problems) {
  if (expected.length !== actual.length) {
    problems.push(`expect.results has ${expected.length} entries but the batch returned ${actual.length}; ids: ${actual.map((r) => r.callId)}`)
    return
  }
  expected.forEach((want, i) => {
    onlyKeys(want, RESULT_KEYS, `expect.results[${i}]`)
    const got = actual[i]
    const at = `results[${i}] (call ${JSON.stringify(got.callId)})`
    for (const [key, value] of Object.entries(want)) {
      let gotValue
      if (key === 'error_code') gotValue = got.envelope.error?.code ?? null
      else if (key === 'has_detail') gotValue = got.detail !== undefined
      else if (key === 'message_contains') {
        const message = got.envelope.error?.message
        if (typeof message !== 'string' || !message.includes(value)) problems.push(`${at}: error message should contain ${JSON.stringify(value)}, it is ${JSON.stringify(message)}`)
        continue
      } else if (key === 'retry_after_ms_at_most') {
        const ms = got.envelope.error?.retry_after_ms
        if (!(typeof ms === 'number' && ms >= 1 && ms <= value)) problems.push(`${at}: retry_after_ms should be within 1..${value}, it is ${JSON.stringify(ms)}`)
        continue
      } else gotValue = got[camel(key)] ?? null
      try {
        assert.deepStrictEqual(gotValue, value)
      } catch {
        problems.push(`${at}.${key} differs:\n      expected: ${JSON.stringify(value)}\n      actual:   ${JSON.stringify(gotValue)}`)
      }
    }
  })
}

function compareTiming(expect, out, problems) {
  const find = (id) => {
    const r = out.results.find((x) => x.callId === id)
    if (!r) problems.push(`a timing fact names call ${JSON.stringify(id)}, which is not in the batch`)
    return r
  }
  const pairs = (name) => expect[name] ?? []
  for (const [kind, check] of [
    ['order', (ra, rb) => rb.startedUs >= ra.finishedUs],
    ['overlap', (ra, rb) => ra.startedUs < rb.finishedUs && rb.startedUs < ra.finishedUs],
    ['disjoint', (ra, rb) => ra.finishedUs <= rb.startedUs || rb.finishedUs <= ra.startedUs],
  ]) {
    for (const [a, b] of pairs(kind)) {
      const ra = find(a)
      const rb = find(b)
      if (!ra || !rb) continue
      const never = [ra, rb].filter((r) => r.startedUs === undefined && (kind !== 'order' || r === rb))
      if (never.length) {
        problems.push(`${kind} [${a}, ${b}]: call ${never[0].callId} never started`)
        continue
      }
      if (!check(ra, rb)) {
        problems.push(`${kind} [${a}, ${b}] does not hold: ${a} ran ${ra.startedUs}..${ra.finishedUs} µs, ${b} ran ${rb.startedUs}..${rb.finishedUs} µs`)
      }
    }
  }
  if (expect.within_ms !== undefined && out.durationUs > expect.within_ms * 1000) {
    problems.push(`the batch took ${out.durationUs} µs, more than within_ms ${expect.within_ms}`)
  }
}

/** The value at a JSON pointer, or undefined. */
function at(value, pointer) {
  if (pointer === '') return value
  let v = value
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, key)) return undefined
    v = v[key]
  }
  return v
}

function sameJson(a, b) {
  try {
    assert.deepStrictEqual(a, b)
    return true
  } catch {
    return false
  }
}

/** Engine options for the vector's `engine` section, with scripted resolvers and hook. */
function engineOptions(config) {
  onlyKeys(config, ENGINE_KEYS, 'engine')
  const options = { audit: 'memory' }
  if (config.limits) options.limits = config.limits
  if (config.settings) options.settings = config.settings
  if (config.resolvers) {
    options.resolvers = {}
    for (const [name, table] of Object.entries(config.resolvers)) {
      options.resolvers[name] = async (req) =>
        typeof req.value === 'string' && Object.hasOwn(table, req.value) ? table[req.value] : { status: 'not_found' }
    }
  }
  if (config.policy_hook) {
    onlyKeys(config.policy_hook, HOOK_KEYS, 'engine.policy_hook')
    const rules = config.policy_hook.deny ?? []
    rules.forEach((r, i) => onlyKeys(r, DENY_KEYS, `engine.policy_hook.deny[${i}]`))
    options.policyHook = async (req) => {
      const rule = rules.find((r) => r.tool === req.tool && (r.pointer === undefined || sameJson(at(req.arguments, r.pointer), r.equals)))
      return rule ? { allow: false, reason: rule.reason } : true
    }
  }
  return options
}

/** The batch wrote one audit record per call, the chain verifies, expected records match. */
async function checkAudit(engine, before, results, expected, problems) {
  const added = (await engine.audit()).slice(before)
  if (added.length !== results.length) problems.push(`the batch wrote ${added.length} audit records for ${results.length} calls; every call must have one`)
  const chain = await engine.verifyAudit()
  if (chain.broken) problems.push(`the audit chain does not verify: ${JSON.stringify(chain)}`)
  for (const [i, want] of (expected ?? []).entries()) {
    onlyKeys(want, AUDIT_KEYS, `expect.audit[${i}]`)
    const record = added.find((r) => r.callId === want.call_id)
    if (!record) {
      problems.push(`no audit record for call ${JSON.stringify(want.call_id)}`)
      continue
    }
    for (const [key, value] of Object.entries(want)) {
      const got = record[camel(key)] ?? null
      if (!sameJson(got, value)) problems.push(`audit record of ${want.call_id}: ${key} differs:\n      expected: ${JSON.stringify(value)}\n      actual:   ${JSON.stringify(got)}`)
    }
  }
  return added.length
}

function checkVisibility(engine, caller, expect, problems) {
  if (expect.visible === undefined && expect.model_schemas === undefined) return
  const specs = engine.specs(caller ?? {})
  if (expect.visible !== undefined && !sameJson(specs.map((s) => s.name), expect.visible)) {
    problems.push(`specs(caller) lists ${JSON.stringify(specs.map((s) => s.name))}, expected ${JSON.stringify(expect.visible)}`)
  }
  for (const [tool, schema] of Object.entries(expect.model_schemas ?? {})) {
    const spec = specs.find((s) => s.name === tool)
    if (!spec) problems.push(`${tool} is not in specs(caller)`)
    else if (!sameJson(spec.inputSchema, schema)) problems.push(`the model-facing schema of ${tool} is ${JSON.stringify(spec.inputSchema)}, expected ${JSON.stringify(schema)}`)
  }
}

async function runVector(v) {
  onlyKeys(v, VECTOR_KEYS, 'the vector')
  onlyKeys(v.expect, EXPECT_KEYS, 'expect')
  const problems = []
  const engine = new Engine(engineOptions(v.engine ?? {}))
  const counts = new Map()
  let registration = null
  for (const [i, entry] of (v.tools ?? []).entries()) {
    onlyKeys(entry, TOOL_KEYS, `tools[${i}]`)
    if (!('script' in entry)) throw new Error(`tools[${i}] has no script (use null for a client-side tool)`)
    const handler = entry.script === null ? undefined : scripted(entry.script, counts, entry.spec.name)
    try {
      engine.registerSpec(entry.spec, handler)
    } catch (e) {
      registration = e
      break
    }
  }
  const want = v.expect.registration_error
  if (registration !== null || want !== undefined) {
    if (registration === null) problems.push(`registration should have failed with ${JSON.stringify(want)}, but every tool registered`)
    else if (want === undefined) problems.push(`registration failed: ${registration.message}`)
    else if (!registration.message.includes(want)) problems.push(`registration failed with ${JSON.stringify(registration.message)}, which does not contain ${JSON.stringify(want)}`)
    return problems
  }
  checkVisibility(engine, v.caller, v.expect, problems)
  const out = await engine.run(v.calls ?? [], { ...(v.options ?? {}), caller: v.caller ?? undefined })
  let audited = await checkAudit(engine, 0, out.results, v.expect.audit, problems)
  for (const [n, step] of (v.then ?? []).entries()) {
    onlyKeys(step, STEP_KEYS, `then[${n}]`)
    onlyKeys(step.expect ?? {}, STEP_EXPECT_KEYS, `then[${n}].expect`)
    if (step.wait_ms !== undefined) await sleep(step.wait_ms)
    const found = []
    const stepOut = await engine.run(step.calls ?? [], { caller: step.caller ?? v.caller ?? undefined })
    if (step.expect?.results) compareResults(step.expect.results, stepOut.results, found)
    audited += await checkAudit(engine, audited, stepOut.results, step.expect?.audit, found)
    problems.push(...found.map((p) => `then[${n}]: ${p}`))
  }
  if (v.expect.results) compareResults(v.expect.results, out.results, problems)
  compareTiming(v.expect, out, problems)
  for (const [tool, n] of Object.entries(v.expect.invocations ?? {})) {
    if ((counts.get(tool) ?? 0) !== n) problems.push(`tool ${tool} ran ${counts.get(tool) ?? 0} times, expected ${n}`)
  }
  return problems
}

const files = discover(dir)

describe(`conformance vectors in ${dir}`, () => {
  test('the folder holds vectors', () => {
    assert.ok(files.length > 0, `no *.json vectors under ${dir}`)
  })
  for (const file of files) {
    test(relative(dir, file), { timeout: 60_000 }, async () => {
      const vector = JSON.parse(readFileSync(file, 'utf8'))
      const problems = await runVector(vector)
      assert.deepEqual(problems, [], `${vector.name}:\n  ${problems.join('\n  ')}`)
    })
  }
})
