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
import { Agent, AgentState, Engine, ModelTurn, Provider, ScriptedModel, ToolError, needs } from '../lib/index.mjs'

const dir = process.env.TOOLJIG_CONFORMANCE_DIR ?? fileURLToPath(new URL('../../tests/conformance', import.meta.url))

const VECTOR_KEYS = ['name', 'engine', 'tools', 'caller', 'options', 'calls', 'model_turn', 'agent', 'expect', 'then', 'steps']
const ENGINE_KEYS = ['limits', 'settings', 'resolvers', 'policy_hook', 'approval_rules', 'approval_predicate', 'external_expiry_ms']
const PREDICATE_KEYS = ['require']
const REQUIRE_KEYS = ['tool', 'pointer', 'equals', 'principal']
const HOOK_KEYS = ['deny']
const DENY_KEYS = ['tool', 'pointer', 'equals', 'reason']
const STEP_KEYS = ['wait_ms', 'caller', 'calls', 'expect']
const STEP_EXPECT_KEYS = ['results', 'audit']
const AUDIT_KEYS = ['call_id', 'tool', 'principal', 'tenant', 'session', 'arguments', 'hidden', 'outcome', 'code', 'risk', 'effect', 'attempts', 'cached', 'replayed', 'repaired']
const TOOL_KEYS = ['spec', 'script']
const SCRIPT_KEYS = ['sleep_ms', 'fail_times', 'return', 'echo', 'error', 'needs', 'panic', 'hang']
const SCRIPT_ERROR_KEYS = ['code', 'message', 'retryable']
const EXPECT_KEYS = ['results', 'order', 'overlap', 'disjoint', 'within_ms', 'invocations', 'registration_error', 'audit', 'visible', 'model_schemas', 'rollback', 'tool_results']
const RESULT_KEYS = ['call_id', 'tool', 'status', 'envelope', 'attempts', 'repaired', 'replayed', 'cached', 'arguments', 'error_code', 'has_detail', 'message_contains', 'hidden', 'retry_after_ms_at_most', 'approval', 'recovered', 'defaults']
const DURABLE_STEP_KEYS = ['wait_ms', 'decide', 'submit', 'resume', 'rollback', 'run', 'expect']
const DURABLE_EXPECT_KEYS = ['results', 'error', 'rollback']
const DECIDE_KEYS = ['call_id', 'approver', 'decision', 'message', 'arguments', 'remember', 'arguments_hash', 'approval_id']
const SUBMIT_KEYS = ['call_id', 'result', 'error', 'caller']
const RUN_STEP_KEYS = ['caller', 'options', 'calls']
const ROLLBACK_STEP_KEYS = ['call_id']
const ERROR_KEYS = ['code', 'reason']
const MODEL_TURN_KEYS = ['provider', 'response']
const AGENT_KEYS = ['model', 'message', 'expect']
const AGENT_EXPECT_KEYS = ['status', 'answer', 'counters', 'messages', 'requests']

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
      } else if (key === 'approval' && got.approval && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        // Approval ids, hashes and times are random: compare the keys given only.
        gotValue = Object.fromEntries(Object.keys(value).map((k) => [k, got.approval[camel(k)] ?? null]))
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
  if (config.approval_rules) options.approvalRules = config.approval_rules
  if (config.external_expiry_ms !== undefined) options.externalExpiryMs = config.external_expiry_ms
  if (config.approval_predicate) {
    onlyKeys(config.approval_predicate, PREDICATE_KEYS, 'engine.approval_predicate')
    const rules = config.approval_predicate.require
    rules.forEach((r, i) => onlyKeys(r, REQUIRE_KEYS, `engine.approval_predicate.require[${i}]`))
    // A call needs approval when any rule matches it (the Rust runner's PredicateRule).
    options.approvalPredicate = async (q) =>
      rules.some(
        (r) =>
          (r.tool === undefined || r.tool === q.tool) &&
          (r.principal === undefined || q.caller.principal === r.principal) &&
          (r.pointer === undefined || (at(q.arguments, r.pointer) !== undefined && sameJson(at(q.arguments, r.pointer), r.equals ?? null))),
      )
  }
  return options
}

/** Compares a rollback report's entries with expected ones, each on the keys it has. */
function checkRollback(want, report, where, problems) {
  const entries = report?.entries ?? []
  if (entries.length !== want.length) {
    problems.push(`${where}: expected ${want.length} rollback entries, got ${entries.length}: ${JSON.stringify(entries)}`)
    return
  }
  want.forEach((w, i) => {
    for (const [k, v] of Object.entries(w)) {
      const got = entries[i][camel(k)]
      if (!sameJson(got, v)) problems.push(`${where}: rollback[${i}].${k} is ${JSON.stringify(got ?? null)}, expected ${JSON.stringify(v)}`)
    }
  })
}

