// The client of seed 001: the tools' handlers live here. It chats through the `ai` package's
// own transport and message reducer (what `useChat` runs), sends the tools' schemas (never
// their handlers) with its messages, runs a handler when its call's input is available in the
// stream, and posts the result to the server's tool-result endpoint, retrying when the
// connection drops (a duplicate post is harmless: the server keeps the first).
import { DefaultChatTransport, readUIMessageStream } from 'ai'

export class ToolClient {
  /**
   * @param {string} url the server
   * @param {Record<string, {description?: string, inputSchema?: object, handler: (args: any) => unknown}>} tools
   * @param {{fetch?: typeof fetch, retries?: number}} [options]
   */
  constructor(url, tools, { fetch = globalThis.fetch, retries = 6 } = {}) {
    this.url = url
    this.tools = tools
    this.fetch = fetch
    this.retries = retries
    this.messages = []
    const schemas = Object.fromEntries(Object.entries(tools).map(([name, t]) => [name, { description: t.description, inputSchema: t.inputSchema }]))
    this.transport = new DefaultChatTransport({ api: `${url}/api/chat`, body: { tools: schemas }, fetch })
  }

  /** Sends `text` in conversation `chatId`; resolves with the assistant's message once the
   * stream ends (tools run on the way) and every chunk seen. */
  async send(chatId, text) {
    this.messages.push({ id: `u${this.messages.length}`, role: 'user', parts: [{ type: 'text', text }] })
    const stream = await this.transport.sendMessages({ chatId, messages: this.messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
    const [forTools, forMessage] = stream.tee()
    const chunks = []
    const running = []
    const watch = (async () => {
      for await (const chunk of forTools) {
        chunks.push(chunk)
        if (chunk.type === 'tool-input-available') running.push(this.#run(chatId, chunk))
      }
    })()
    let message
    const errors = []
    for await (const m of readUIMessageStream({ stream: forMessage, onError: (e) => errors.push(e) })) message = m
    await watch
    await Promise.all(running)
    if (errors.length) throw errors[0]
    this.messages.push(message)
    return { message, chunks }
  }

  /** Runs a call's handler here and posts its result (or its error) to the server. */
  async #run(chatId, { toolCallId, toolName, input }) {
    const tool = this.tools[toolName]
    const body = { chatId, toolCallId, toolName }
    try {
      if (!tool) throw new Error(`no tool ${toolName} on this client`)
      body.result = await tool.handler(input)
    } catch (e) {
      body.error = e?.message ?? String(e)
    }
    return this.#post(body)
  }

  /** Posts a tool result, again after a dropped connection or a server error. */
  async #post(body) {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await this.fetch(`${this.url}/api/tool-result`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        if (response.ok) return response.json()
        if (response.status < 500) throw Object.assign(new Error(`the server refused the result: ${response.status}`), { final: true })
      } catch (e) {
        if (e.final || attempt >= this.retries) throw e
      }
      await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** attempt))
    }
  }
}
