/**
 * The HTTP protocol between SDK and gateway: JSON Schemas (TypeBox) of every
 * request and reply. The gateway validates and serialises with these schemas and serves them as
 * OpenAPI; the SDK takes its types from them, so the three never disagree.
 */
import { MAX_BATCH_OPS, OP_KINDS } from './op-id.js'
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
    maxTxKeys: Type.Optional(
      Type.Integer({ description: 'most distinct keys a transaction may read and write' }),
    ),
    maxTxBytes: Type.Optional(
      Type.Integer({ description: 'largest sum of a transaction’s written values, bytes of JSON' }),
    ),
  }),
  shipping: Type.Union([Type.Literal('fifo'), Type.Literal('causal')]),
  namespaces: Type.Optional(
    Type.Record(
      Type.String(),
      Type.Object(
        {
          conflicts: Type.Enum([...CONFLICT_MODES]),
          transactions: Type.Optional(
            Type.Literal(true, {
              description: 'its keys are written by transactions only (`/v1/tx`)',
            }),
          ),
          durability: Type.Optional(
            Type.Literal('majority', {
              description:
                'its writes are majority writes, and its reads return only what a majority of replicas holds',
            }),
          ),
        },
        { additionalProperties: false },
      ),
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
  tid: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        'transactional namespaces only: the tid of the region’s transaction log that wrote the version (0: never written)',
    }),
  ),
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
  lagMs: Type.Number({
    minimum: 0,
    description: 'age of the oldest entry not yet acknowledged by the destination, in ms',
  }),
})

/** The quarantine section of `GET /v1/status`: stored values a replica could not decode. */
export const QuarantineStatusSchema = Type.Object({
  quarantined: Type.Integer({
    minimum: 0,
    description: 'keys quarantined now (reads of them fail with VALUE_QUARANTINED)',
  }),
  detected: Type.Integer({ minimum: 0, description: 'keys quarantined since the gateway started' }),
  repaired: Type.Integer({ minimum: 0, description: 'of those, rebuilt from the log since' }),
  skippedEntries: Type.Integer({
    minimum: 0,
    description: 'log entries applied without merging their undecodable sibling set',
  }),
  keys: Type.Array(
    Type.Object({
      partition: Type.Integer({ minimum: 0 }),
      replica: Type.Integer({ minimum: 0 }),
      key: Type.String(),
      kind: Type.Union([Type.Literal('siblings'), Type.Literal('version')]),
      reason: Type.String(),
      since: Type.String({ description: 'when it was quarantined (ISO 8601)' }),
    }),
    { description: 'the keys quarantined now (at most 100 listed)' },
  ),
})
export type QuarantineStatus = Static<typeof QuarantineStatusSchema>

/**
 * The causal shipping section of `GET /v1/status` (clusters with `shipping: 'causal'`): this
 * gateway's replica of the region's stabiliser, its label links when it leads, and the region's
 * receiver.
 */
export const CausalStatusSchema = Type.Object({
  thetaMs: Type.Number({ description: 'how often the stabiliser leader ships stable labels, ms' }),
  deltaMs: Type.Number({
    description: 'how long a partition stays silent before it is asked for a heartbeat, ms',
  }),
  stabiliser: Type.Object({
    replica: Type.String({ description: 'which replica of the region this status is from' }),
    leader: Type.Boolean(),
    leaderSince: Type.Optional(
      Type.String({ description: 'when this replica became leader (ISO 8601)' }),
    ),
    stableTime: Hlc,
    partitionTime: Type.Array(Hlc, { description: 'PartitionTime: one HLC per partition' }),
    pending: Type.Integer({ minimum: 0, description: 'labels not yet stable' }),
    retained: Type.Integer({
      minimum: 0,
      description: 'stable labels kept until every other region has applied them',
    }),
    ordered: Type.Integer({ minimum: 0, description: 'labels ordered since this replica started' }),
  }),
  links: Type.Array(
    Type.Object({
      to: RegionId,
      sent: Type.Integer({ minimum: 0, description: 'labels sent since this replica led' }),
      backlog: Type.Integer({ minimum: 0, description: 'stable labels not yet acknowledged' }),
      applied: Type.Array(Type.Integer({ minimum: 0 }), {
        description: "the destination's applied idx of this region, per partition",
      }),
    }),
    { description: 'the label links to the other regions (only at the leader)' },
  ),
  receiver: Type.Object({
    siteTime: Type.Array(Hlc, {
      description: 'SiteTime: per region, the time up to which its updates are applied here',
    }),
    origins: Type.Array(
      Type.Object({
        origin: RegionId,
        queued: Type.Integer({ minimum: 0, description: 'labels received, not yet applied' }),
        blocked: Type.Optional(
          Type.String({ description: 'why the head of the queue waits: data or dependencies' }),
        ),
      }),
    ),
  }),
})
export type CausalStatus = Static<typeof CausalStatusSchema>

