/**
 * Where one partition replica keeps its state in Redis. Every key starts with
 * `cw:{<namespace>:r<region>:p<partition>}:`; the braces are a Redis Cluster hash tag, so all keys
 * of a partition sit in one slot and one Lua script may touch them all.
 *
 * | key                          | type   | holds                                              |
 * |------------------------------|--------|----------------------------------------------------|
 * | `<prefix>meta`               | hash   | `hlc` (last HLC issued or observed), `epoch`, and the leader's claim: `leader`, `leaderAddr`, `ceiling`, `reserved` (`epoch-scripts.ts`) |
 * | `<prefix>sv`                 | hash   | field `d` → `sv[d]` (the leader's counter is `sv[region]`); also the pub/sub channel its new value is published on (`sv-lua.ts`) |
 * | `<prefix>sv:epochs`          | hash   | field `d` → origin `d`'s epoch history (`epoch:first[:last];...`) |
 * | `<prefix>sv:diverged`        | hash   | field `d` → what the replica noticed of origin `d`'s envelopes (`diverged ...`, `extra ...`) |
 * | `<prefix>log:<d>`            | stream | origin `d`'s entries, stream id `<idx>-0`; fields `k`, `ts`, `at`, `v` (absent: tombstone), `s` (a sibling write's set), `b` (a set write's delta) |
 * | `<prefix>v:<encoded key>`    | hash   | winning version: `ts`, `dc`, `v` (absent: tombstone) |
 * | `<prefix>s:<encoded key>`    | string | sibling set of a siblings-namespace key (text form of `sibling-set.ts`) |
 * | `<prefix>b:<encoded set>:…`  | (several) | a set (Bigsets): clock, elements, size, stamp (see `redis-sets.ts`) |
 * | `<prefix>wait`               | string | a counter `waitReplicas` bumps to have an offset to `WAIT` for |
 * | `<prefix>om:<encoded tenant>:<client>` | hash | an op-id client's mark (`low`, `high`, `seen`; `../op-records.ts`), kept for ever |
 * | `<prefix>or:<encoded tenant>:<client>` | hash | its operation records by seq, expiring after the retention window |
 * | `<prefix>oz:<encoded tenant>:<client>` | zset | the seqs of those records, expiring with them |
 *
 * Client keys and the namespace are percent-encoded (only `[A-Za-z0-9._:-]` stay as they are), so
 * no input can add a `{`/`}` that moves the hash tag, a glob character, a control character or a
 * separator that makes two different keys collide; the encoding is injective.
 */
import { CausewayError } from '@causeway/core'

const KEEP = /^[A-Za-z0-9._:-]$/
const encoder = new TextEncoder()

/** Percent-encodes `text` byte by byte (UTF-8), keeping only `[A-Za-z0-9._:-]`. Injective. */
export function encodeKeyPart(text: string): string {
  let out = ''
  for (const char of text) {
    if (KEEP.test(char)) {
      out += char
      continue
    }
    for (const byte of encoder.encode(char))
      out += '%' + byte.toString(16).toUpperCase().padStart(2, '0')
  }
  return out
}

/** The Redis key names of one partition replica. */
export class ReplicaKeys {
  /** `cw:{<namespace>:r<region>:p<partition>}:` */
  readonly prefix: string
  readonly meta: string
  readonly sv: string
  /** Each origin's epoch history; starts with {@link sv}'s name, so `sv` tracking covers it. */
  readonly epochs: string
  /** What shipping from each origin disagreed on; starts with {@link sv}'s name too. */
  readonly diverged: string
  readonly wait: string
  /**
   * A key prefix no key has: the replica's client tracking watches it (`BCAST PREFIX`), so the
   * only invalidations the server pushes are the flushes of a full resync (or `FLUSHALL`).
   */
  readonly resync: string

  constructor(namespace: string, region: number, partition: number) {
    if (typeof namespace !== 'string' || namespace.length === 0 || !namespace.isWellFormed())
      throw new TypeError('namespace must be a non-empty, well-formed string')
    // The namespace is encoded too, so a `}` in it cannot end the hash tag early.
    this.prefix = `cw:{${encodeKeyPart(namespace)}:r${region}:p${partition}}:`
    this.meta = this.prefix + 'meta'
    this.sv = this.prefix + 'sv'
    this.epochs = this.prefix + 'sv:epochs'
    this.diverged = this.prefix + 'sv:diverged'
    this.wait = this.prefix + 'wait'
    this.resync = this.prefix + 'resync:'
  }

  /** The log stream of origin region `origin`. */
  log(origin: number): string {
    return `${this.prefix}log:${origin}`
  }

  /** The version hash of a client key. Throws `INVALID_KEY` for an empty or ill-formed key. */
  version(key: string): string {
    if (typeof key !== 'string' || key.length === 0 || !key.isWellFormed())
      throw new CausewayError('INVALID_KEY', 'key must be a non-empty string of valid Unicode')
    return this.prefix + 'v:' + encodeKeyPart(key)
  }

  /** The sibling set of a client key in a siblings namespace. Throws like {@link version}. */
  siblings(key: string): string {
    if (typeof key !== 'string' || key.length === 0 || !key.isWellFormed())
      throw new CausewayError('INVALID_KEY', 'key must be a non-empty string of valid Unicode')
    return this.prefix + 's:' + encodeKeyPart(key)
  }

  /** The mark, records and record seqs of op-id client `client` of `tenant` (`op-scripts.ts`). */
  opClient(tenant: string, client: string): [mark: string, records: string, seqs: string] {
    const id = `${encodeKeyPart(tenant)}:${encodeKeyPart(client)}`
    return [`${this.prefix}om:${id}`, `${this.prefix}or:${id}`, `${this.prefix}oz:${id}`]
  }

  /** The keyspace-notification channel that fires when `sv` changes in database `db`. */
  svChannel(db: number): string {
    return `__keyspace@${db}__:${this.sv}`
  }
}
