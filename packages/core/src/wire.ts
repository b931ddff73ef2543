/**
 * The HTTP protocol between SDK and gateway: JSON Schemas (TypeBox) of every
 * request and reply. The gateway validates and serialises with these schemas and serves them as
 * OpenAPI; the SDK takes its types from them, so the three never disagree.
 */
import { type Static, Type } from 'typebox'
import { DURABILITIES, READ_LEVELS, REPLICA_CHOICES, WRITE_LEVELS } from './consistency.js'
import { ERROR_CODES, type ErrorCode } from './errors.js'
import { CONFLICT_MODES } from './namespaces.js'

const Hlc = Type.String({
  pattern: '^[0-9a-f]{16}$',
  description: 'HLC timestamp: 16 lowercase hex digits',
})
const Index = Type.Integer({ minimum: 0 })
const RegionId = Type.Integer({ minimum: 0, maximum: 254 })
const Vector = Type.Array(Index, { description: 'one entry per region' })

/** `GET /v1/topology`. */
export const TopologySchema = Type.Object({
  cluster: Type.String({ description: 'cluster id; sessions are bound to it' }),
  protocol: Type.Integer(),
  region: RegionId,
  regions: Type.Array(Type.Object({ id: RegionId, name: Type.String(), url: Type.String() })),
  partitions: Type.Integer({ minimum: 1 }),
  replicas: Type.Integer({ minimum: 1 }),
  epochs: Type.Array(Type.Integer({ minimum: 1 }), { description: 'epoch of each partition' }),
  limits: Type.Object({
    maxKeyBytes: Type.Integer(),
    maxValueBytes: Type.Integer(),
    maxSkewMs: Type.Integer(),
    defaultTimeoutMs: Type.Integer(),
    maxTimeoutMs: Type.Integer(),
  }),
  shipping: Type.Union([Type.Literal('fifo'), Type.Literal('causal')]),
  namespaces: Type.Optional(
    Type.Record(
      Type.String(),
      Type.Object({ conflicts: Type.Enum([...CONFLICT_MODES]) }, { additionalProperties: false }),
      {
        description:
          "configured namespaces (the text before a key's first `:`); any other key is last-writer-wins",
      },
    ),
  ),
})
export type Topology = Static<typeof TopologySchema>

/** Key in the path of `/v1/kv/:key`. */
export const KeyParamsSchema = Type.Object({
  key: Type.String({
    minLength: 1,
    description:
      'the key, percent-encoded (a `/` in it must be): not empty, at most `limits.maxKeyBytes` bytes of UTF-8; the text before its first `:` is its namespace',
    examples: ['cart:1'],
  }),
})

/** Query of `GET /v1/kv/:key`. */
export const ReadQuerySchema = Type.Object(
  {
    level: Type.Optional(Type.Enum([...READ_LEVELS])),
    replica: Type.Optional(Type.Enum([...REPLICA_CHOICES])),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
)
export type ReadQuery = Static<typeof ReadQuerySchema>

/** Query of `PUT` and `DELETE /v1/kv/:key`. */
export const WriteQuerySchema = Type.Object(
  {
    level: Type.Optional(Type.Enum([...WRITE_LEVELS])),
    durability: Type.Optional(Type.Enum([...DURABILITIES])),
  },
  { additionalProperties: false },
)
export type WriteQuery = Static<typeof WriteQuerySchema>

/** Body of `PUT /v1/kv/:key`. */
export const PutBodySchema = Type.Object(
  { value: Type.Unknown({ description: 'any JSON value' }) },
  { additionalProperties: false, required: ['value'], examples: [{ value: { items: 2 } }] },
)
export type PutBody = Static<typeof PutBodySchema>

/** One concurrent version of a key in a siblings namespace. */
export const SiblingReplySchema = Type.Object({
  ts: Hlc,
  dc: RegionId,
  idx: Type.Integer({ minimum: 0, description: "serving replica's sv[dc]" }),
  value: Type.Optional(Type.Unknown({ description: 'absent for a tombstone (a delete)' })),
})
export type SiblingReply = Static<typeof SiblingReplySchema>

/** Reply of `GET /v1/kv/:key` (NuKV GetReply). */
export const ReadReplySchema = Type.Object({
  found: Type.Boolean(),
  value: Type.Optional(Type.Unknown()),
  ts: Type.Optional(Hlc),
  dc: Type.Optional(RegionId),
  idx: Type.Optional(Type.Integer({ minimum: 0, description: "serving replica's sv[dc]" })),
  epoch: Type.Integer({ minimum: 1 }),
  region: RegionId,
  replica: Type.Integer({ minimum: 0 }),
  waitedMs: Type.Number({ minimum: 0 }),
  siblings: Type.Optional(
    Type.Array(SiblingReplySchema, {
      description:
        'siblings namespaces only: every concurrent version, tombstones included, by (ts, dc)',
    }),
  ),
  context: Type.Optional(
    Type.String({
      description:
        'siblings namespaces only: the causal context to send back (`causeway-context`) with a write that supersedes these siblings',
    }),
  ),
})
export type ReadReply = Static<typeof ReadReplySchema>

/** Reply of `PUT` and `DELETE /v1/kv/:key` (NuKV PutReply). */
export const WriteReplySchema = Type.Object({
  ts: Hlc,
  dc: RegionId,
  idx: Type.Integer({ minimum: 1 }),
  epoch: Type.Integer({ minimum: 1 }),
  region: RegionId,
  context: Type.Optional(
    Type.String({
      description:
        'siblings namespaces, when exact: the causal context of what the write superseded plus the write itself, for a next write that supersedes it',
    }),
  ),
})
export type WriteReply = Static<typeof WriteReplySchema>

/** One replica in `GET /v1/status`. */
export const ReplicaStatusSchema = Type.Object({
  region: RegionId,
  partition: Type.Integer(),
  replica: Type.Integer(),
  role: Type.Union([Type.Literal('leader'), Type.Literal('follower')]),
  backend: Type.String(),
  epoch: Type.Integer(),
  sv: Vector,
  lag: Type.Object({
    entries: Type.Integer({ minimum: 0, description: 'entries behind the leader of its region' }),
    ms: Type.Number({ minimum: 0, description: 'age of the oldest entry not yet applied' }),
  }),
})

/** One shipping link in `GET /v1/status`. */
export const ShipperStatusSchema = Type.Object({
  partition: Type.Integer(),
  from: RegionId,
  to: RegionId,
  shipped: Type.Integer({ description: 'highest origin idx acknowledged by the destination' }),
  backlog: Type.Integer({ description: 'entries written locally but not yet acknowledged' }),
})

/** `GET /v1/status`. */
export const StatusSchema = Type.Object({
  cluster: Type.String(),
  region: RegionId,
  replicas: Type.Array(ReplicaStatusSchema),
  shippers: Type.Array(ShipperStatusSchema),
})
export type Status = Static<typeof StatusSchema>
export type ReplicaStatus = Static<typeof ReplicaStatusSchema>
export type ShipperStatus = Static<typeof ShipperStatusSchema>

/** Every error reply. */
export const ErrorReplySchema = Type.Object({
  statusCode: Type.Integer(),
  code: Type.Enum(Object.keys(ERROR_CODES) as ErrorCode[]),
  message: Type.String(),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
