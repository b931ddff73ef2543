/**
 * Every error the gateway answers with, in one place: Causeway errors thrown by the routes or the
 * cluster service keep their code; Fastify's own errors (schema validation, body parsing, bad
 * URLs, unknown routes) are mapped to the stable codes of `@causeway/core`; anything else is a
 * bug, logged and answered as `INTERNAL`.
 */
import { CausewayError, type ErrorBody } from '@causeway/core'
import type {
  FastifyError,
  FastifyReply,
  FastifyRequest,
  FastifySchemaValidationError,
} from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import type { AllowedMethods } from './allowed-methods.js'

const KV_PREFIX = '/v1/kv/'

function isKvPath(url: string): boolean {
  return url.startsWith(KV_PREFIX)
}

// A set's name is a key too (it picks the set's partition), with the same limits and codes.
function isKeyPath(url: string): boolean {
  return isKvPath(url) || url.startsWith('/v1/sets/')
}

/** The query fields whose bad values are an unknown level, and those that are another option. */
const LEVEL_FIELDS = new Set(['level'])

function fieldOf(error: FastifySchemaValidationError): string {
  const additional = error.params['additionalProperty']
  if (error.keyword === 'additionalProperties' && typeof additional === 'string') return additional
  const missing = error.params['missingProperty']
  if (error.keyword === 'required' && typeof missing === 'string') return missing
  // `/timeoutMs` or `/level/0` (a repeated query field): the first segment names the field.
  return error.instancePath.split('/')[1] ?? ''
}

/**
 * Fastify's `schemaErrorFormatter`: turns the first schema violation of a request part into the
 * Causeway error its field calls for, so a client learns which input was wrong.
 */
export function validationError(
  errors: FastifySchemaValidationError[],
  part: SchemaErrorDataVar,
): CausewayError {
  const first = errors[0]
  if (first === undefined) return new CausewayError('INVALID_REQUEST', `invalid ${part}`)
  const field = fieldOf(first)
  const what = first.message ?? 'is invalid'
  switch (part) {
    case 'querystring': {
      if (first.keyword === 'additionalProperties') {
        const message = `unknown query option ${JSON.stringify(field)}`
        return new CausewayError('INVALID_OPTION', message, { option: field })
      }
      // A change feed's cursor that is not even base64url is a bad cursor like any other.
      if (field === 'since')
        return new CausewayError('INVALID_CURSOR', 'since must be a cursor: an event id of a feed')
      const code = LEVEL_FIELDS.has(field) ? 'INVALID_LEVEL' : 'INVALID_OPTION'
      return new CausewayError(code, describeBadValue(field, errors, what), {
        option: field,
        ...allowed(errors),
      })
    }
    case 'body':
      if (first.keyword === 'additionalProperties') {
        return new CausewayError('INVALID_REQUEST', `unknown body field ${JSON.stringify(field)}`, {
          field,
        })
      }
      // A missing body, a body that is not an object, or an object without `value`.
      return new CausewayError(
        'INVALID_VALUE',
        'the body must be a JSON object { "value": <any JSON> }',
      )
    case 'headers':
      if (field === 'causeway-dt') {
        return new CausewayError(
          'INVALID_HLC',
          'causeway-dt must be an HLC: 16 lowercase hex digits',
        )
      }
      if (field === 'causeway-after')
        return new CausewayError('INVALID_VECTOR', `causeway-after ${what}`)
      if (field === 'causeway-clock')
        return new CausewayError(
          'INVALID_VECTOR',
          'causeway-clock must be a vector clock: one HLC (16 lowercase hex digits) or 0 per region, comma-separated in region order',
        )
      if (field === 'causeway-context')
        return new CausewayError(
          'INVALID_CONTEXT',
          'causeway-context must be a context from a read: base64url, at most 4 KiB decoded',
        )
      if (field === 'causeway-op-id')
        return new CausewayError(
          'INVALID_OP_ID',
          'causeway-op-id must be <client>.<seq>: 8 to 64 of A-Z a-z 0-9 _ -, a dot, a decimal integer from 1',
        )
      return new CausewayError('INVALID_REQUEST', `header ${field} ${what}`)
    case 'params':
      return new CausewayError('INVALID_KEY', `key ${what}`)
    default:
      return new CausewayError('INVALID_REQUEST', `${part} ${what}`)
  }
}

interface VerboseError extends FastifySchemaValidationError {
  // Present because the gateway's Ajv runs with `verbose: true`.
  data?: unknown
}

