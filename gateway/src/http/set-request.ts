/**
 * Turns a `/v1/sets/:name/...` request into a set service call: the set name is checked like a
 * key (it is one: the set lives in the partition of its name), session headers and levels are
 * parsed as for keys (`kv-request.ts`), elements are checked (`INVALID_ELEMENT`), and a body or
 * query the schemas refuse gets the code of the field at fault.
 */
import {
  CausewayError,
  checkElement,
  type ReadLevel,
  type ReplicaChoice,
  type WriteLevel,
  type Durability,
} from '@causeway/core'
import type { FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import type { IncomingHttpHeaders } from 'node:http'
import type { ClusterShape } from '../cluster/cluster-service.js'
import type { SetReadRequest, SetWriteRequest } from '../cluster/region-sets.js'
import { validationError } from './errors.js'
import { parseRead, parseWrite } from './kv-request.js'

/** The query options every set read takes. */
export interface SetReadOptions {
  level?: ReadLevel
  replica?: ReplicaChoice
  timeoutMs?: number
}

/** The query options of a set write. */
export interface SetWriteOptions {
  level?: WriteLevel
  durability?: Durability
  timeoutMs?: number
}

/** A set read of `name`, with the size of its `causeway-after` header (0 when absent). */
export function parseSetRead(
  name: string,
  query: SetReadOptions,
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
): { request: SetReadRequest; afterBytes: number } {
  const options: SetReadOptions = {}
  if (query.level !== undefined) options.level = query.level
  if (query.replica !== undefined) options.replica = query.replica
  if (query.timeoutMs !== undefined) options.timeoutMs = query.timeoutMs
  const { request, afterBytes } = parseRead(name, options, headers, shape, { route: 'sets' })
  const read: SetReadRequest = {
    name,
    partition: request.partition,
    replica: request.replica,
    timeoutMs: request.timeoutMs,
    level: request.level,
  }
  if (request.need !== undefined) read.need = request.need
  return { request: read, afterBytes }
}

/** An add or remove of `elements` in set `name`. */
export function parseSetWrite(
  name: string,
  op: 'add' | 'remove',
  elements: readonly unknown[],
  query: SetWriteOptions,
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
): SetWriteRequest {
  const options: { level?: WriteLevel; durability?: Durability } = {}
  if (query.level !== undefined) options.level = query.level
  if (query.durability !== undefined) options.durability = query.durability
  const write = parseWrite(name, undefined, options, headers, shape, { route: 'sets' })
  const timeoutMs = query.timeoutMs ?? shape.limits.defaultTimeoutMs
  if (timeoutMs > shape.limits.maxTimeoutMs)
    throw new CausewayError(
      'INVALID_OPTION',
      `timeoutMs ${timeoutMs} is above the limit of ${shape.limits.maxTimeoutMs}`,
      { option: 'timeoutMs', limit: shape.limits.maxTimeoutMs },
    )
  const request: SetWriteRequest = {
    name,
    partition: write.partition,
    op,
    elements: elements.map(parseWriteElement),
    dt: write.dt,
    durability: write.durability,
    level: write.level,
    timeoutMs,
  }
  if (write.need !== undefined) request.need = write.need
  return request
}

/** One item of `elements`: a string, or `{ element, ctx? }` and nothing else. */
function parseWriteElement(item: unknown, i: number): { element: string; ctx?: string } {
  const bad = (why: string) =>
    new CausewayError('INVALID_ELEMENT', `elements[${i}]: ${why}`, { index: i })
  let element: unknown = item
  let ctx: unknown
  if (typeof item === 'object' && item !== null && !Array.isArray(item)) {
    const fields = Object.keys(item)
    const unknown = fields.find((f) => f !== 'element' && f !== 'ctx')
    if (unknown !== undefined) throw bad(`unknown field ${JSON.stringify(unknown)}`)
    ;({ element, ctx } = item as { element?: unknown; ctx?: unknown })
    if (ctx !== undefined && typeof ctx !== 'string')
      throw bad('ctx must be a context string from has or scan')
  } else if (typeof item !== 'string') {
    throw bad('must be a string or { "element": string, "ctx"?: string }')
  }
  try {
    checkElement(element)
  } catch (error) {
    throw bad((error as Error).message)
  }
  return ctx === undefined ? { element } : { element, ctx: ctx as string }
}

/**
 * Query field `name` of a request URL, decoded strictly: `+` is a space (as in forms), and a
 * percent-escape that is not UTF-8 is `INVALID_ELEMENT` rather than kept as it was written (the
 * framework's lenient decoding), so an element never silently changes on its way in.
 */
export function queryElement(url: string, name: string): string | undefined {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : ''
  for (const part of query.split('&')) {
    const eq = part.indexOf('=')
    const key = eq === -1 ? part : part.slice(0, eq)
    if (key !== name) continue
    const raw = eq === -1 ? '' : part.slice(eq + 1)
    let element: string
    try {
      element = decodeURIComponent(raw.replaceAll('+', ' '))
    } catch {
      throw new CausewayError('INVALID_ELEMENT', `${name} is not valid percent-encoded UTF-8`)
    }
    checkElement(element)
    return element
  }
  return undefined
}

/**
 * The `element` of a `has`: the framework's decoding of it when that cannot differ from
 * {@link queryElement}'s (a string holding no `%`: the framework keeps an escape it cannot decode
 * as it was written, so a decoded `%` may be one), else the strict decoding of the raw URL.
 * Saves re-splitting the URL on the path most calls take.
 */
export function hasElement(parsed: unknown, url: string): string {
  if (typeof parsed === 'string' && !parsed.includes('%')) {
    checkElement(parsed)
    return parsed
  }
  const element = queryElement(url, 'element')
  if (element === undefined) throw new CausewayError('INVALID_ELEMENT', 'element is missing')
  return element
}

/**
 * The schema error formatter of the set routes: what is wrong with `elements` (or the `element`
 * query field) is `INVALID_ELEMENT`, another body problem `INVALID_REQUEST`; everything else as
 * on every route.
 */
export function setValidationError(
  errors: FastifySchemaValidationError[],
  part: SchemaErrorDataVar,
): CausewayError {
  const first = errors[0]
  const path = first?.instancePath ?? ''
  if (part === 'body') {
    if (first?.keyword === 'additionalProperties' && path === '') {
      const field = String(first.params['additionalProperty'] ?? '')
      return new CausewayError('INVALID_REQUEST', `unknown body field ${JSON.stringify(field)}`, {
        field,
      })
    }
    if (first?.keyword === 'maxItems')
      return new CausewayError(
        'INVALID_ELEMENT',
        `elements ${first.message ?? 'has too many items'}`,
      )
    return new CausewayError(
      'INVALID_ELEMENT',
      'the body must be { "elements": [...] }, each element a string or { "element": string, "ctx"?: string }',
      path === '' ? undefined : { at: path },
    )
  }
  if (part === 'querystring') {
    const field = path.split('/')[1] ?? String(first?.params['missingProperty'] ?? '')
    if (field === 'element')
      return new CausewayError('INVALID_ELEMENT', 'has needs the element query field, given once')
  }
  return validationError(errors, part)
}
