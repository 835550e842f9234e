// Seed 001 on tooljig: a server streams the conversation as a Vercel AI SDK UI message
// stream; the tools run on the client, which posts their results back. Run:
//   bash apps/run.sh client_tools        (or: npm install && node main.mjs, here)
import { fileURLToPath } from 'node:url'
import { ToolClient } from './client.mjs'
import { startServer } from './server.mjs'

/** The client's tools: schemas go to the server, handlers stay here. */
export const tools = {
  add: {
    description: 'Adds two numbers.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    handler: ({ a, b }) => a + b,
  },
  readFile: {
    description: "Reads a file from the user's workspace.",
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    handler: async ({ path }) => {
      await new Promise((resolve) => setTimeout(resolve, 300)) // a slow local read
      return `# ${path}\nQ3 revenue grew 12%; churn fell to 2%.`
    },
  },
}

export async function demo({ log = console.log, keepaliveMs = 100 } = {}) {
  const server = await startServer({ keepaliveMs })
  try {
    const client = new ToolClient(server.url, tools)
    const transcript = []
    for (const text of ['What is 5 + 3?', 'Summarise report.md']) {
      const { message } = await client.send('chat-1', text)
      const parts = message.parts.filter((p) => p.type === 'text' || p.type.startsWith('tool-'))
      transcript.push({ text, message })
      log(`user: ${text}`)
      for (const p of parts) log(p.type === 'text' ? `  assistant: ${p.text}` : `  [${p.type} ${p.state}: ${JSON.stringify(p.input)} → ${JSON.stringify(p.output)}]`)
    }
    log(`server: ${JSON.stringify(server.stats)}`)
    return transcript
  } finally {
    await server.close()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await demo()
