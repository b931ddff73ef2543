/**
 * The HTTP protocol of transactions (Nami, `/v1/tx/...`): JSON Schemas (TypeBox) of requests and
 * replies, next to the kv ones in `wire.ts`.
 *
 * A transaction reads at one snapshot of its region's transaction log (`POST /v1/tx/read`, as
 * often as it likes), buffers its writes in the client, and commits them with what it read
 * (`POST /v1/tx/commit`): the commit is appended to the log, its position is its tid, and the
 * region decides it in log order: `applied` if nothing it read changed after its snapshot, else
 * `conflict` (nothing written).
 */
import { type Static, Type } from 'typebox'
import { DURABILITIES } from './consistency.js'

const Hlc = Type.String({
  pattern: '^[0-9a-f]{16}$',
  description: 'HLC timestamp: 16 lowercase hex digits',
})
const RegionId = Type.Integer({ minimum: 0, maximum: 254 })

// A partition number as a record key: no leading zero, at most five digits.
const PARTITION_KEY = '^(0|[1-9][0-9]{0,4})$'

/** Body of `POST /v1/tx/read`. */
export const TxReadBodySchema = Type.Object(
  {
    keys: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description:
        'the keys to read (at most `limits.maxTxKeys`), each of a transactional namespace',
    }),
    snapshot: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'read at this snapshot (the one the transaction’s first read answered); absent: the gateway picks one and answers it',
      }),
    ),
    minTid: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'when the gateway picks the snapshot: at least this tid (the SDK sends the session’s highest tid of this region)',
      }),
    ),
    after: Type.Optional(
      Type.Record(Type.String({ pattern: PARTITION_KEY }), Type.String(), {
        // A pattern-keyed record lets other keys through unless told not to (issue 23.3); said
        // with `propertyNames`, which the OpenAPI document keeps (it turns `patternProperties`
        // into `additionalProperties`, dropping the pattern).
        propertyNames: { pattern: PARTITION_KEY },
        description:
          'the session’s read vector of each partition read, by partition, as `causeway-after` (`epoch@d:idx,...`): the snapshot reflects at least that much',
      }),
    ),
  },
  {
    additionalProperties: false,
    required: ['keys'],
    examples: [{ keys: ['acct:1', 'acct:2'], minTid: 0 }],
  },
)
export type TxReadBody = Static<typeof TxReadBodySchema>

