// The assistant's loop in OpenAI's tool-calling format (seed 003, "Tool Execution Flow"): the
// model gets the tools the user may use as OpenAI function specs, its tool calls run as one
// tooljig batch (parallel, every guardrail, audited), and each result goes back as a `tool`
// message in the seed's shape: the data on success, the seed's error object otherwise.
import { Provider } from 'tooljig'

const openai = new Provider('openai_chat')

/** tooljig's error codes as the seed's error types. */
const ERROR_TYPES = {
  permission_denied: 'permission_denied', scopes_missing: 'permission_denied',
  invalid_arguments: 'validation_error', malformed_arguments: 'validation_error',
  incomplete_arguments: 'validation_error', arguments_too_large: 'validation_error',
  not_found: 'resource_not_found', ambiguous: 'resource_not_found', unknown_tool: 'resource_not_found',
  external_api_error: 'external_api_error', timeout: 'external_api_error',
  unavailable: 'external_api_error', rate_limited: 'external_api_error',
}

/** A call's result as the seed's tool result: data, a pending state, or its error object. */
export function seedResult(result) {
  const envelope = result.envelope
  if (envelope.ok) return envelope.data
  if (result.status === 'pending_approval') {
    return { id: result.approval.id, status: 'pending_confirmation', requiresConfirmation: true }
  }
  if (result.status === 'pending_job') return { id: envelope.error.job, status: 'processing' }
  const error = envelope.error ?? { code: 'invalid_arguments', message: `missing: ${Object.keys(envelope.needs).join(', ')}` }
  const { code, message, retryable: _r, ...rest } = error
  return {
    error: true,
    errorType: ERROR_TYPES[code] ?? 'system_error',
    message,
    details: { tool: result.tool, arguments: result.arguments ?? null, code: code.toUpperCase(), ...rest },
  }
}

export class Assistant {
  /**
   * @param {import('tooljig').Engine} engine
   * @param {(body: object) => Promise<object>} complete an OpenAI Chat Completions call:
   *   request body in, response body out (scripted offline, `fetch` with a key)
   */
  constructor(engine, complete) {
    this.engine = engine
    this.complete = complete
    this.conversations = new Map()
    /** Calls waiting for the user's confirmation, by approval id. */
    this.pending = new Map()
  }

  /** One user message; the reply and the tool results the model saw. */
  async chat(user, text) {
    const caller = callerOf(user)
    const messages = this.conversations.get(user.id) ?? [{ role: 'system', content: 'You are the organisation assistant. Use tools; never invent ids.' }]
    messages.push({ role: 'user', content: text })
    const seen = []
    for (let step = 0; step < 5; step++) {
      const tools = openai.tools(this.engine.specs(caller))
      const body = await this.complete({ model: 'gpt-4o-mini', messages, tools })
      const turn = openai.parseResponse(body)
      messages.push(body.choices[0].message)
      if (turn.toolCalls.length === 0) {
        this.conversations.set(user.id, messages)
        return { reply: turn.content, results: seen }
      }
      const out = await this.engine.run(turn.toolCalls.map((c) => ({ id: c.id, tool: c.name, arguments: c.arguments })), { caller })
      for (const result of out.results) {
        const shown = seedResult(result)
        seen.push({ tool: result.tool, result: shown })
        if (result.status === 'pending_approval') this.pending.set(result.approval.id, { runId: out.runId, result, user })
        messages.push({ role: 'tool', tool_call_id: result.callId, content: JSON.stringify(shown) })
      }
    }
    this.conversations.set(user.id, messages)
    return { reply: 'I stopped after five steps.', results: seen }
  }

  /** The user confirms a pending call; with `always`, the next ones like it run without
   * asking (a learned preference). Resumes the run and answers the call's result. */
  async confirm(approvalId, { always = false } = {}) {
    const { runId, result, user } = this.pending.get(approvalId)
    this.pending.delete(approvalId)
    await this.engine.approve(approvalId, {
      argumentsHash: result.approval.argumentsHash,
      approver: callerOf(user),
      remember: always ? { scope: [] } : undefined,
    })
    const out = await this.engine.resume(runId)
    return seedResult(out.results.find((r) => r.callId === result.callId))
  }
}

/** The caller tooljig sees for a signed-in user: principal, departments, roles. */
export function callerOf(user) {
  return { principal: user.id, tenant: 'acme', roles: user.roles, attributes: { departments: user.departments } }
}
