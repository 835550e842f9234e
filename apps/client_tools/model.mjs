// The model: a scripted stand-in offline (a tool call for a question it recognises, then an
// answer from the result), or OpenAI's Chat Completions with OPENAI_API_KEY.
import { HttpModel, Model } from 'tooljig'

/** The model for a server: OpenAI when a key is set, else the scripted one. */
export function model() {
  return process.env.OPENAI_API_KEY ? HttpModel.openaiCompatible('gpt-4o-mini') : scripted()
}

/** Answers "What is A + B?" with the client's `add` tool and "Summarise NAME" with its
 * `readFile` tool, then answers from the result. */
export function scripted() {
  return Model.fromFunction((request) => {
    const last = request.messages.at(-1)
    if (last.role === 'tool') {
      const [result] = last.results
      if (!result.envelope.ok) return `The tool failed: ${result.envelope.error.message}`
      const data = result.envelope.data
      return result.name === 'add' ? `It is ${data}.` : `The file says: ${String(data).slice(0, 60)}`
    }
    const text = last.content ?? ''
    let m
    if ((m = text.match(/what is (\d+) \+ (\d+)/i))) {
      return { toolCalls: [{ id: `call_${request.messages.length}`, name: 'add', arguments: { a: Number(m[1]), b: Number(m[2]) } }] }
    }
    if ((m = text.match(/summari[sz]e (\S+)/i))) {
      return { toolCalls: [{ id: `call_${request.messages.length}`, name: 'readFile', arguments: { path: m[1] } }] }
    }
    return 'Ask me a sum, or to summarise a file.'
  }, { name: 'scripted' })
}
