// Provider formats from Node: tool definitions, responses, conversations and tool results in
// each provider's real shape; strict mode; the JSON-structured protocol.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, JsonProtocol, ModelTurn, Provider, ProviderError, ToolError, toStrict } from '../lib/index.mjs'

const weather = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city'],
}

function engine() {
  const e = new Engine()
  e.register('get_weather', { description: 'Weather for a city.', inputSchema: weather, execute: ({ city }) => ({ city, tempC: 21 }) })
  e.register('fail', { description: 'Always fails.', inputSchema: { type: 'object' }, execute: () => { throw new ToolError('not_found', 'no such thing') } })
  return e
}

test('tool definitions in each provider shape, strict on request', () => {
  const specs = engine().specs()
  assert.deepEqual(Provider.openaiChat().tools(specs)[0], {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather for a city.', parameters: weather },
  })
  const strict = Provider.openaiChat().tools(specs, true)[0]
  assert.equal(strict.function.strict, true)
  assert.deepEqual(strict.function.parameters.required, ['city', 'unit'])
  assert.equal(strict.function.parameters.additionalProperties, false)
  assert.deepEqual(Provider.openaiResponses({ strict: true }).tools(specs)[0].parameters, strict.function.parameters)
  assert.deepEqual(Provider.anthropic().tools(specs)[0], { name: 'get_weather', description: 'Weather for a city.', input_schema: weather })
  assert.deepEqual(Provider.gemini().tools(specs)[0].functionDeclarations[0].parametersJsonSchema, weather)
  assert.deepEqual(toStrict(weather), strict.function.parameters)
  assert.throws(() => toStrict({ type: 'string' }), TypeError)
  assert.throws(() => new Provider('cohere'), /unknown provider "cohere"/)
})

test('parallel calls keep their order and ids; results go back in the provider format', async () => {
  const e = engine()
  const chat = Provider.openaiChat()
  const turn = chat.parseResponse({
    choices: [{
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
          { id: 'call_a', type: 'function', function: { name: 'fail', arguments: '{}' } },
        ],
      },
    }],
    usage: { prompt_tokens: 11, completion_tokens: 7 },
  })
  assert.deepEqual(turn.toolCalls.map((c) => c.id), ['call_b', 'call_a'])
  assert.equal(turn.finishReason, 'tool_calls')
  assert.deepEqual(turn.usage, { inputTokens: 11, outputTokens: 7 })
  const { calls, refused } = ModelTurn.intoBatch(turn)
  assert.deepEqual(refused, [])
  const batch = await e.run(calls)
  const msgs = chat.toolResults(batch)
  assert.deepEqual(msgs.map((m) => [m.role, m.tool_call_id]), [['tool', 'call_b'], ['tool', 'call_a']])
  assert.deepEqual(JSON.parse(msgs[0].content), { ok: true, data: { city: 'Rome', tempC: 21 } })
  const blocks = Provider.anthropic().toolResults(batch.results)
  assert.equal(blocks.length, 1)
  assert.deepEqual(blocks[0].content.map((b) => [b.tool_use_id, b.is_error ?? false]), [['call_b', false], ['call_a', true]])
  const gemini = Provider.gemini().toolResults(batch.results)[0]
  assert.equal(gemini.role, 'user')
  assert.deepEqual(gemini.parts[0].functionResponse.response, { ok: true, data: { city: 'Rome', tempC: 21 } })
})

test('a conversation round-trips through every provider shape', () => {
  const conversation = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Weather in Rome?' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Rome' } }] },
    { role: 'tool', results: [{ callId: 'call_1', name: 'get_weather', envelope: { ok: true, data: { tempC: 21 } } }] },
    { role: 'assistant', content: 'It is 21°C.' },
  ]
  for (const name of ['openai_chat', 'openai_responses', 'anthropic', 'gemini']) {
    const p = new Provider(name)
    const back = p.parseMessages(p.messages(conversation))
    const tool = back.find((m) => m.role === 'tool')
    assert.deepEqual(tool.results[0].envelope, { ok: true, data: { tempC: 21 } }, name)
    const call = back.find((m) => m.role === 'assistant' && m.toolCalls?.length).toolCalls[0]
    assert.equal(call.name, 'get_weather', name)
    assert.equal(back.at(-1).content, 'It is 21°C.', name)
  }
  const body = Provider.anthropic().request({ model: 'claude', messages: conversation, tools: engine().specs(), toolChoice: 'required' })
  assert.equal(body.system, 'Be brief.')
  assert.equal(body.max_tokens, 4096)
  assert.equal(body.tools.length, 2)
})

