// The model: OpenAI's Chat Completions (`OPENAI_API_KEY`), or offline a scripted stand-in
// that reads the conversation and answers in the same wire format, so the loop in
// assistant.mjs runs unchanged either way.

/** A Chat Completions call over `fetch`. */
export function openaiChat(apiKey, model = 'gpt-4o-mini') {
  return async (body) => {
    const response = await fetch('https://api.openai.com/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, model }),
    })
    if (!response.ok) throw new Error(`OpenAI answered ${response.status}: ${await response.text()}`)
    return response.json()
  }
}

/** The scripted stand-in: a tool call for a request it recognises, then a summary of the
 * results in the user's words. `directory` maps first names to user ids (what the model
 * learned from get_team_members). */
export function scriptedChat(directory) {
  let calls = 0
  const call = (name, args) => ({ id: `call_${++calls}`, type: 'function', function: { name, arguments: JSON.stringify(args) } })
  return async (body) => {
    const last = body.messages.at(-1)
    if (last.role === 'tool') return reply(summary(body.messages))
    const text = last.content
    let m
    if ((m = text.match(/find files about (\w+)/i))) return toolCalls([call('search_files', { query: m[1] })])
    if ((m = text.match(/search the web for (.+)/i))) return toolCalls([call('search_web', { query: m[1] })])
    if ((m = text.match(/email (\S+@\S+) about (.+)/i))) {
      return toolCalls([call('send_email', { to: [m[1]], subject: m[2], body: `Hi,\n\nabout ${m[2]}.\n` })])
    }
    if ((m = text.match(/relay to (\w+): (.+)/i))) {
      return toolCalls([call('relay_message', { userId: directory[m[1].toLowerCase()] ?? m[1], message: m[2] })])
    }
    if ((m = text.match(/upload (\S+)/i))) {
      const content = Buffer.from(`Notes from ${m[1]}: renewal at risk, call the client.`).toString('base64')
      return toolCalls([call('upload_file', { filename: m[1], content, contentType: 'text/plain' })])
    }
    if (/who is in my team/i.test(text)) return toolCalls([call('get_team_members', {})])
    return reply('How can I help? I can search files, send email, relay messages and upload files.')
  }
}

/** What the results since the user's last message say, in words. */
function summary(messages) {
  const start = messages.findLastIndex((m) => m.role === 'user')
  return messages
    .slice(start)
    .filter((m) => m.role === 'tool')
    .map((m) => describe(JSON.parse(m.content)))
    .join(' ')
}

function describe(result) {
  if (result.error) {
    const why = result.details.disabled_by ? ` (switched off at ${result.details.disabled_by} level)` : ''
    return result.errorType === 'permission_denied' ? `I'm not allowed to do that${why}: ${result.message}` : `That failed: ${result.message}`
  }
  if (result.status === 'pending_confirmation') return 'The email is ready: shall I send it? (yes / always)'
  if (result.status === 'processing') return 'Uploaded; indexing runs in the background.'
  if (result.status === 'sent') return 'Email sent.'
  if (result.delivered) return 'Message delivered.'
  if (Array.isArray(result)) return result.length ? `Found: ${result.map((r) => r.filename ?? r.name).join(', ')}.` : 'Nothing found.'
  return JSON.stringify(result)
}

function toolCalls(toolCalls) {
  return { object: 'chat.completion', choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: toolCalls } }] }
}

function reply(content) {
  return { object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }] }
}