/** Compares how a step ended (`outcome`: null when accepted, else what it threw) with `expect.error`. */
function checkRefusal(outcome, want, where, problems) {
  if (want) onlyKeys(want, ERROR_KEYS, `${where}.expect.error`)
  if (outcome === null) {
    if (want) problems.push(`${where}: should have been refused with ${want.code}, but it was accepted`)
    return
  }
  if (!(outcome instanceof ToolError)) {
    problems.push(`${where}: threw ${outcome?.stack ?? outcome} instead of a ToolError`)
    return
  }
  const reason = outcome.details?.reason ?? null
  if (!want) problems.push(`${where}: refused unexpectedly: ${outcome.code} (reason ${reason}): ${outcome.message}`)
  else if (outcome.code !== want.code || (want.reason !== undefined && reason !== want.reason)) {
    problems.push(`${where}: refused with ${outcome.code} (reason ${reason}), expected ${want.code} (reason ${want.reason ?? null})`)
  }
}

/** Runs a promise-returning step: null when it resolved, the thrown value when it was refused. */
async function attempt(fn) {
  try {
    return [await fn(), null]
  } catch (e) {
    return [undefined, e]
  }
}

/** The decision object `decide` takes, from a `decide` step and the approval the latest results show. */
function decisionOf(d, info) {
  const argumentsHash = d.arguments_hash ?? info?.argumentsHash ?? ''
  switch (d.decision) {
    case 'approve':
      return d.remember === undefined ? { decision: 'approve', argumentsHash } : { decision: 'approve', argumentsHash, remember: d.remember }
    case 'reject':
      return d.message === undefined ? { decision: 'reject', argumentsHash } : { decision: 'reject', argumentsHash, message: d.message }
    case 'edit':
      return { decision: 'edit', argumentsHash, arguments: d.arguments ?? null }
    default:
      return null
  }
}

/** The durable-run `steps` of a vector, against the run of its first batch (the Rust runner's durable.rs). */
async function runSteps(engine, caller, first, steps, problems) {
  let latest = first.results
  let runId = first.runId ?? ''
  for (const [n, step] of steps.entries()) {
    const where = `steps[${n}]`
    onlyKeys(step, DURABLE_STEP_KEYS, where)
    const expect = step.expect ?? {}
    onlyKeys(expect, DURABLE_EXPECT_KEYS, `${where}.expect`)
    if (step.wait_ms !== undefined) await sleep(step.wait_ms)
    const actions = ['decide', 'submit', 'resume', 'rollback', 'run'].filter((k) => step[k] !== undefined)
    if (actions.length > 1) {
      problems.push(`${where}: a step has at most one of decide, submit, resume, rollback, run`)
      continue
    }
    const found = []
    if (step.run !== undefined) {
      onlyKeys(step.run, RUN_STEP_KEYS, `${where}.run`)
      const out = await engine.run(step.run.calls, { ...(step.run.options ?? {}), caller: step.run.caller ?? caller ?? undefined })
      if (expect.results) compareResults(expect.results, out.results, found)
      if (expect.rollback) checkRollback(expect.rollback, out.rollback, where, problems)
      runId = out.runId ?? ''
      latest = out.results
    } else if (step.decide !== undefined) {
      const d = step.decide
      onlyKeys(d, DECIDE_KEYS, `${where}.decide`)
      const info = latest.find((r) => r.callId === d.call_id)?.approval
      const decision = decisionOf(d, info)
      if (decision === null) {
        problems.push(`${where}: unknown decision ${JSON.stringify(d.decision)}`)
        continue
      }
      const id = d.approval_id ?? info?.id ?? ''
      const [, refused] = await attempt(() => engine.decide(id, decision, d.approver))
      checkRefusal(refused, expect.error, where, problems)
    } else if (step.submit !== undefined) {
      const s = step.submit
      onlyKeys(s, SUBMIT_KEYS, `${where}.submit`)
      if ('result' in s === 'error' in s) {
        problems.push(`${where}: submit holds exactly one of result, error`)
        continue
      }
      let outcome = s.result
      if (s.error) {
        onlyKeys(s.error, SCRIPT_ERROR_KEYS, `${where}.submit.error`)
        outcome = new ToolError(s.error.code, s.error.message, s.error.retryable === undefined ? {} : { retryable: s.error.retryable })
      }
      const [, refused] = await attempt(() => engine.submitResult(runId, s.call_id, outcome, s.caller ?? caller ?? undefined))
      checkRefusal(refused, expect.error, where, problems)
    } else if (step.resume === true) {
      const [out, refused] = await attempt(() => engine.resume(runId))
      checkRefusal(refused, expect.error, where, problems)
      if (refused === null) {
        if (expect.results) compareResults(expect.results, out.results, found)
        if (expect.rollback) checkRollback(expect.rollback, out.rollback, where, problems)
        latest = out.results
      }
    } else if (step.rollback !== undefined) {
      onlyKeys(step.rollback, ROLLBACK_STEP_KEYS, `${where}.rollback`)
      const [report, refused] = await attempt(() => engine.rollback(runId, step.rollback.call_id))
      checkRefusal(refused, expect.error, where, problems)
      if (refused === null && expect.rollback) checkRollback(expect.rollback, report, where, problems)
    }
    problems.push(...found.map((p) => `${where}: ${p}`))
  }
}

