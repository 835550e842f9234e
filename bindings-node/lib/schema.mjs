// Input and output schemas: a Standard Schema (zod 4, ...) or a plain JSON Schema object.
import { createRequire } from 'node:module'
import { InvalidArguments, RegistrationError } from './errors.mjs'

const require = createRequire(import.meta.url)

/** Whether `s` is a Standard Schema (zod 4, Valibot, ArkType, ...). */
export function isStandardSchema(s) {
  return s !== null && typeof s === 'object' && typeof s['~standard']?.validate === 'function'
}

/**
 * The JSON Schema of a tool's input (`io: 'input'`, so fields with defaults are optional) or
 * output. Standard JSON Schema when the library offers it; else zod's `toJSONSchema`.
 * @param {string} tool
 * @param {'input' | 'output'} io
 * @param {unknown} schema
 */
export function toJsonSchema(tool, io, schema) {
  if (schema === undefined || schema === null) {
    return io === 'input' ? { type: 'object', properties: {} } : undefined
  }
  if (!isStandardSchema(schema)) {
    if (typeof schema === 'object' && !Array.isArray(schema)) return schema
    if (typeof schema === 'boolean') return schema
    throw new RegistrationError('invalid_schema', `tool ${JSON.stringify(tool)}: the ${io} schema must be a zod (Standard) schema or a JSON Schema object`)
  }
  try {
    const convert = schema['~standard'].jsonSchema?.[io]
    let json
    if (typeof convert === 'function') {
      json = convert({ target: 'draft-2020-12' })
    } else if (schema['~standard'].vendor === 'zod') {
      // zod 4 releases before Standard JSON Schema.
      json = require('zod').toJSONSchema(schema, { io, target: 'draft-2020-12' })
    } else {
      throw new Error(`the ${schema['~standard'].vendor} schema offers no JSON Schema export; pass a JSON Schema object`)
    }
    return json
  } catch (e) {
    if (e instanceof RegistrationError) throw e
    throw new RegistrationError('invalid_schema', `tool ${JSON.stringify(tool)}: the ${io} schema cannot be expressed as JSON Schema: ${e?.message ?? e}`, { cause: e })
  }
}

/** Standard Schema issues as the violations the core words into `invalid_arguments`. */
const invalidArguments = (issues) =>
  new InvalidArguments(issues.map((i) => ({ path: (i.path ?? []).map((p) => (typeof p === 'object' ? p.key : p)), message: i.message })))

/**
 * A parser for arguments the core already validated against the JSON Schema: applies the
 * schema's defaults and transforms, and runs what JSON Schema cannot express (refinements).
 * Returns parsed args, a Promise of them (async refinements), or throws `invalid_arguments`.
 */
export function standardParser(schema) {
  const validate = schema['~standard'].validate
  const unwrap = (r) => {
    if (r.issues) throw invalidArguments(r.issues)
    return r.value
  }
  return (args) => {
    const r = validate(args)
    return typeof r?.then === 'function' ? r.then(unwrap) : unwrap(r)
  }
}