test('bad bodies are ProviderErrors; cut-off calls never run; strict nulls are dropped', () => {
  assert.throws(() => Provider.openaiChat().parseResponse({ nope: true }), ProviderError)
  assert.throws(() => Provider.anthropic().parseResponse([]), (e) => e instanceof ProviderError && /Anthropic/.test(e.message))
  const cut = {
    content: '',
    toolCalls: [
      { id: 'a', name: 'get_weather', arguments: '{"city":"Rome"}' },
      { id: 'b', name: 'get_weather', arguments: '{"city":"Pa', incomplete: true },
    ],
    finishReason: 'length',
  }
  const { calls, refused } = ModelTurn.intoBatch(cut)
  assert.deepEqual(calls.map((c) => c.id), ['a'])
  assert.equal(refused[0].callId, 'b')
  assert.equal(refused[0].envelope.error.code, 'incomplete_arguments')
  const turn = { content: '', toolCalls: [{ id: 'a', name: 'get_weather', arguments: '{"city":"Rome","unit":null}' }], finishReason: 'tool_calls' }
  assert.deepEqual(ModelTurn.dropStrictNulls(turn, engine().specs()).toolCalls[0].arguments, { city: 'Rome' })
})

test('the JSON protocol: schema, prompt, repaired plans with dependencies, one results message', async () => {
  const e = engine()
  const specs = e.specs()
  const jp = new JsonProtocol({ shape: 'flat', maxCalls: 3 })
  const schema = jp.responseSchema(specs)
  assert.deepEqual(schema.properties.toolCalls.items.properties.tool.enum, ['get_weather', 'fail'])
  assert.match(jp.prompt(specs), /get_weather/)
  const plan = jp.parse('```json\n{"toolCalls": [{"id": "w", "tool": "get_weather", "params": {"city": "Oslo"}}, {"tool": "fail", "params": {}, "dependsOn": ["w"]}], "reasoning": "check"')
  assert.equal(plan.repaired, true)
  assert.equal(plan.reasoning, 'check')
  assert.deepEqual(plan.calls[1].dependsOn, ['w'])
  assert.throws(() => jp.parse('I think you should call get_weather.'), (err) => err instanceof ToolError && err.code === 'malformed_arguments')
  const batch = await e.run(plan.calls)
  const text = jp.formatResults(batch)
  assert.match(text, /"tool":"get_weather"/)
  assert.match(text, /"code":"not_found"/)
})

test('tool results go back for batches holding pending approvals and pending client calls', async () => {
  const e = new Engine({ approvalRules: { minRisk: 'high' }, stateStore: 'memory' })
  e.register('wire', { inputSchema: { type: 'object' }, execute: () => 'wired' }, { risk: 'high' })
  e.register('locate', { description: 'Runs on the client.', inputSchema: { type: 'object' } })
  const out = await e.run([{ id: 'w1', tool: 'wire', arguments: {} }, { id: 'l1', tool: 'locate', arguments: {} }])
  assert.equal(out.results[0].status, 'pending_approval')
  assert.equal(typeof out.results[0].approval.expiresAtMs, 'number')
  for (const p of [Provider.openaiChat(), Provider.openaiResponses(), Provider.anthropic(), Provider.gemini()]) {
    const back = JSON.stringify(p.toolResults(out))
    assert.match(back, /pending_approval/)
    assert.match(back, /pending_external/)
  }
})

test('every spelling of a provider names the same one', () => {
  for (const [alias, name] of [['openai', 'openai_chat'], ['openaiChat', 'openai_chat'], ['openai_compatible', 'openai_chat'], ['openaiResponses', 'openai_responses'], ['gemini', 'gemini']]) {
    assert.equal(new Provider(alias).name, name)
  }
})
