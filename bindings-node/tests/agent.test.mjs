// The agent loop from Node with models written in JavaScript: multi-round with parallel
// calls, needs → one question → the answer, the step limit's final answer, fallbacks, a run
// suspended on a client-side tool that is stored as JSON and resumed, a run suspended on an
// approval that resumes once it is decided.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { Agent, AgentState, Engine, FallbackChain, Model, ModelError, ScriptedModel, ToolError, needs, toUiMessageStream } from '../lib/index.mjs'

const city = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }

function weatherEngine(log = []) {
  const e = new Engine()
  e.register('get_weather', {
    description: 'Weather for a city.',
    inputSchema: city,
    execute: async ({ city }) => {
      log.push(city)
      return { city, tempC: city.length * 3 }
    },
  })
  e.register('to_fahrenheit', {
    description: 'Celsius to Fahrenheit.',
    inputSchema: { type: 'object', properties: { c: { type: 'number' } }, required: ['c'] },
    execute: ({ c }) => ({ f: (c * 9) / 5 + 32 }),
  })
  return e
}

const last = (request) => request.messages.at(-1)
const finalCall = (request) => request.toolChoice === 'none' || request.tools.length === 0

test('multi-round with parallel calls until a text answer; events as they happen', async () => {
  const log = []
  const requests = []
  const model = Model.fromFunction(async (request) => {
    requests.push(request)
    const m = last(request)
    if (m.role === 'user') {
      return { content: 'Let me check.', toolCalls: [{ id: 'p', name: 'get_weather', arguments: '{"city":"Paris"}' }, { id: 'r', name: 'get_weather', arguments: { city: 'Rome' } }] }
    }
    if (m.results.length === 2) return { content: 'Converting.', toolCalls: [{ id: 'f', name: 'to_fahrenheit', arguments: { c: m.results[0].envelope.data.tempC } }] }
    return { content: `Paris is ${m.results[0].envelope.data.f}°F.`, usage: { inputTokens: 10, outputTokens: 5 } }
  }, { name: 'planner' })
  assert.equal(model.name, 'planner')
  const agent = new Agent(weatherEngine(log), model, { system: 'Be brief.', mode: 'act_first' })
  const state = new AgentState('Weather in Paris and Rome, in Fahrenheit?')
  const run = agent.run(state)
  const events = []
  for await (const e of run) events.push(e)
  const out = await run
  assert.deepEqual(out.status, { status: 'finished', reason: 'answered' })
  assert.equal(out.answer, 'Paris is 59°F.')
  assert.deepEqual(log.sort(), ['Paris', 'Rome'])
  assert.equal(out.counters.steps, 3)
  assert.equal(out.counters.toolCalls, 3)
  assert.equal(out.counters.toolSuccesses, 3)
  assert.deepEqual(out.counters.usage, { inputTokens: 10, outputTokens: 5 })
  assert.equal(requests[0].messages[0].role, 'system')
  assert.deepEqual(requests[0].tools.map((t) => t.name), ['get_weather', 'to_fahrenheit'])
  assert.deepEqual(last(requests[1]).results.map((r) => r.callId), ['p', 'r'])
  assert.deepEqual(events.filter((e) => e.type === 'tool_output_available').map((e) => e.callId).sort(), ['f', 'p', 'r'])
  assert.equal(events[0].type, 'start')
  assert.equal(events.at(-1).type, 'finish')
  // Act-first: text beside the first calls is held back; once tools ran, text streams.
  const text = events.filter((e) => e.type === 'text_delta').map((e) => e.delta).join('')
  assert.equal(text, 'Converting.Paris is 59°F.')
  assert.equal(state.status.status, 'finished')
  assert.deepEqual(state.messages.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant'])
  // The same events make a UI message stream for useChat.
  assert.match(toUiMessageStream('m1', events), /"type":"tool-output-available","toolCallId":"p"/)
})

test('needs → one question → the user answers → the call is made', async () => {
  const scheduled = []
  const e = new Engine()
  e.register('schedule_meeting', {
    description: 'Schedules a meeting.',
    inputSchema: { type: 'object', properties: { with: { type: 'string' }, durationMins: { type: 'integer' } }, required: ['with'] },
    execute: (args) => {
      if (args.durationMins === undefined) return needs('durationMins')
      scheduled.push(args)
      return { id: 'mtg_1' }
    },
  })
  const model = Model.fromFunction((request) => {
    if (finalCall(request)) return 'How long should the meeting with Aviad be?'
    const m = last(request)
    if (m.role === 'user' && /Set a meeting/.test(m.content)) return { toolCalls: [{ id: 'm1', name: 'schedule_meeting', arguments: { with: 'Aviad' } }] }
    if (m.role === 'user') return { toolCalls: [{ id: 'm2', name: 'schedule_meeting', arguments: { with: 'Aviad', durationMins: Number.parseInt(m.content, 10) } }] }
    return m.results[0].envelope.ok ? 'Scheduled with Aviad.' : 'That failed.'
  })
  const agent = new Agent(e, model)
  const state = new AgentState('Set a meeting with Aviad tomorrow')
  const first = await agent.run(state)
  assert.equal(first.status.status, 'needs_input')
  assert.deepEqual(first.status.needs, [{ callId: 'm1', tool: 'schedule_meeting', fields: ['durationMins'] }])
  assert.equal(first.answer, 'How long should the meeting with Aviad be?')
  assert.equal(first.counters.needsLoops, 1)
  assert.deepEqual(scheduled, [])
  const second = await agent.send(state, '30 minutes')
  assert.deepEqual(second.status, { status: 'finished', reason: 'answered' })
  assert.equal(second.answer, 'Scheduled with Aviad.')
  assert.deepEqual(scheduled, [{ with: 'Aviad', durationMins: 30 }])
})

test('a model that never stops calling tools gets a final tool-free answer at the step limit', async () => {
  let n = 0
  const model = Model.fromFunction((request) => {
    if (finalCall(request)) return `Checked the weather ${n} times; stopping here.`
    n += 1
    return { toolCalls: [{ id: `c${n}`, name: 'get_weather', arguments: { city: 'Oslo' } }] }
  })
  const agent = new Agent(weatherEngine(), model, { limits: { maxSteps: 2 } })
  const out = await agent.run(new AgentState('Keep checking Oslo'))
  assert.deepEqual(out.status, { status: 'finished', reason: 'step_limit' })
  assert.equal(out.answer, 'Checked the weather 2 times; stopping here.')
  assert.equal(out.counters.toolCalls, 2)
})

test('model failures: kinds from ModelError or an HTTP status; a fallback chain answers', async () => {
  let calls = 0
  const flaky = Model.fromFunction(() => {
    calls += 1
    throw new ModelError('rate_limited', 'slow down', { retryAfterMs: 10 })
  }, { name: 'flaky' })
  await assert.rejects(flaky.respond({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), (e) => e instanceof ModelError && e.kind === 'rate_limited' && e.retryAfterMs === 10)
  const down = Model.fromFunction(() => {
    throw Object.assign(new Error('Service Unavailable'), { status: 503 })
  })
  await assert.rejects(down.respond({ model: 'm', messages: [] }), (e) => e.kind === 'server' && e.status === 503)
  const bad = Model.fromFunction(() => 42)
  await assert.rejects(bad.respond({ model: 'm', messages: [] }), (e) => e.kind === 'other' && /must return a turn/.test(e.message))
  const backup = new ScriptedModel(['From the backup.'], { name: 'backup' })
  const chain = new FallbackChain([flaky, backup], { threshold: 1, cooldownMs: 60_000 })
  const out = await new Agent(weatherEngine(), chain).run(new AgentState('hi'))
  assert.equal(out.answer, 'From the backup.')
  assert.equal(calls, 2)
  const status = chain.status()
  assert.deepEqual(status.map((s) => [s.model, s.state]), [['flaky', 'open'], ['backup', 'closed']])
  assert.equal(backup.requests().length, 1)
})

test('a run suspended on a client-side tool is stored as JSON and resumed with its result', async () => {
  const e = weatherEngine()
  e.registerSpec({ name: 'pick_file', description: 'The user picks a file (runs in the browser).', inputSchema: { type: 'object' } })
  const model = new ScriptedModel([
    { toolCalls: [{ id: 'f1', name: 'pick_file', arguments: {} }] },
    'You picked /tmp/a.txt.',
  ])
  const agent = new Agent(e, model)
  const state = new AgentState('Open a file')
  const run = agent.run(state)
  const events = []
  for await (const ev of run) events.push(ev)
  const out = await run
  assert.equal(out.status.status, 'suspended')
  assert.deepEqual(out.status.pending.map((p) => [p.callId, p.tool, p.status]), [['f1', 'pick_file', 'pending_external']])
  assert.ok(events.some((ev) => ev.type === 'tool_output_pending' && ev.callId === 'f1'))
  assert.throws(() => AgentState.fromJSON({ nonsense: true }), /agent state/)
  const stored = JSON.stringify(state)
  const restored = AgentState.fromJSON(stored)
  assert.equal(restored.runId, state.runId)
  const done = await agent.resumeWithResults(restored, [{ callId: 'f1', tool: 'pick_file', envelope: { ok: true, data: { path: '/tmp/a.txt' } } }])
  assert.deepEqual(done.status, { status: 'finished', reason: 'answered' })
  assert.equal(done.answer, 'You picked /tmp/a.txt.')
  assert.deepEqual(last(model.requests()[1]).results[0].envelope, { ok: true, data: { path: '/tmp/a.txt' } })
  await assert.rejects(agent.resumeWithResults(restored, []).outcome, (err) => err instanceof ToolError && err.code === 'invalid_request')
})

/** An engine whose high-risk `send_email` needs approval (a durable approval in its state store). */
function approvalEngine(sent, options = {}) {
  const e = new Engine({ approvalRules: { minRisk: 'high' }, ...options })
  e.register('send_email', {
    description: 'Sends an email.',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    execute: async ({ to }) => {
      sent.push(to)
      return { sentTo: to }
    },
  }, { risk: 'high' })
  return e
}

const emailAna = { toolCalls: [{ id: 'e1', name: 'send_email', arguments: { to: 'ana@x.io' } }] }
const alice = { principal: 'alice', tenant: 'acme' }

test('a run suspended on an approval resumes once it is approved: the call runs once, the model answers', async () => {
  const sent = []
  const engine = approvalEngine(sent)
  const model = new ScriptedModel([emailAna, 'Sent to Ana.'])
  const agent = new Agent(engine, model)
  const state = new AgentState('Email Ana')
  const run = agent.run(state, { caller: alice })
  const events = []
  for await (const ev of run) events.push(ev)
  const out = await run
  assert.equal(out.status.status, 'suspended')
  const [pending] = out.status.pending
  assert.deepEqual([pending.callId, pending.tool, pending.status, pending.arguments], ['e1', 'send_email', 'pending_approval', { to: 'ana@x.io' }])
  assert.ok(events.some((ev) => ev.type === 'tool_approval_request' && ev.approvalId === pending.approvalId))
  assert.deepEqual(sent, [])
  // Not decided yet: resuming keeps the run suspended and runs nothing.
  const still = await agent.resume(state, { caller: alice })
  assert.equal(still.status.status, 'suspended')
  assert.deepEqual(sent, [])

  const record = await engine.decide(pending.approvalId, { decision: 'approve', argumentsHash: pending.argumentsHash }, alice)
  assert.equal(record.status, 'approved')
  const done = await agent.resume(state, { caller: alice })
  assert.deepEqual(done.status, { status: 'finished', reason: 'answered' })
  assert.equal(done.answer, 'Sent to Ana.')
  assert.deepEqual(sent, ['ana@x.io'])
  assert.equal(done.counters.toolSuccesses, 1)
  // The model answered from the approved call's real result.
  assert.deepEqual(last(model.requests().at(-1)).results[0].envelope, { ok: true, data: { sentTo: 'ana@x.io' } })
  // The run is over: resuming again is refused and runs nothing twice.
  await assert.rejects(agent.resume(state, { caller: alice }).outcome, (err) => err instanceof ToolError && err.code === 'invalid_request')
  assert.deepEqual(sent, ['ana@x.io'])
})

test('a stored run suspended on an approval resumes through another Engine and Agent on the same SQLite store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-agent-'))
  try {
    const stateStore = { sqlite: join(dir, 'state.db') }
    const sent = []
    const first = new Agent(approvalEngine(sent, { stateStore }), new ScriptedModel([emailAna]))
    const state = new AgentState('Email Ana')
    const out = await first.run(state, { caller: alice })
    const [pending] = out.status.pending
    const stored = JSON.stringify(state)
    // A later request, as another process would serve it: its own engine and agent on the
    // same store, the state read back from storage, the decision made there.
    const engine = approvalEngine(sent, { stateStore })
    await engine.decide(pending.approvalId, { decision: 'approve', argumentsHash: pending.argumentsHash }, alice)
    const second = new Agent(engine, new ScriptedModel(['Sent to Ana.']))
    const restored = AgentState.fromJSON(stored)
    const done = await second.resume(restored, { caller: alice })
    assert.deepEqual(done.status, { status: 'finished', reason: 'answered' })
    assert.equal(done.answer, 'Sent to Ana.')
    assert.deepEqual(sent, ['ana@x.io'])
    assert.deepEqual(restored.status, { status: 'finished', reason: 'answered' })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('bad arguments are refused clearly', () => {
  const e = weatherEngine()
  assert.throws(() => new Agent({}, Model.fromFunction(() => 'x')), /Engine/)
  assert.throws(() => new Agent(e, () => 'x'), /Model/)
  assert.throws(() => new Agent(e, Model.fromFunction(() => 'x'), { limits: { maxStep: 3 } }), /maxStep|max_step/)
  assert.throws(() => new ModelError('nope', 'x'), TypeError)
  assert.throws(() => AgentState.fromJSON('{"messages": 3}'), /agent state/)
})

test('JSON-structured tool calling from Node: a planner with a dependent call, then a response', async () => {
  const log = []
  const planner = Model.fromFunction((request) => {
    assert.deepEqual(request.tools, [], 'the tools are in the prompt, not offered natively')
    assert.match(request.messages[0].content, /get_weather/)
    assert.ok(request.responseSchema)
    return JSON.stringify({
      reasoning: 'Two cities in parallel, then convert Paris.',
      toolCalls: [
        { id: 'p', tool: 'get_weather', params: { city: 'Paris' } },
        { id: 'r', tool: 'get_weather', params: { city: 'Rome' } },
        { id: 'f', tool: 'to_fahrenheit', params: { c: { $from: 'p', pointer: '/tempC' } }, dependsOn: ['p'] },
      ],
    })
  }, { name: 'json-planner' })
  const responder = Model.fromFunction((request) => {
    const results = request.messages.at(-1).content
    return /"f":59/.test(results) ? 'Paris 15°C (59°F), Rome 12°C.' : `unexpected: ${results}`
  }, { name: 'responder' })
  const agent = new Agent(weatherEngine(log), planner, responder, { protocol: { json: { shape: 'flat' } } })
  const out = await agent.run(new AgentState('Weather in Paris and Rome, Paris in Fahrenheit'))
  assert.equal(out.answer, 'Paris 15°C (59°F), Rome 12°C.')
  assert.equal(out.counters.toolSuccesses, 3)
  assert.deepEqual(log.sort(), ['Paris', 'Rome'])
})

test('a streaming scripted model streams its text in talk-first mode', async () => {
  const model = new ScriptedModel(['Hello there, nothing to run.'], { streaming: true })
  const run = new Agent(weatherEngine(), model, { mode: 'talk_first' }).run(new AgentState('hi'))
  const deltas = []
  for await (const e of run) if (e.type === 'text_delta') deltas.push(e.delta)
  assert.equal(deltas.join(''), 'Hello there, nothing to run.')
  assert.equal((await run).answer, 'Hello there, nothing to run.')
})

test('a model function error with only an HTTP status gets its kind from the core', async () => {
  for (const [status, kind] of [[429, 'rate_limited'], [401, 'auth'], [503, 'server'], [404, 'invalid_request'], [600, 'invalid_request']]) {
    const m = Model.fromFunction(() => {
      throw Object.assign(new Error(`HTTP ${status}`), { status })
    })
    await assert.rejects(m.respond({ model: 'm', messages: [] }), (e) => e.kind === kind && e.status === status)
  }
})

test('offerTools offers the best matches of the message and search_tools', async () => {
  const e = new Engine()
    .register('get_weather', { description: 'Current weather.', inputSchema: { type: 'object' }, execute: () => 21 })
    .register('send_email', { description: 'Sends an email.', inputSchema: { type: 'object' }, execute: () => 'sent' })
    .enableToolSearch()
  const offered = []
  const model = Model.fromFunction((request) => {
    offered.push(request.tools.map((t) => t.name))
    return 'Sunny.'
  })
  await new Agent(e, model, { offerTools: 1 }).run(new AgentState("What's the weather in Oslo?"))
  assert.deepEqual(offered[0], ['get_weather', 'search_tools'])
})

test('an async selector picks each turn’s tools; made-up names are ignored and a throwing one offers every candidate', async () => {
  const engine = new Engine()
  for (const name of ['get_weather', 'send_email', 'book_table']) engine.register(name, { description: `The ${name} tool.`, execute: (a) => a })
  const asked = []
  const selectTools = async (message, tools) => {
    asked.push([message, tools.map((t) => t.name)])
    if (message.includes('broken')) throw new Error('the selector broke')
    return ['send_email', 'made_up', 'get_weather']
  }
  const model = new ScriptedModel(['Done.', 'Still done.'])
  const agent = new Agent(engine, model, { selectTools })
  await agent.run(new AgentState('Email Bob the forecast'))
  await agent.run(new AgentState('this is broken'))
  const offered = model.requests().map((r) => r.tools.map((t) => t.name))
  assert.deepEqual(offered[0], ['send_email', 'get_weather'])
  assert.deepEqual(offered[1], ['get_weather', 'send_email', 'book_table'])
  assert.deepEqual(asked[0], ['Email Bob the forecast', ['get_weather', 'send_email', 'book_table']])
  assert.throws(() => new Agent(engine, model, { selectTools: 'all' }), TypeError)
})
