/**
 * `GET` and `POST /v1/internal/causal/labels/:origin`: the receiving end of another region's
 * label stream (causal shipping; `replication/causal/http-label-link.ts` is the sending end).
 * `GET` answers where the region stands with `origin`'s labels (received and applied idx per
 * partition, and the stable time it has taken); `POST` takes a label envelope
 * (`@causeway/core`'s `causal-label.ts`), checked whole first, into the region's queue, dropping
 * the labels the region has, and answers the new checkpoint. A label of a partition the cluster
 * does not have, out of order, or of an envelope of another region is `INVALID_LABEL`; a vector
 * of the wrong length `INVALID_VECTOR`; a time far ahead `CLOCK_SKEW_EXCEEDED`; an envelope
 * version this gateway does not read `UNSUPPORTED_LOG_FORMAT`. Only the cluster secret may call
 * them (`http/auth.ts`); hidden from the OpenAPI document. A gateway of a FIFO cluster has no such
 * route (404).
 */
import { CausewayError, MAX_LABELS_PER_ENVELOPE } from '@causeway/core'
import { ErrorReplySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { Type } from 'typebox'
import type { LabelReceiver } from '../../replication/causal/label-link.js'

/** Options of the internal label routes. */
export interface CausalRoutesOptions {
  receiver: LabelReceiver
  /** This region's id (it never receives its own labels). */
  region: number
  regions: number
}

const ParamsSchema = Type.Object({ origin: Type.Integer({ minimum: 0 }) })
const Counters = Type.Array(Type.Integer({ minimum: 0 }))
const CheckpointSchema = Type.Object({
  received: Counters,
  applied: Counters,
  stable: Type.String({ pattern: '^[0-9a-f]{16}$' }),
})

function validationError(errors: FastifySchemaValidationError[], part: SchemaErrorDataVar) {
  const first = errors[0]
  return new CausewayError(
    'INVALID_REQUEST',
    `${part}${first?.instancePath ?? ''} ${first?.message ?? 'is invalid'}`,
  )
}

/** The internal label routes. */
export const causalInternalRoutes: FastifyPluginAsyncTypebox<CausalRoutesOptions> = async (
  app,
  { receiver, region, regions },
) => {
  const check = (origin: number): void => {
    if (origin >= regions)
      throw new CausewayError('INVALID_LABEL', `no region ${origin}`, { field: 'from' })
    if (origin === region)
      throw new CausewayError('INVALID_LABEL', `region ${region} does not receive its own labels`, {
        field: 'from',
      })
  }
  const common = {
    config: { operation: 'labels', cors: false as const, rateLimit: false as const },
    schemaErrorFormatter: validationError,
  }
  const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }

  app.get(
    '/v1/internal/causal/labels/:origin',
    {
      ...common,
      schema: { hide: true, params: ParamsSchema, response: { 200: CheckpointSchema, ...errors } },
    },
    async (request) => {
      check(request.params.origin)
      return receiver.labelCheckpoint(request.params.origin)
    },
  )

  app.post(
    '/v1/internal/causal/labels/:origin',
    {
      ...common,
      // Each label is its partition, idx and one 16-digit HLC per region.
      bodyLimit: 65_536 + MAX_LABELS_PER_ENVELOPE * (64 + 20 * regions),
      schema: {
        hide: true,
        params: ParamsSchema,
        body: Type.Object({}, { additionalProperties: true }),
        response: { 200: CheckpointSchema, ...errors },
      },
    },
    async (request) => {
      const { origin } = request.params
      check(origin)
      const from = (request.body as { from?: unknown }).from
      if (from !== origin)
        throw new CausewayError(
          'INVALID_LABEL',
          `an envelope of region ${JSON.stringify(from)} posted as region ${origin}'s`,
          { field: 'from' },
        )
      return receiver.receiveLabels(request.body)
    },
  )
}