/** One partition's leader in `GET /v1/status`, where leaders fail over (Redis). */
export const LeaderStatusSchema = Type.Object({
  partition: Type.Integer({ minimum: 0 }),
  replica: Type.Integer({ minimum: 0, description: 'the replica that leads (or is taking over)' }),
  state: Type.Union(
    [
      Type.Literal('leading'),
      Type.Literal('claiming'),
      Type.Literal('fenced'),
      Type.Literal('unknown'),
    ],
    {
      description:
        'leading: writes go to it; claiming: a new leader is checked and starts its epoch; fenced: it came back behind its followers and takes no writes; unknown: not known yet',
    },
  ),
  epoch: Type.Integer({ minimum: 1, description: "the region's current epoch of the partition" }),
  note: Type.Optional(Type.String({ description: 'why it does not lead, when it does not' })),
  serves: Type.Optional(
    Type.Boolean({
      description:
        'false while the leader serves nothing (its process does not hold its claim: fenced, claiming or unknown): no read at any level and no write goes to it; reads go to its followers',
    }),
  ),
})

/** A shipping link a receiver found disagreeing with what it holds, in `GET /v1/status`. */
export const DivergenceStatusSchema = Type.Object({
  partition: Type.Integer({ minimum: 0 }),
  origin: RegionId,
  state: Type.Union([Type.Literal('diverged'), Type.Literal('extra')], {
    description:
      "diverged: the origin's envelopes disagree with what this region holds, and are refused until its history agrees; extra: this region holds entries of the origin that the origin lost",
  }),
  note: Type.String(),
})

/** `GET /v1/status`. */
export const StatusSchema = Type.Object({
  cluster: Type.String(),
  region: RegionId,
  replicas: Type.Array(ReplicaStatusSchema),
  shippers: Type.Array(ShipperStatusSchema),
  quarantine: Type.Optional(QuarantineStatusSchema),
  transactions: Type.Optional(
    Type.Object(
      {
        lastTid: Type.Integer({ minimum: 0, description: 'the highest tid appended to the log' }),
        appliedTid: Type.Integer({
          minimum: 0,
          description: 'the highest tid decided and applied: the snapshot watermark',
        }),
      },
      { description: "the region's transaction log (transactional namespaces only)" },
    ),
  ),
  causal: Type.Optional(CausalStatusSchema),
  leaders: Type.Optional(Type.Array(LeaderStatusSchema)),
  divergence: Type.Optional(Type.Array(DivergenceStatusSchema)),
})
export type Status = Static<typeof StatusSchema>
export type ReplicaStatus = Static<typeof ReplicaStatusSchema>
export type ShipperStatus = Static<typeof ShipperStatusSchema>
export type LeaderStatus = Static<typeof LeaderStatusSchema>
export type DivergenceStatus = Static<typeof DivergenceStatusSchema>

/** Every error reply. */
export const ErrorReplySchema = Type.Object({
  statusCode: Type.Integer(),
  code: Type.Enum(Object.keys(ERROR_CODES) as ErrorCode[]),
  message: Type.String(),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})

