// Idiomatic use of the providers, streams and agent types; compiled by types.test.mjs.
import { Agent, AgentState, Engine, FallbackChain, HttpModel, Model, ModelError, ModelTurn, Provider, ScriptedModel, StreamParser, UiMessageStream, type RunOutcome, type StreamEvent } from '../../lib/index.mjs'

const engine = new Engine()
const specs = engine.specs()
const provider = Provider.openaiChat({ strict: true })
const turn = provider.parseResponse({})
const { calls, refused } = ModelTurn.intoBatch(turn)
void refused
const batch = await engine.run(calls)
const appended: unknown[] = provider.toolResults(batch)
void appended
void provider.tools(specs, false)

const parser = new StreamParser('anthropic')
const events: StreamEvent[] = parser.push(new Uint8Array())
const { turn: last } = parser.finish()
void events
void last.toolCalls.map((c) => c.id)

const model = Model.fromFunction(async (request, emit) => {
  emit({ type: 'text_delta', delta: 'hi' })
  if (request.toolChoice === 'none') throw new ModelError('rate_limited', 'later', { retryAfterMs: 100 })
  return { content: 'hello' }
})
const chain = new FallbackChain([model, HttpModel.openaiCompatible('gpt-4o-mini'), new ScriptedModel(['ok'])], { threshold: 3 })
const agent = new Agent(engine, chain, { limits: { maxSteps: 4 }, mode: 'act_first' })
const state = new AgentState('hello')
const run = agent.run(state, { caller: { principal: 'u1' } })
const ui = new UiMessageStream('m1')
for await (const e of run) ui.encode(e)
const out: RunOutcome = await run
if (out.status.status === 'finished') console.log(out.status.reason, out.counters.steps)
const restored = AgentState.fromJSON(JSON.stringify(state))
await agent.resumeWithResults(restored, [{ callId: 'c1', tool: 't', envelope: { ok: true, data: 1 } }]).outcome
