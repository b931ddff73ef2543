/**
 * `GET` and `POST /v1/internal/ship/:partition/:origin`: the receiving end of cross-region
 * shipping ({@link HttpShippingLink} is the sending end). `GET` answers the checkpoint (the local
 * leader's `sv[origin]`); `POST` takes a shipping envelope of `origin`'s entries (version 1 or 2
 * of `@causeway/core`'s `ship-envelope.ts`, in its JSON form), has the local leader apply it,
 * idempotently, and answers the new checkpoint. An envelope of a version or with an entry kind this
 * gateway does not know is refused with `UNSUPPORTED_LOG_FORMAT` before any other rule is applied
 * to it, and counted (`causeway_shipments_refused_total`). `GET /v1/internal/log/:partition/:origin`
 * answers this region's copy of `origin`'s entries after `after` (a new leader of `origin`
 * recovers them, `replication/region-log.ts`). Only the cluster secret may call them
 * (see `http/auth.ts`). Hidden from the OpenAPI document: clients never call them.
 */
import {
  CausewayError,
  type CommitEntry,
  type DeleteEntry,
  MAX_HISTORY_SPANS,
  MAX_SAFE_COUNTER,
  type PutEntry,
  SHIP_ENVELOPE_VERSIONS,
  type SetOpEntry,
  type ShipEnvelope,
  type SiblingsEntry,
  checkEnvelopeFormat,
  checkKey,
  envelopeFromWire,
} from '@causeway/core'
import { ErrorReplySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { Type } from 'typebox'
import type { ShippingReceiver } from '../../replication/shipping-receiver.js'
import type { TxReceiver } from '../../replication/tx-link.js'

/** What the internal routes count. */
export interface ShippingMetrics {
  /** An envelope refused as of an unknown version (`v`) or entry kind (`kind`). */
  observeShipmentRefused(reason: 'version' | 'kind'): void
  /** An envelope of `origin` refused as disagreeing with what this region holds. */
  observeShipmentDiverged?(origin: number): void
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
  /**
   * Where refused envelopes are counted.
   * @default not counted
   */
  metrics?: ShippingMetrics
  /**
   * The receiving side of transaction shipping (`/v1/internal/tx/:origin`), when the cluster has
   * transactions.
   * @default not served
   */
  transactions?: { receiver: TxReceiver; maxTxBytes: number }
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
  // A commit entry's writes: a transaction's values and keys, escaped once more in the text.
  const maxTxBytes = options.transactions?.maxTxBytes ?? maxValueBytes
  const maxCommitChars = 2 * maxTxBytes + 16 * 1024 * 1024
  // Entries' JSON text is escaped once more inside the body: at most twice as long.
  const bodyLimit =
    (options.maxBatchBytes ?? 4 * 1024 * 1024) +
    2 * (maxKeyBytes + maxValueBytes + maxSiblingsChars + maxSetDeltaChars + maxCommitChars) +
    65_536
  // Every field of each kind of log entry but its origin (the envelope's `from`): `satisfies`
  // makes the build fail when an entry kind gains a field this endpoint would refuse, so shipping
  // never stalls on it.
  const head = {
    idx: Type.Integer({ minimum: 1, maximum: MAX_SAFE_COUNTER }),
    key: Type.String({ minLength: 1, maxLength: maxKeyBytes }),
    ts: Type.String({ pattern: '^[0-9a-f]{16}$' }),
    at: Type.Number(),
  }
  const closed = { additionalProperties: false }
  const EntrySchema = Type.Union([
    Type.Object(
      {
        kind: Type.Literal('put'),
        ...head,
        value: Type.String({ minLength: 1, maxLength: maxValueBytes }),
      } satisfies Record<keyof Omit<PutEntry, 'origin'>, unknown>,
      closed,
    ),
    Type.Object(
      { kind: Type.Literal('delete'), ...head } satisfies Record<
        keyof Omit<DeleteEntry, 'origin'>,
        unknown
      >,
      closed,
    ),
    Type.Object(
      {
        kind: Type.Literal('siblings'),
        ...head,
        // The origin's sibling set of the key, as text.
        siblings: Type.String({ maxLength: maxSiblingsChars }),
      } satisfies Record<keyof Omit<SiblingsEntry, 'origin'>, unknown>,
      closed,
    ),
    Type.Object(
      {
        kind: Type.Literal('set-op'),
        ...head,
        // The delta the origin planned, as JSON text.
        setDelta: Type.String({ maxLength: maxSetDeltaChars }),
      } satisfies Record<keyof Omit<SetOpEntry, 'origin'>, unknown>,
      closed,
    ),
    Type.Object(
      {
        kind: Type.Literal('commit'),
        ...head,
        tid: Type.Integer({ minimum: 1, maximum: MAX_SAFE_COUNTER }),
        // A transaction's writes in the partition, as text (values escaped once more).
        writes: Type.String({ maxLength: maxCommitChars }),
        relay: Type.Optional(
          Type.Array(Type.Integer({ minimum: 0, maximum: MAX_SAFE_COUNTER }), {
            minItems: 3,
            maxItems: 3,
          }),
        ),
      } satisfies Record<keyof Omit<CommitEntry, 'origin'>, unknown>,
      closed,
    ),
  ])
  const counter = Type.Integer({ minimum: 1, maximum: MAX_SAFE_COUNTER })
  const index = Type.Integer({ minimum: 0, maximum: MAX_SAFE_COUNTER })
  const BodySchema = Type.Object(
    {
      v: Type.Union(SHIP_ENVELOPE_VERSIONS.map((v) => Type.Literal(v))),
      from: Type.Integer({ minimum: 0 }),
      epoch: counter,
      // Version 2: the sender's epoch history, [epoch, first, last?] per span (checked whole by
      // the leader, with the rest of the envelope).
      epochs: Type.Optional(
        Type.Array(Type.Array(index, { minItems: 2, maxItems: 3 }), {
          minItems: 1,
          maxItems: MAX_HISTORY_SPANS,
        }),
      ),
      first: counter,
      last: counter,
      entries: Type.Array(EntrySchema, { minItems: 1, maxItems: 100_000 }),
    } satisfies Record<keyof ShipEnvelope, unknown>,
    closed,
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

  // An envelope of another version, or with entries of another kind, is judged by its own rules,
  // which this gateway does not know: refused before the schema of the version it knows runs.
  app.addHook('onError', async (_request, _reply, error) => {
    if (error instanceof CausewayError && error.code === 'UNSUPPORTED_LOG_FORMAT')
      options.metrics?.observeShipmentRefused(error.details?.field === 'v' ? 'version' : 'kind')
    if (error instanceof CausewayError && error.code === 'SHIPPING_DIVERGED') {
      const origin = error.details?.['origin']
      if (typeof origin === 'number') options.metrics?.observeShipmentDiverged?.(origin)
    }
  })

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

  // Another region checking a read vector: how far this region has written (issue 23.6).
  app.get(
    '/v1/internal/written/:partition',
    {
      ...common,
      schema: {
        hide: true,
        params: Type.Object({ partition: Type.Integer({ minimum: 0 }) }),
        response: {
          200: Type.Object({
            written: Type.Integer({ minimum: 0, description: "the local leader's sv[region]" }),
            epoch: Type.Integer({ minimum: 1, description: "the local leader's epoch" }),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const { partition } = request.params
      if (partition >= partitions)
        throw new CausewayError('INVALID_REQUEST', `no partition ${partition} (${partitions})`)
      if (receiver.written === undefined)
        throw new CausewayError('NOT_FOUND', 'this gateway does not say how far it has written')
      return receiver.written(partition)
    },
  )

  // A new leader of `origin` recovering what this region received from the one it replaced.
  app.get(
    '/v1/internal/log/:partition/:origin',
    {
      ...common,
      schema: {
        hide: true,
        params: ParamsSchema,
        querystring: Type.Object(
          {
            after: Type.Integer({ minimum: 0, maximum: MAX_SAFE_COUNTER }),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ entries: Type.Array(Type.Unknown()) }),
          ...errors,
        },
      },
    },
    async (request) => {
      const { partition, origin } = request.params
      check(partition, origin)
      if (receiver.readLog === undefined)
        throw new CausewayError('NOT_FOUND', 'this gateway does not serve its log copies')
      const entries = await receiver.readLog(
        partition,
        origin,
        request.query.after,
        request.query.limit ?? 500,
      )
      return { entries: entries.map(({ origin: _origin, ...shipped }) => shipped) }
    },
  )

  app.post(
    '/v1/internal/ship/:partition/:origin',
    {
      ...common,
      bodyLimit,
      preValidation: async (request) => checkEnvelopeFormat(request.body),
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
      const { body } = request
      if (body.from !== origin)
        throw new CausewayError(
          'INVALID_REQUEST',
          `an envelope of region ${body.from} posted as region ${origin}'s`,
        )
      for (const e of body.entries) checkKey(e.key, maxKeyBytes)
      // The leader checks the whole envelope (AbstractPartitionReplica.receive).
      const envelope = envelopeFromWire(body) as ShipEnvelope
      return { checkpoint: await receiver.receive(partition, envelope) }
    },
  )

  const transactions = options.transactions
  if (transactions === undefined) return
  const OriginSchema = Type.Object({ origin: Type.Integer({ minimum: 0 }) })
  const checkOrigin = (origin: number): void => {
    if (origin >= regions) throw new CausewayError('INVALID_REQUEST', `no region ${origin}`)
    if (origin === region)
      throw new CausewayError('INVALID_REQUEST', `region ${region} does not receive its own`)
  }
  app.get(
    '/v1/internal/tx/:origin/checkpoint',
    {
      ...common,
      schema: { hide: true, params: OriginSchema, response: { 200: CheckpointSchema, ...errors } },
    },
    async (request) => {
      checkOrigin(request.params.origin)
      return { checkpoint: await transactions.receiver.txCheckpoint(request.params.origin) }
    },
  )
  app.post(
    '/v1/internal/tx/:origin',
    {
      ...common,
      // A shipment of transactions, each at most maxTxBytes of values, escaped once more.
      bodyLimit: (options.maxBatchBytes ?? 4 * 1024 * 1024) + 4 * transactions.maxTxBytes + 65_536,
      schema: {
        hide: true,
        params: OriginSchema,
        body: Type.Object({
          v: Type.Integer(),
          from: Type.Integer(),
          units: Type.Array(Type.Unknown()),
        }),
        response: { 200: CheckpointSchema, ...errors },
      },
    },
    async (request) => {
      const { origin } = request.params
      checkOrigin(origin)
      if (request.body.from !== origin)
        throw new CausewayError(
          'INVALID_REQUEST',
          `a shipment of region ${request.body.from} posted as region ${origin}'s`,
        )
      // The whole shipment is checked before anything is appended (checkTxShipment).
      return { checkpoint: await transactions.receiver.receiveTransactions(origin, request.body) }
    },
  )
}