// Levels and options are `enum`s in the core schemas; name the values that would have been
// accepted.
function allowed(errors: FastifySchemaValidationError[]): { allowed?: unknown[]; got?: unknown } {
  for (const error of errors as VerboseError[]) {
    const values = error.keyword === 'enum' ? error.params['allowedValues'] : undefined
    if (Array.isArray(values)) return { allowed: values, got: error.data }
  }
  return {}
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 64 ? `${text.slice(0, 61)}...` : text
}

function describeBadValue(
  field: string,
  errors: FastifySchemaValidationError[],
  what: string,
): string {
  const { allowed: values, got } = allowed(errors)
  if (values !== undefined)
    return `${field} must be one of ${values.join(', ')} (got ${shown(got)})`
  const data = (errors[0] as VerboseError | undefined)?.data
  return data === undefined ? `${field} ${what}` : `${field} ${what} (got ${shown(data)})`
}

function isFastifyError(error: unknown): error is FastifyError {
  return error instanceof Error && typeof (error as Partial<FastifyError>).code === 'string'
}

/**
 * The Causeway error a thrown value stands for, or `undefined` when it is none we know: then the
 * request hit a bug.
 */
export function toCausewayError(error: unknown, url: string): CausewayError | undefined {
  if (error instanceof CausewayError) return error
  if (!isFastifyError(error)) return undefined
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return url.startsWith('/v1/tx/')
        ? new CausewayError(
            'TRANSACTION_TOO_LARGE',
            'the request body is larger than a transaction may be (limits.maxTxBytes, maxTxKeys)',
          )
        : new CausewayError(
            'VALUE_TOO_LARGE',
            'the request body is larger than the value limit allows',
          )
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new CausewayError('INVALID_JSON', 'the request body is not valid JSON')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
    case 'FST_ERR_CTP_EMPTY_TYPE':
      return new CausewayError(
        'UNSUPPORTED_MEDIA_TYPE',
        'the request body must be application/json',
      )
    case 'FST_ERR_BAD_URL':
      return isKeyPath(url)
        ? new CausewayError('INVALID_KEY', 'the key is not valid percent-encoded UTF-8')
        : new CausewayError('INVALID_REQUEST', 'the URL is not valid percent-encoded UTF-8')
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return isKeyPath(url)
        ? new CausewayError('KEY_TOO_LARGE', 'the key is longer than the key limit allows')
        : new CausewayError('INVALID_REQUEST', 'a path parameter is too long')
  }
  // Other client errors Fastify detects (a bad content-length, an aborted body, ...).
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) return new CausewayError('INVALID_REQUEST', error.message)
  return undefined
}

function send(reply: FastifyReply, error: CausewayError): FastifyReply {
  const body: ErrorBody = error.toBody()
  return reply.code(error.status).type('application/json; charset=utf-8').send(body)
}

/** The gateway's error handler: a stable code for every error, and never a crash. */
export function handleError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const known = toCausewayError(error, request.url)
  if (known !== undefined) {
    // A quarantined key is reported once by the quarantine registry, not on every read of it.
    if (known.status >= 500 && known.code !== 'VALUE_QUARANTINED')
      request.log.warn({ err: error }, known.message)
    return send(reply, known)
  }
  request.log.error({ err: error }, 'unexpected error')
  return send(
    reply,
    new CausewayError('INTERNAL', 'internal error: the request may or may not have taken effect', {
      requestId: request.id,
    }),
  )
}

/**
 * Fastify's `frameworkErrors`: errors found while routing, before any hook runs (a URL that is
 * not valid percent-encoding, a path parameter over `maxParamLength`).
 */
export function handleFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  void handleError(error, request, reply)
}

/**
 * Fastify's not-found handler, for requests that matched no route: a path some route answers with
 * another method is `METHOD_NOT_ALLOWED` (405, with `Allow`), anything else `NOT_FOUND`. (An empty
 * key, `/v1/kv/` or `/v1/sets//...`, matches its route with `key: ''`, and the route's request
 * parsing refuses it as `INVALID_KEY` like any other bad key.)
 */
export function notFoundHandler(allowed: AllowedMethods) {
  return function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const path = (request.url.split('?', 1)[0] ?? '').slice(0, 256)
    const methods = allowed.at(request.url)
    if (methods.length > 0) {
      reply.header('allow', methods.join(', '))
      return send(
        reply,
        new CausewayError(
          'METHOD_NOT_ALLOWED',
          `${request.method} is not allowed on ${path}; allowed: ${methods.join(', ')}`,
          { method: request.method, path, allowed: methods },
        ),
      )
    }
    const hint = isKvPath(path) ? ' (a key containing "/" must be percent-encoded)' : ''
    return send(
      reply,
      new CausewayError('NOT_FOUND', `no route ${request.method} ${path}${hint}`, {
        method: request.method,
        path,
      }),
    )
  }
}
