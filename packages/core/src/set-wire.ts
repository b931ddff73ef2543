/**
 * The HTTP protocol of sets (`/v1/sets/:name/...`): JSON Schemas (TypeBox) of requests and
 * replies, next to the kv ones in `wire.ts`, and the limits a set call must respect.
 */
import { type Static, Type } from 'typebox'
import { DURABILITIES, READ_LEVELS, REPLICA_CHOICES, WRITE_LEVELS } from './consistency.js'
import { MAX_ELEMENT_BYTES } from './bigset/element.js'
import { MAX_SET_WRITE_ELEMENTS } from './set-limits.js'
import { ErrorReplySchema } from './wire.js'

const Hlc = Type.String({
  pattern: '^[0-9a-f]{16}$',
  description: 'HLC timestamp: 16 lowercase hex digits',
})
const RegionId = Type.Integer({ minimum: 0, maximum: 254 })
const Seen = Type.Array(Type.Integer({ minimum: 0 }), {
  description:
    'per region, the highest log idx of a write of this set that the read reflects; record it as read (hrm) for the set’s partition',
})
const Context = Type.String({
  description:
    'the element’s context: an opaque token naming the insertions the read saw; send it back with a remove to remove exactly those',
})

/** The set name in the path of `/v1/sets/:name/...`. */
export const SetParamsSchema = Type.Object({
  name: Type.String({
    minLength: 1,
    description: 'the set name, a key like any other (it picks the partition): percent-encoded',
    examples: ['tags:1'],
  }),
})

/** Query of set reads (`has`, `size`, `scan` share these). */
const readOptions = {
  level: Type.Optional(Type.Enum([...READ_LEVELS])),
  replica: Type.Optional(Type.Enum([...REPLICA_CHOICES])),
  timeoutMs: Type.Optional(Type.Integer({ minimum: 0 })),
}

/** Query of `GET /v1/sets/:name/has`. */
export const SetHasQuerySchema = Type.Object(
  {
    element: Type.String({
      description: 'the element (UTF-8, at most 1 KiB), percent-encoded',
      examples: ['red'],
    }),
    ...readOptions,
  },
  { additionalProperties: false, required: ['element'] },
)
export type SetHasQuery = Static<typeof SetHasQuerySchema>

/** Query of `GET /v1/sets/:name/size`. */
export const SetSizeQuerySchema = Type.Object(readOptions, { additionalProperties: false })
export type SetSizeQuery = Static<typeof SetSizeQuerySchema>

/** Query of `GET /v1/sets/:name/scan`. */
export const SetScanQuerySchema = Type.Object(
  {
    ...readOptions,
    from: Type.Optional(
      Type.String({ description: 'first element to include (not together with `after`)' }),
    ),
    after: Type.Optional(
      Type.String({
        description: 'start after this element, a page cursor (not together with `from`)',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'most elements to return (default: all)',
      }),
    ),
    ctx: Type.Optional(Type.Boolean({ description: 'also return each element’s context' })),
    merge: Type.Optional(
      Type.Boolean({
        description:
          'merge the ordered streams of every replica of the region (Bigsets §4.4) instead of reading one',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SetScanQuery = Static<typeof SetScanQuerySchema>

/** Query of `POST /v1/sets/:name/add` and `/remove`. */
export const SetWriteQuerySchema = Type.Object(
  {
    level: Type.Optional(Type.Enum([...WRITE_LEVELS])),
    durability: Type.Optional(Type.Enum([...DURABILITIES])),
    timeoutMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'how long a remove of elements without a context may wait for the leader to catch up with `causeway-after`',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SetWriteQuery = Static<typeof SetWriteQuerySchema>

// At most 1 KiB of UTF-8, so at most 1,024 characters (the byte bound is checked after).
const Element = Type.String({
  maxLength: MAX_ELEMENT_BYTES,
  description: `a set element: a string of at most ${MAX_ELEMENT_BYTES} bytes of UTF-8`,
})

/** One element of an add or remove: the element, or the element with its context. */
export const SetWriteElementSchema = Type.Union([
  Element,
  Type.Object(
    { element: Element, ctx: Type.Optional(Context) },
    { additionalProperties: false, required: ['element'] },
  ),
])
export type SetWriteElement = Static<typeof SetWriteElementSchema>

/**
 * Body of `POST /v1/sets/:name/add` and `/remove`: 1 to {@link MAX_SET_WRITE_ELEMENTS} elements,
 * each a {@link SetWriteElementSchema}. The gateway validates without type coercion, so a number
 * is refused rather than turned into a string, and a string rather than into an array.
 */
export const SetWriteBodySchema = Type.Object(
  {
    elements: Type.Array(SetWriteElementSchema, {
      minItems: 1,
      maxItems: MAX_SET_WRITE_ELEMENTS,
      description: `1 to ${MAX_SET_WRITE_ELEMENTS} elements, each a string (the element) or { "element": string, "ctx"?: string } (with a context from has or scan)`,
    }),
  },
  {
    additionalProperties: false,
    required: ['elements'],
    examples: [{ elements: ['red', 'blue'] }],
  },
)
export type SetWriteBody = { elements: SetWriteElement[] }

/** What every set read reply carries besides its answer. */
const readMeta = {
  seen: Seen,
  ts: Type.Optional(Hlc),
  epoch: Type.Integer({ minimum: 1 }),
  region: RegionId,
  replica: Type.Integer({ minimum: 0 }),
  waitedMs: Type.Number({ minimum: 0 }),
}

/** Reply of `GET /v1/sets/:name/has`. */
export const SetHasReplySchema = Type.Object({
  found: Type.Boolean(),
  ctx: Type.Optional(Context),
  ...readMeta,
})
export type SetHasReply = Static<typeof SetHasReplySchema>

/** Reply of `GET /v1/sets/:name/size`. */
export const SetSizeReplySchema = Type.Object({
  size: Type.Integer({ minimum: 0 }),
  ...readMeta,
})
export type SetSizeReply = Static<typeof SetSizeReplySchema>

/**
 * Reply of `GET /v1/sets/:name/scan`, streamed (chunked) as it is read: `elements` first, the
 * rest once the walk is over. A failure after the first bytes ends the document with `error`.
 */
export const SetScanReplySchema = Type.Object({
  elements: Type.Array(
    Type.Union([Type.String(), Type.Object({ element: Type.String(), ctx: Context })]),
    { description: 'in element order (code points); objects when `ctx=true`' },
  ),
  next: Type.Optional(
    Type.String({ description: 'present when `limit` cut the scan short: pass it as `after`' }),
  ),
  merged: Type.Optional(
    Type.Integer({ minimum: 1, description: 'replicas merged (`merge=true`)' }),
  ),
  ...readMeta,
  error: Type.Optional(ErrorReplySchema),
})
export type SetScanReply = Static<typeof SetScanReplySchema>