/** Query of `POST /v1/tx/read` and `POST /v1/tx/commit`. */
export const TxReadQuerySchema = Type.Object(
  {
    timeoutMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'how long the region may wait to reach the snapshot (and the session vector)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type TxReadQuery = Static<typeof TxReadQuerySchema>

/** One key of a transactional read. */
export const TxReadItemSchema = Type.Object({
  key: Type.String(),
  found: Type.Boolean(),
  value: Type.Optional(Type.Unknown()),
  tid: Type.Integer({
    minimum: 0,
    description:
      'the tid that wrote the version read (0: never written): send it back in the commit’s read set',
  }),
  ts: Type.Optional(Hlc),
  dc: Type.Optional(RegionId),
  idx: Type.Optional(Type.Integer({ minimum: 0, description: "serving replica's sv[dc]" })),
  p: Type.Integer({ minimum: 0, description: 'the key’s partition' }),
  epoch: Type.Integer({ minimum: 1 }),
})
export type TxReadItem = Static<typeof TxReadItemSchema>

/** Reply of `POST /v1/tx/read`. */
export const TxReadReplySchema = Type.Object(
  {
    snapshot: Type.Integer({ minimum: 0, description: 'the snapshot read at: send it again' }),
    region: RegionId,
    items: Type.Array(TxReadItemSchema, { description: 'one per key, in the order asked' }),
  },
  {
    examples: [
      {
        snapshot: 42,
        region: 0,
        items: [
          {
            key: 'acct:1',
            found: true,
            value: { balance: 10 },
            tid: 40,
            ts: '019b76daa8000000',
            dc: 0,
            idx: 17,
            p: 1,
            epoch: 1,
          },
        ],
      },
    ],
  },
)
export type TxReadReply = Static<typeof TxReadReplySchema>

/** One write of a commit: a value, or a delete (no `value`). */
export const TxWriteSchema = Type.Object(
  {
    key: Type.String({ minLength: 1 }),
    value: Type.Optional(Type.Unknown({ description: 'any JSON value; absent deletes the key' })),
  },
  { additionalProperties: false },
)

/** Body of `POST /v1/tx/commit`. */
export const TxCommitBodySchema = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        // isOpId's grammar, as the causeway-op-id header states it (Schemathesis sent 99 zeros as
        // valid and got INVALID_OP_ID).
        pattern: '^[A-Za-z0-9_-]{8,64}\\.[1-9][0-9]{0,15}$',
        maxLength: 96,
        description:
          'the transaction’s operation id (`<client>.<seq>`, as `causeway-op-id`): a commit sent again with it is decided once and answered the same; with another body it is OP_ID_REUSED; below what the region remembers of its client (per API key), OP_EXPIRED',
      }),
    ),
    snapshot: Type.Integer({ minimum: 0, description: 'the snapshot the reads were made at' }),
    // Each read's shape in the schema, so that the document states it (Schemathesis sent
    // `reads: [{}]` as valid); what no schema can say (a key read twice, a tid after the
    // snapshot, lone surrogates) is still checkReadSet's, INVALID_READ_SET either way.
    reads: Type.Array(
      Type.Array(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 0 })]), {
        minItems: 2,
        maxItems: 2,
        prefixItems: [Type.String({ minLength: 1 }), Type.Integer({ minimum: 0 })],
      }),
      {
        description:
          'the read set: `[key, tid]` for each key read, tid the version’s (as the read answered it), at most the snapshot',
      },
    ),
    writes: Type.Array(TxWriteSchema, { description: 'the buffered writes, one per key' }),
  },
  {
    additionalProperties: false,
    required: ['snapshot', 'reads', 'writes'],
    examples: [
      {
        id: 'bank-7f3a9c21.1',
        snapshot: 0,
        reads: [
          ['acct:1', 0],
          ['acct:2', 0],
        ],
        writes: [
          { key: 'acct:1', value: { balance: -5 } },
          { key: 'acct:2', value: { balance: 5 } },
        ],
      },
    ],
  },
)
export type TxCommitBody = Static<typeof TxCommitBodySchema>

/** Query of `POST /v1/tx/commit`. */
export const TxCommitQuerySchema = Type.Object(
  {
    durability: Type.Optional(Type.Enum([...DURABILITIES])),
    timeoutMs: Type.Optional(
      Type.Integer({ minimum: 0, description: 'how long the commit may wait for its outcome' }),
    ),
  },
  { additionalProperties: false },
)
export type TxCommitQuery = Static<typeof TxCommitQuerySchema>

/** Where an applied transaction's writes went: one per partition written. */
export const TxCommitPartSchema = Type.Object({
  p: Type.Integer({ minimum: 0 }),
  dc: RegionId,
  idx: Type.Integer({ minimum: 1, description: 'the commit entry’s idx: record it as written' }),
  epoch: Type.Integer({ minimum: 1 }),
})
export type TxCommitPart = Static<typeof TxCommitPartSchema>

/** Reply of `POST /v1/tx/commit`. */
export const TxCommitReplySchema = Type.Object(
  {
    tid: Type.Integer({ minimum: 1, description: 'the transaction’s position in the log' }),
    outcome: Type.Union([Type.Literal('applied'), Type.Literal('conflict')]),
    region: RegionId,
    ts: Type.Optional(Hlc),
    writes: Type.Optional(
      Type.Array(TxCommitPartSchema, { description: 'applied: one per partition written' }),
    ),
    replayed: Type.Optional(
      Type.Literal(true, {
        description: 'the id had already been committed: this is its first answer',
      }),
    ),
  },
  {
    examples: [
      {
        tid: 43,
        outcome: 'applied',
        region: 0,
        ts: '019b76daa8000003',
        writes: [{ p: 1, dc: 0, idx: 18, epoch: 1 }],
      },
      { tid: 44, outcome: 'conflict', region: 0 },
    ],
  },
)
export type TxCommitReply = Static<typeof TxCommitReplySchema>
