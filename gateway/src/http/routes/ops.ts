/**
 * `POST /v1/ops`: a batch of writes replayed in order (the SDK's outbox after being offline).
 *
 * Each op is checked and applied as its single route would (`PUT`/`DELETE /v1/kv/{key}`,
 * `POST /v1/sets/{name}/add|remove`), with its operation id, one after the other: op n+1 starts
 * once op n is acknowledged, and depends on at least the HLC op n was stamped with, so the stamps
 * of a batch increase in its order whatever partitions it spans (monotonic writes). The first op
 * that fails stops the batch: the reply holds the results before it and its error; nothing after
 * it is applied. Only a malformed envelope (not JSON, not 1 to 500 ops, an unknown kind) is a
 * plain error reply with nothing applied.
 */
import {
  CausewayError,
  HEADER_CONTEXT,
  HEADER_DT,
  MAX_BATCH_OPS,
  OP_KINDS,
  hlcMax,
  isHlc,
  isWriteLevel,
  type Durability,
  type Hlc,
  type OpError,
  type OpResult,
  type OpsReply,
  type WriteLevel,
} from '@causeway/core'
import { issueContext } from '../../cluster/sibling-contexts.js'
import {
  ErrorReplySchema,
  OpsBodySchema,
  OpsQuerySchema,
  OpsReplySchema,
} from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest, FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import type { IncomingHttpHeaders } from 'node:http'
import type { ClusterService, WriteResult } from '../../cluster/cluster-service.js'
import { checkDataScope } from '../data-scope.js'
import { toCausewayError, validationError } from '../errors.js'
import { encodeValue, parseWrite } from '../kv-request.js'
import { opTenantOf, writeOpOf } from '../op-request.js'
import { parseSetWrite } from '../set-request.js'

/** Options of the batch route. */
export interface OpsRouteOptions {
  service: ClusterService
  /** The body limit of one write; a batch may be this many times larger. */
  writeBodyLimit: number
}

const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }
// A batch body may be this many single writes long (each op is still held to the value limit).
const BATCH_BODY_FACTOR = 8

const FIELDS: Record<(typeof OP_KINDS)[number], readonly string[]> = {
  put: ['opId', 'kind', 'key', 'value', 'context', 'level', 'dt'],
  delete: ['opId', 'kind', 'key', 'context', 'level', 'dt'],
  'set-add': ['opId', 'kind', 'name', 'elements', 'level', 'dt'],
  'set-remove': ['opId', 'kind', 'name', 'elements', 'level', 'dt'],
}

/** One op as the envelope schema passed it: an object with a known `kind`. */
type RawOp = { kind: (typeof OP_KINDS)[number] } & Record<string, unknown>

/** The fields every op may carry, checked (the rest is the single route's parsing). */
function checkOpFields(op: RawOp): { level?: WriteLevel; dt?: Hlc; context?: string } {
  const unknown = Object.keys(op).find((f) => !FIELDS[op.kind].includes(f))
  if (unknown !== undefined)
    throw new CausewayError('INVALID_REQUEST', `unknown op field ${JSON.stringify(unknown)}`, {
      field: unknown,
    })
  const out: { level?: WriteLevel; dt?: Hlc; context?: string } = {}
  if (op.level !== undefined) {
    if (!isWriteLevel(op.level))
      throw new CausewayError('INVALID_LEVEL', `unknown write level ${JSON.stringify(op.level)}`)
    out.level = op.level
  }
  if (op.dt !== undefined) {
    if (typeof op.dt !== 'string' || !isHlc(op.dt))
      throw new CausewayError('INVALID_HLC', 'dt must be an HLC: 16 lowercase hex digits')
    out.dt = op.dt
  }
  if (op.context !== undefined) {
    if (typeof op.context !== 'string')
      throw new CausewayError('INVALID_CONTEXT', 'context must be the string of a read')
    out.context = op.context
  }
  return out
}

/** The envelope's schema errors: what is wrong with the batch as a whole (nothing is applied). */
function opsValidationError(
  errors: FastifySchemaValidationError[],
  part: SchemaErrorDataVar,
): CausewayError {
  const first = errors[0]
  if (part !== 'body' || first === undefined) return validationError(errors, part)
  const at = first.instancePath
  const index = /^\/ops\/([0-9]+)/.exec(at)?.[1]
  if (first.keyword === 'additionalProperties' && at === '') {
    const field = String(first.params['additionalProperty'] ?? '')
    return new CausewayError('INVALID_REQUEST', `unknown body field ${JSON.stringify(field)}`, {
      field,
    })
  }
  if (index !== undefined)
    return new CausewayError(
      'INVALID_REQUEST',
      `ops[${index}] must be an object whose kind is one of ${OP_KINDS.join(', ')}; nothing was applied`,
      { index: Number(index) },
    )
  return new CausewayError(
    'INVALID_REQUEST',
    `the body must be { "ops": [...] } with 1 to ${MAX_BATCH_OPS} ops; nothing was applied`,
  )
}