// ---- Offline-first (issue 14): operation ids, batch replay, change feed ----

const OpIdString = Type.String({
  maxLength: 96,
  description:
    'the operation id: `<client>.<seq>`, client 8 to 64 characters of `[A-Za-z0-9_-]`, seq a decimal integer from 1',
  examples: ['phone-7f3a9c21.42'],
})
const OpLevel = Type.Optional(Type.Enum([...WRITE_LEVELS]))
const OpDt = Type.Optional(
  Type.String({
    description: "the op's HLC dependency (as `causeway-dt`)",
    examples: ['00018f2a3b4c0001'],
  }),
)
const OpContext = Type.Optional(
  Type.String({
    description: 'siblings namespaces: the causal context of a read (as `causeway-context`)',
  }),
)
const OpElements = Type.Array(Type.Unknown(), {
  description:
    'as the body of `/v1/sets/{name}/add|remove`: each a string or { "element": string, "ctx"?: string }',
})

/**
 * One operation of `POST /v1/ops`: a write as its single route takes it, with its operation id.
 * A set remove's elements carry their contexts (`{ element, ctx }`) as the remove route takes them.
 */
export const OpSchema = Type.Union([
  Type.Object(
    {
      opId: OpIdString,
      kind: Type.Literal('put'),
      key: Type.String(),
      value: Type.Unknown({ description: 'any JSON value' }),
      context: OpContext,
      level: OpLevel,
      dt: OpDt,
    },
    { additionalProperties: false, required: ['opId', 'kind', 'key', 'value'] },
  ),
  Type.Object(
    {
      opId: OpIdString,
      kind: Type.Literal('delete'),
      key: Type.String(),
      context: OpContext,
      level: OpLevel,
      dt: OpDt,
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      opId: OpIdString,
      kind: Type.Enum(['set-add', 'set-remove']),
      name: Type.String(),
      elements: OpElements,
      level: OpLevel,
      dt: OpDt,
    },
    { additionalProperties: false },
  ),
])
export type Op = Static<typeof OpSchema>

/**
 * Body of `POST /v1/ops`. Only the envelope is validated as a whole (1 to {@link MAX_BATCH_OPS}
 * objects, each with a known `kind`); each op is then checked as its single route checks it, in
 * order, so a bad op stops the batch at its index (`error.index`) after the ops before it.
 */
export const OpsBodySchema = Type.Object(
  {
    ops: Type.Array(
      Type.Object(
        { kind: Type.Enum([...OP_KINDS]) },
        {
          additionalProperties: true,
          description:
            'an operation: `{ opId, kind: "put", key, value, context?, level?, dt? }`, `{ opId, kind: "delete", key, context?, level?, dt? }` or `{ opId, kind: "set-add" | "set-remove", name, elements, level?, dt? }`',
        },
      ),
      { minItems: 1, maxItems: MAX_BATCH_OPS },
    ),
  },
  {
    additionalProperties: false,
    required: ['ops'],
    examples: [
      {
        ops: [
          { opId: 'phone-7f3a9c21.1', kind: 'put', key: 'list:milk', value: { qty: 2 } },
          { opId: 'phone-7f3a9c21.2', kind: 'set-add', name: 'lists', elements: ['groceries'] },
          { opId: 'phone-7f3a9c21.3', kind: 'delete', key: 'list:bread' },
        ],
      },
    ],
  },
)
export type OpsBody = { ops: Op[] }

/** Query of `POST /v1/ops`: one durability for the whole batch. */
export const OpsQuerySchema = Type.Object(
  { durability: Type.Optional(Type.Enum([...DURABILITIES])) },
  { additionalProperties: false },
)

