// tooljig: run the tool calls that language models propose. See README.md.
export { Engine } from './engine.mjs'
export { tool } from './tool.mjs'
export { ToolContext } from './context.mjs'
export { ErrorCodes, InvalidArguments, Needs, RegistrationError, ToolError, needs } from './errors.mjs'
export { JsonProtocol, ModelTurn, PROVIDERS, Provider, ProviderError, toStrict } from './providers.mjs'
export { StreamParser, UiMessageStream, parseStream, pipeUiMessageStream, toUiMessageStream, uiMessageStreamResponse } from './stream.mjs'
export { Agent, AgentState, FallbackChain, HttpModel, MODEL_ERROR_KINDS, Model, ModelError, ScriptedModel } from './agent.mjs'