/** The batch route. */
export const opsRoute: FastifyPluginAsyncTypebox<OpsRouteOptions> = async (
  app,
  { service, writeBodyLimit },
) => {
  const shape = service.shape()

  /** Applies op `raw` as its single route would, depending on at least `after`. */
  async function apply(
    request: FastifyRequest,
    raw: RawOp,
    after: Hlc,
    durability: Durability | undefined,
  ): Promise<WriteResult> {
    const fields = checkOpFields(raw)
    const opId = raw.opId
    const headers: IncomingHttpHeaders = {}
    if (fields.dt !== undefined) headers[HEADER_DT] = fields.dt
    if (fields.context !== undefined) headers[HEADER_CONTEXT] = fields.context
    const query: { level?: WriteLevel; durability?: Durability } = {}
    if (fields.level !== undefined) query.level = fields.level
    if (durability !== undefined) query.durability = durability
    if (raw.kind === 'put' || raw.kind === 'delete') {
      if (typeof raw.key !== 'string')
        throw new CausewayError('INVALID_KEY', 'key must be a string')
      let value: { json: string } | undefined
      if (raw.kind === 'put') {
        if (!('value' in raw))
          throw new CausewayError('INVALID_VALUE', 'a put needs a value (any JSON)')
        value = encodeValue(raw.value)
      }
      const write = parseWrite(raw.key, value, query, headers, shape, {
        route: 'a batch of ops (it carries no vector clock)',
        contexts: service,
      })
      checkDataScope(request, write.key, 'write')
      write.op = writeOpOf(
        opId,
        {
          kind: raw.kind,
          key: write.key,
          ...(value === undefined ? {} : { value: value.json }),
          ...(fields.context === undefined ? {} : { context: fields.context }),
        },
        opTenantOf(request),
      )
      write.dt = hlcMax(write.dt, after)
      return service.write(write)
    }
    const sets = service.sets
    if (sets === undefined) throw new CausewayError('NOT_FOUND', 'this gateway serves no sets')
    if (typeof raw.name !== 'string')
      throw new CausewayError('INVALID_KEY', 'a set name must be a string')
    if (!Array.isArray(raw.elements) || raw.elements.length === 0)
      throw new CausewayError('INVALID_ELEMENT', 'elements must be an array of 1 or more elements')
    const op = raw.kind === 'set-add' ? 'add' : 'remove'
    const write = parseSetWrite(raw.name, op, raw.elements, query, headers, shape)
    checkDataScope(request, write.name, 'write')
    write.opId = writeOpOf(
      opId,
      { kind: raw.kind, key: write.name, elements: write.elements },
      opTenantOf(request),
    )
    write.dt = hlcMax(write.dt, after)
    return sets.write(write)
  }

  app.post(
    '/v1/ops',
    {
      config: { operation: 'ops' },
      bodyLimit: writeBodyLimit * BATCH_BODY_FACTOR,
      schemaErrorFormatter: opsValidationError,
      schema: {
        summary: 'Apply a batch of writes in order (offline replay)',
        description:
          'Each op is applied as its single route would, with its operation id, after the one before it is acknowledged; ' +
          'op n+1 depends on at least the HLC op n was stamped with. The first op that fails stops the batch: ' +
          '`results` holds the ops before it and `error` its index and error. A replayed op id answers its first result with `replayed: true`.',
        operationId: 'applyOps',
        tags: ['kv'],
        querystring: OpsQuerySchema,
        body: OpsBodySchema,
        response: { 200: OpsReplySchema, ...errors },
      },
    },
    async (request): Promise<OpsReply> => {
      const ops = request.body.ops as unknown as RawOp[]
      const durability = request.query.durability
      const results: OpResult[] = []
      let after = '0000000000000000' as Hlc
      for (const [index, raw] of ops.entries()) {
        let result: WriteResult
        try {
          result = await apply(request, raw, after, durability)
        } catch (error) {
          const known = toCausewayError(error, request.url)
          if (known === undefined) request.log.error({ err: error }, 'unexpected error in a batch')
          const body = (
            known ??
            new CausewayError('INTERNAL', 'internal error: the op may or may not have taken effect')
          ).toBody()
          const failed: OpError = { index, ...body }
          return { results, error: failed }
        }
        const reply: OpResult = {
          ts: result.ts,
          dc: result.dc,
          idx: result.idx,
          epoch: result.epoch,
          region: service.region,
        }
        // Only puts and deletes (whose key is a string by then) return a context.
        if (result.context !== undefined)
          reply.context = issueContext(service, String(raw.key), result.context)
        if (result.replayed === true) reply.replayed = true
        results.push(reply)
        after = hlcMax(after, result.ts)
      }
      return { results }
    },
  )
}