/** The batch wrote one audit record per call, the chain verifies, expected records match. */
async function checkAudit(engine, before, results, expected, problems) {
  const all = (await engine.audit()).slice(before)
  // A rollback's records (`rolled_back`, ...) come after the calls' own.
  const added = all.filter((r) => !['rolled_back', 'not_reversible', 'rollback_failed'].includes(r.outcome))
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
  return all.length
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

/** `value` with the batch's approval ids and run id replaced by their placeholders. */
function placeholders(value, out) {
  let text = JSON.stringify(value)
  for (const r of out.results) if (r.approval?.id) text = text.replaceAll(r.approval.id, '<approval_id>')
  if (out.runId) text = text.replaceAll(out.runId, '<run_id>')
  return JSON.parse(text)
}

/** Neutral values as the core spells them: keys snake_case, data (envelopes, arguments) untouched. */
function snake(value) {
  if (Array.isArray(value)) return value.map(snake)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), ['envelope', 'arguments', 'data'].includes(k) ? v : snake(v)]))
}

/** The calls a provider's response asks for (`model_turn`). */
function callsOf(modelTurn) {
  onlyKeys(modelTurn, MODEL_TURN_KEYS, 'model_turn')
  const turn = new Provider(modelTurn.provider).parseResponse(modelTurn.response)
  const { calls, refused } = ModelTurn.intoBatch(turn)
  if (refused.length > 0) throw new Error(`model_turn: ${refused.length} call(s) were cut off`)
  return calls
}

/** Per provider, the exact messages or blocks `toolResults` gives for the batch. */
function checkToolResults(want, out, problems) {
  for (const [name, expected] of Object.entries(want)) {
    const got = placeholders(new Provider(name).toolResults(out), out)
    if (!sameJson(got, expected)) problems.push(`expect.tool_results.${name}: got ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`)
  }
}

/** Runs the agent loop with a scripted model and checks `agent.expect`. */
async function runAgent(engine, caller, run, problems) {
  onlyKeys(run, AGENT_KEYS, 'agent')
  const want = run.expect ?? {}
  onlyKeys(want, AGENT_EXPECT_KEYS, 'agent.expect')
  const model = new ScriptedModel(run.model, { name: 'scripted' })
  const state = new AgentState(run.message)
  const out = await new Agent(engine, model).run(state, { caller: caller ?? undefined })
  const view = state.view()
  const check = (key, got) => {
    if (key in want && !sameJson(got, want[key])) problems.push(`agent.expect.${key}: got ${JSON.stringify(got)}, expected ${JSON.stringify(want[key])}`)
  }
  check('status', snake(view.status))
  check('answer', out.answer)
  check('messages', snake(view.messages))
  check('requests', model.requests().length)
  for (const [key, expected] of Object.entries(want.counters ?? {})) {
    const got = snake(out.counters)[key]
    if (!sameJson(got, expected)) problems.push(`agent.expect.counters.${key}: got ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`)
  }
}

async function runVector(v) {
  onlyKeys(v, VECTOR_KEYS, 'the vector')
  v.expect ??= {}
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
  if (v.agent !== undefined) {
    if (v.calls !== undefined || v.model_turn !== undefined) return ['a vector with `agent` has no `calls` or `model_turn`']
    await runAgent(engine, v.caller, v.agent, problems)
    return problems
  }
  if (v.calls !== undefined && v.model_turn !== undefined) return ['a vector has `calls` or `model_turn`, not both']
  const calls = v.model_turn !== undefined ? callsOf(v.model_turn) : (v.calls ?? [])
  const out = await engine.run(calls, { ...(v.options ?? {}), caller: v.caller ?? undefined })
  if (v.expect.tool_results) checkToolResults(v.expect.tool_results, out, problems)
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
  if (v.expect.rollback) checkRollback(v.expect.rollback, out.rollback, 'expect.rollback', problems)
  await runSteps(engine, v.caller, out, v.steps ?? [], problems)
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
