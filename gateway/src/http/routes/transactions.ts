/**
 * `POST /v1/tx/read` and `POST /v1/tx/commit`: transactions (Nami) over HTTP. The routes validate
 * (`tx-request.ts`) and call the region's transaction service; the service picks the snapshot,
 * appends the commit to the region's transaction log and waits for its outcome.
 */
import { CausewayError, HEADER_DT, HEADER_OP_REPLAYED, type TxCommitReply } from '@causeway/core'
import {
  ErrorReplySchema,
  TxCommitBodySchema,
  TxCommitQuerySchema,
  TxCommitReplySchema,
  TxReadBodySchema,
  TxReadQuerySchema,
  TxReadReplySchema,
} from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { Type } from 'typebox'
import type { ClusterService } from '../../cluster/cluster-service.js'
import type {
  TransactionService,
  TxReadResult,
} from '../../cluster/transactions/transaction-service.js'
import { validationError } from '../errors.js'
import { DT_HEADER } from '../header-schemas.js'
import { withTimeoutMaximum } from '../query-limits.js'
import { parseTxCommit, parseTxRead, txBodyLimit } from '../tx-request.js'

/** Options of the transaction routes. */
export interface TransactionRoutesOptions {
  service: ClusterService
  transactions: TransactionService
}

const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }

/** A body field that breaks the schema, as the code of what it holds. */
function txValidationError(
  errors: FastifySchemaValidationError[],
  part: SchemaErrorDataVar,
): CausewayError {
  const first = errors[0]
  if (part !== 'body' || first === undefined) return validationError(errors, part)
  const path = first.instancePath
  const why = `${path === '' ? 'the body' : path.slice(1)} ${first.message ?? 'is invalid'}`
  // A key of `after` that is not a partition number (`propertyNames`, issue 23.3).
  const named = (first as { propertyName?: string }).propertyName
  if (path === '/after' && named !== undefined)
    return new CausewayError(
      'INVALID_VECTOR',
      `after is keyed by partition number; ${JSON.stringify(named)} is not one`,
      { field: `after.${named}` },
    )
  if (first.keyword === 'additionalProperties') {
    const field = String(first.params['additionalProperty'] ?? '')
    return new CausewayError('INVALID_REQUEST', `unknown body field ${JSON.stringify(field)}`, {
      field,
    })
  }
  if (path.startsWith('/reads')) return new CausewayError('INVALID_READ_SET', why)
  if (path.startsWith('/keys') || /^\/writes\/[0-9]+\/key$/.test(path))
    return new CausewayError('INVALID_KEY', why)
  if (path.startsWith('/after')) return new CausewayError('INVALID_VECTOR', why)
  if (path.startsWith('/id')) return new CausewayError('INVALID_OP_ID', why)
  return new CausewayError('INVALID_REQUEST', why)
}

/** The JSON text of a read's reply, the stored value texts spliced in as they are. */
function readReplyJson(result: TxReadResult, region: number): string {
  const items = result.items.map((item) => {
    const v = item.version
    let text = `{"key":${JSON.stringify(item.key)},"found":${v !== undefined && !v.deleted},"tid":${v?.tid ?? 0}`
    if (v !== undefined) {
      text += `,"ts":"${v.ts}","dc":${v.dc},"idx":${item.idx ?? 0}`
      if (!v.deleted) text += `,"value":${v.value!}`
    }
    return `${text},"p":${item.p},"epoch":${item.epoch}}`
  })
  return `{"snapshot":${result.snapshot},"region":${region},"items":[${items.join(',')}]}`
}

/** The transaction routes. */
export const transactionRoutes: FastifyPluginAsyncTypebox<TransactionRoutesOptions> = async (
  app,
  { service, transactions },
) => {
  const shape = service.shape()
  const bodyLimit = txBodyLimit(shape)

  app.post(
    '/v1/tx/read',
    {
      config: { operation: 'txRead' },
      bodyLimit,
      schemaErrorFormatter: txValidationError,
      schema: {
        summary: 'Read keys at a snapshot of the region’s transaction log',
        description:
          'Without `snapshot`, the region picks the newest it has applied, at least `minTid` and covering the session vectors in `after`, and answers it: send it with every later read and the commit of the transaction. Keys of transactional namespaces only; served by the partition leaders.',
        operationId: 'txRead',
        tags: ['transactions'],
        querystring: withTimeoutMaximum(TxReadQuerySchema, shape.limits.maxTimeoutMs),
        body: TxReadBodySchema,
        response: { 200: TxReadReplySchema, ...errors },
      },
    },
    async (request, reply) => {
      const read = parseTxRead(request, request.body, request.query.timeoutMs, shape)
      const result = await transactions.read(read)
      return reply
        .type('application/json; charset=utf-8')
        .send(readReplyJson(result, service.region) as never)
    },
  )

  app.post(
    '/v1/tx/commit',
    {
      config: { operation: 'txCommit' },
      bodyLimit,
      schemaErrorFormatter: txValidationError,
      schema: {
        summary: 'Commit a transaction',
        description:
          'Appended to the region’s transaction log (its position is the `tid`) and decided in log order: `applied` when each read names the version its key still has just before the commit’s tid (no write to the key since the version read), else `conflict` (nothing written; start again); a read naming a tid that made no version of its key at `snapshot` is INVALID_READ_SET. Needs write access, even with no writes. With an `id`, a commit sent again is decided once and answered the same (`replayed`); the same id with another body is OP_ID_REUSED.',
        operationId: 'txCommit',
        tags: ['transactions'],
        querystring: withTimeoutMaximum(TxCommitQuerySchema, shape.limits.maxTimeoutMs),
        headers: Type.Object({ [HEADER_DT]: Type.Optional(DT_HEADER) }),
        body: TxCommitBodySchema,
        response: { 200: TxCommitReplySchema, ...errors },
      },
    },
    async (request, reply): Promise<TxCommitReply> => {
      const commit = parseTxCommit(request, request.body, request.query, request.headers, shape)
      const result = await transactions.commit(commit)
      if (result.replayed === true) reply.header(HEADER_OP_REPLAYED, '1')
      const body: TxCommitReply = {
        tid: result.tid,
        outcome: result.outcome,
        region: service.region,
        ts: result.ts,
      }
      if (result.outcome === 'applied')
        body.writes = result.parts.map(({ p, idx, epoch }) => ({
          p,
          dc: service.region,
          idx,
          epoch,
        }))
      if (result.replayed === true) body.replayed = true
      return body
    },
  )
}
