// `tool({ description, inputSchema, execute })`: a tool definition, as in the Vercel AI SDK.
import { RegistrationError } from './errors.mjs'
/** @import { Execute, InferOutput, JsonSchema, StandardSchemaV1, SuccessEvent, Tool } from './types.mjs' */

/**
 * Declares a tool. Returns the definition unchanged (frozen); it exists for type inference:
 * with a zod schema, `execute` receives the schema's parsed output type.
 * A tool without `execute` is a client-side tool: its calls end as `pending_external`.
 * @template {StandardSchemaV1} S
 * @template [Out=unknown]
 * @overload
 * @param {{description?: string, inputSchema: S, outputSchema?: StandardSchemaV1<any, Out> | JsonSchema, execute?: Execute<InferOutput<S>, Out>, parseArguments?: boolean, toModelOutput?: (output: Out, ctx: import('./context.mjs').ToolContext) => unknown, onSuccess?: (event: SuccessEvent<InferOutput<S>, Out>, ctx: import('./context.mjs').ToolContext) => unknown}} definition
 * @returns {Tool<InferOutput<S>, Out>}
 */
/**
 * Declares a tool whose input is a JSON Schema (or any object when absent).
 * @template [Args=Record<string, unknown>]
 * @template [Out=unknown]
 * @overload
 * @param {{description?: string, inputSchema?: JsonSchema, outputSchema?: JsonSchema, execute?: Execute<Args, Out>, toModelOutput?: (output: Out, ctx: import('./context.mjs').ToolContext) => unknown, onSuccess?: (event: SuccessEvent<Args, Out>, ctx: import('./context.mjs').ToolContext) => unknown}} definition
 * @returns {Tool<Args, Out>}
 */
/**
 * @param {any} definition
 * @returns {any}
 */
export function tool(definition) {
  checkDefinition('(unnamed)', definition)
  return Object.freeze({ ...definition })
}

/** Throws a `RegistrationError` when a tool's hook (`toModelOutput`, `onSuccess`) is not a function. */
/**
 * @param {string} where
 * @param {any} hooks
 */
export function checkHooks(where, hooks) {
  if (hooks === null || typeof hooks !== 'object') {
    throw new RegistrationError('invalid_tool', `${where}: hooks must be an object`)
  }
  for (const name of ['toModelOutput', 'onSuccess']) {
    if (hooks[name] !== undefined && typeof hooks[name] !== 'function') {
      throw new RegistrationError('invalid_tool', `${where}: ${name} must be a function`)
    }
  }
}

/** Throws a `RegistrationError` when `def` is not a usable tool definition. */
export function checkDefinition(name, def) {
  const where = `tool ${JSON.stringify(name)}`
  if (def === null || typeof def !== 'object') {
    throw new RegistrationError('invalid_tool', `${where}: a tool definition must be an object, got ${def === null ? 'null' : typeof def}`)
  }
  if (def.execute !== undefined && typeof def.execute !== 'function') {
    throw new RegistrationError('invalid_tool', `${where}: execute must be a function (or absent, for a client-side tool)`)
  }
  if (def.description !== undefined && typeof def.description !== 'string') {
    throw new RegistrationError('invalid_tool', `${where}: description must be a string`)
  }
  checkHooks(where, def)
  const known = new Set(['description', 'inputSchema', 'outputSchema', 'execute', 'parseArguments', 'toModelOutput', 'onSuccess'])
  for (const key of Object.keys(def)) {
    if (!known.has(key)) {
      throw new RegistrationError('invalid_tool', `${where}: unknown field ${JSON.stringify(key)} in the tool definition (policy goes in register's third argument)`)
    }
  }
}
