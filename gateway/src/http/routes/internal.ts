/**
 * `GET` and `POST /v1/internal/ship/:partition/:origin`: the receiving end of cross-region
 * shipping ({@link HttpShippingLink} is the sending end). `GET` answers the checkpoint (the local
 * leader's `sv[origin]`); `POST` applies a batch of `origin`'s entries at the local leader,
 * idempotently, and answers the new checkpoint. Only the cluster secret may call them (see
 * `http/auth.ts`). Hidden from the OpenAPI document: clients never call them.
 */
import { CausewayError, MAX_SAFE_COUNTER, checkKey, type Hlc } from '@causeway/core'
import { ErrorReplySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { Type } from 'typebox'
import type { LogEntry } from '../../storage/partition-replica.js'

/** The receiving side of shipping, for one region: its partition leaders. */
export interface ShippingReceiver {
  /** The local leader of `partition`'s `sv[origin]`, read from its store. */
  checkpoint(partition: number, origin: number): Promise<number>
  /** Applies `entries` of `origin` at the local leader of `partition`; the new `sv[origin]`. */
  receive(partition: number, origin: number, entries: readonly LogEntry[]): Promise<number>
}

/** Options of the internal routes. */
export interface InternalRoutesOptions {
  receiver: ShippingReceiver
  /** This region's id (it never receives its own entries). */
  region: number
  regions: number
  partitions: number
  maxKeyBytes: number
  maxValueBytes: number
  /**
   * Most bytes of entries senders put in one request (their `maxBatchBytes`); a single larger
   * entry still fits the body limit.
   * @default 4 MiB
   */
  maxBatchBytes?: number
}

const ParamsSchema = Type.Object({
  partition: Type.Integer({ minimum: 0 }),
  origin: Type.Integer({ minimum: 0 }),
})

const CheckpointSchema = Type.Object({
  checkpoint: Type.Integer({ minimum: 0, description: "the local leader's sv[origin]" }),
})

function internalValidationError(
  errors: FastifySchemaValidationError[],
  part: SchemaErrorDataVar,
): CausewayError {
  const first = errors[0]
  const where = `${part}${first?.instancePath ?? ''}`
  return new CausewayError('INVALID_REQUEST', `${where} ${first?.message ?? 'is invalid'}`)
}

/** The internal shipping routes. */
export const internalRoutes: FastifyPluginAsyncTypebox<InternalRoutesOptions> = async (
  app,
  options,
) => {
  const { receiver, region, regions, partitions, maxKeyBytes, maxValueBytes } = options
  // A sibling set holds at most one sibling per region (DVV sets are bounded by actors).
  const maxSiblingsChars = 2 * regions * (maxValueBytes + 1024)
  // A set write's delta: at most MAX_SET_WRITE_ELEMENTS elements of 1 KiB, with their dots.
  const maxSetDeltaChars = 16 * 1024 * 1024
  // Entries' JSON text is escaped once more inside the body: at most twice as long.
  const bodyLimit =
    (options.maxBatchBytes ?? 4 * 1024 * 1024) +
    2 * (maxKeyBytes + maxValueBytes + maxSiblingsChars + maxSetDeltaChars) +
    65_536
  // Every field of a log entry but its origin (which is in the path): `satisfies` makes the
  // build fail when LogEntry gains a field this endpoint would refuse, so shipping never stalls.
  const entryFields = {
    idx: Type.Integer({ minimum: 1, maximum: MAX_SAFE_COUNTER }),
    key: Type.String({ minLength: 1, maxLength: maxKeyBytes }),
    value: Type.Optional(Type.String({ maxLength: maxValueBytes })),
    ts: Type.String({ pattern: '^[0-9a-f]{16}$' }),
    at: Type.Number(),
    // A write in a siblings namespace: the origin's sibling set of the key, as text.
    siblings: Type.Optional(Type.String({ maxLength: maxSiblingsChars })),
    // A set write: the delta the origin planned, as JSON text.
    setDelta: Type.Optional(Type.String({ maxLength: maxSetDeltaChars })),
  } satisfies Record<keyof Omit<LogEntry, 'origin'>, unknown>
  const EntrySchema = Type.Object(entryFields, { additionalProperties: false })
  const BodySchema = Type.Object(
    { entries: Type.Array(EntrySchema, { minItems: 1, maxItems: 100_000 }) },
    { additionalProperties: false },
  )

  const check = (partition: number, origin: number): void => {
    if (partition >= partitions)
      throw new CausewayError('INVALID_REQUEST', `no partition ${partition} (${partitions})`)
    if (origin >= regions) throw new CausewayError('INVALID_REQUEST', `no region ${origin}`)
    if (origin === region)
      throw new CausewayError(
        'INVALID_REQUEST',
        `region ${region} does not receive its own entries`,
      )
  }
  const common = {
    // Gateways call these, never pages: no CORS headers for any origin (see http/cors.ts); other
    // regions' shipping is never slowed down by clients' traffic.
    config: { operation: 'ship', cors: false as const, rateLimit: false as const },
    schemaErrorFormatter: internalValidationError,
  }
  const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }

  app.get(
    '/v1/internal/ship/:partition/:origin',
    {
      ...common,
      schema: {
        hide: true,
        params: ParamsSchema,
        response: { 200: CheckpointSchema, ...errors },
      },
    },
    async (request) => {
      const { partition, origin } = request.params
      check(partition, origin)
      return { checkpoint: await receiver.checkpoint(partition, origin) }
    },
  )

  app.post(
    '/v1/internal/ship/:partition/:origin',
    {
      ...common,
      bodyLimit,
      schema: {
        hide: true,
        params: ParamsSchema,
        body: BodySchema,
        response: { 200: CheckpointSchema, ...errors },
      },
    },
    async (request) => {
      const { partition, origin } = request.params
      check(partition, origin)
      const entries: LogEntry[] = request.body.entries.map((e) => {
        checkKey(e.key, maxKeyBytes)
        return { ...e, origin, ts: e.ts as Hlc }
      })
      return { checkpoint: await receiver.receive(partition, origin, entries) }
    },
  )
}
