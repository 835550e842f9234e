// tooljig: run the tool calls that language models propose. See README.md.
export { Engine } from './engine.mjs'
export { tool } from './tool.mjs'
export { ToolContext } from './context.mjs'
export { ErrorCodes, Needs, RegistrationError, ToolError, needs } from './errors.mjs'