/** One result of `POST /v1/ops`: the single route's reply, `replayed` when the id was applied before. */
export const OpResultSchema = Type.Object({
  ts: Hlc,
  dc: RegionId,
  idx: Type.Integer({ minimum: 1 }),
  epoch: Type.Integer({ minimum: 1 }),
  region: RegionId,
  context: Type.Optional(Type.String()),
  replayed: Type.Optional(
    Type.Literal(true, {
      description: 'the op id had already been applied: this is its first result',
    }),
  ),
})
export type OpResult = Static<typeof OpResultSchema>

/** Where a batch stopped: the failing op's index and its error. */
export const OpErrorSchema = Type.Object({
  index: Type.Integer({ minimum: 0 }),
  statusCode: Type.Integer(),
  code: Type.Enum(Object.keys(ERROR_CODES) as ErrorCode[]),
  message: Type.String(),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
export type OpError = Static<typeof OpErrorSchema>

/** Reply of `POST /v1/ops`. */
export const OpsReplySchema = Type.Object(
  {
    results: Type.Array(OpResultSchema, {
      description: 'one per op applied (or replayed), in order',
    }),
    error: Type.Optional(OpErrorSchema),
  },
  {
    examples: [
      {
        results: [
          { ts: '019b76daa8000000', dc: 0, idx: 7, epoch: 1, region: 0 },
          { ts: '019b76daa8000001', dc: 0, idx: 8, epoch: 1, region: 0, replayed: true },
        ],
        error: {
          index: 2,
          statusCode: 400,
          code: 'INVALID_KEY',
          message: 'key must not be empty',
        },
      },
    ],
  },
)
export type OpsReply = Static<typeof OpsReplySchema>

/** Query of `GET /v1/watch` (server-sent events). */
export const WatchQuerySchema = Type.Object(
  {
    prefix: Type.Optional(
      Type.String({
        description: 'watch keys starting with this (`cart:` = a namespace; empty = every key)',
        examples: ['cart:'],
      }),
    ),
    keys: Type.Optional(
      Type.String({
        description: 'or: up to 100 keys, comma-separated, each percent-encoded',
        pattern: '^([^,%]|%[0-9A-Fa-f]{2})+(,([^,%]|%[0-9A-Fa-f]{2})+){0,99}$',
        // No example: a watch takes prefix or keys, and the prefix has the example.
      }),
    ),
    since: Type.Optional(
      Type.String({
        description:
          'resume after this cursor (an event `id`); absent: from now. `Last-Event-ID` does the same',
        pattern: '^[A-Za-z0-9_-]+$',
      }),
    ),
    level: Type.Optional(Type.Enum([...READ_LEVELS])),
    heartbeatMs: Type.Optional(
      Type.Integer({
        minimum: 1000,
        maximum: 60000,
        description: 'heartbeat period (default 15000)',
      }),
    ),
    timeoutMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'how long the start may wait for replicas covering `causeway-after`',
      }),
    ),
  },
  { additionalProperties: false },
)
export type WatchQuery = Static<typeof WatchQuerySchema>

/** The `data` of a change-feed `change` event: one log entry of a watched key, as a read shows it. */
export const ChangeEventSchema = Type.Object({
  key: Type.String(),
  p: Type.Integer({ minimum: 0, description: 'the partition' }),
  dc: RegionId,
  idx: Type.Integer({
    minimum: 1,
    description: "the entry's origin idx: record it as a read (hrm[dc][p])",
  }),
  ts: Hlc,
  deleted: Type.Boolean(),
  value: Type.Optional(Type.Unknown()),
  tid: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        'a transaction’s write (transactional namespaces): its tid in the log of the region that serves the feed; every key of one transaction has the same',
    }),
  ),
  siblings: Type.Optional(Type.Array(SiblingReplySchema)),
  context: Type.Optional(Type.String()),
  set: Type.Optional(
    Type.Object(
      {
        added: Type.Array(Type.String()),
        removed: Type.Array(Type.String()),
      },
      { description: 'a set write (`key` is the set name): the elements it added and removed' },
    ),
  ),
})
export type ChangeEvent = Static<typeof ChangeEventSchema>
