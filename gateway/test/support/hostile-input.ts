/**
 * Hostile-input scenarios (issue 12) run over HTTP against any two-region cluster with a `cart`
 * siblings namespace, on each backend: stored values that do not decode must stay contained to
 * their key, and fuzzed requests and shipping envelopes must get clear 4xx answers without
 * stopping replication or touching other keys.
 */
import { ERROR_CODES, MAX_SAFE_COUNTER, hlcFrom, isErrorCode, partitionOf } from '@causeway/core'
import fc from 'fast-check'
import { expect } from 'vitest'
import { keysIn } from './forged-context.js'
import { afterWrite, call, getKey, kvUrl, putKey, until, type Reply } from './http-calls.js'

/** What the scenarios need of a running cluster. */
export interface HostileTarget {
  /** The gateway of region 0 and of region 1. */
  urls: readonly [string, string]
  partitions: number
  /**
   * Overwrites the stored value of `key` behind the cluster's back at the leader of its
   * partition in region 0 (and so, on Redis, at its followers): its sibling set's text, or its
   * version (on Redis, the `ts` field).
   */
  corrupt(key: string, kind: 'siblings' | 'version', text: string): Promise<void>
  /**
   * Hands `entries` (anything) to region 1's leader of `partition` as shipped by region 0, in an
   * envelope (`shippedBy0`): over the internal shipping endpoint where there is one, else to the
   * replica itself.
   */
  ship(partition: number, entries: unknown): Promise<{ status: number; code?: string }>
  /** Background failures reported so far: replication or shipping steps that failed. */
  failures(): string[]
}

const values = (reply: Reply) =>
  ((reply.body.siblings as { value?: unknown }[] | undefined) ?? []).map((s) => s.value)

/** Writes `keys` at region 0 and returns each key's write reply (values `{ n: i }`). */
async function prewrite(base: string, keys: readonly string[]): Promise<Map<string, Reply>> {
  const written = new Map<string, Reply>()
  for (const [i, key] of keys.entries()) {
    const reply = await putKey(base, key, { n: i })
    expect(reply.status, `${key}: ${JSON.stringify(reply.body)}`).toBe(200)
    written.set(key, reply)
  }
  return written
}

/** Every key of `written` reads back its value, in both regions, once its write has arrived. */
async function expectReadable(
  urls: readonly string[],
  written: ReadonlyMap<string, Reply>,
): Promise<void> {
  const keys = [...written.keys()]
  for (const [key, reply] of written) {
    for (const base of urls) {
      const r = await getKey(base, key, '?timeoutMs=8000', { 'causeway-after': afterWrite(reply) })
      expect(r.status, `${key} in ${base}: ${JSON.stringify(r.body)}`).toBe(200)
      const value = key.startsWith('cart:') ? values(r) : [r.body.value]
      expect(value, `${key} in ${base}`).toEqual([{ n: keys.indexOf(key) }])
    }
  }
}

/**
 * Writes a new key of every partition in each region and reads it in the other one and at a
 * follower with the write's vector: the partitions still replicate, with session guarantees.
 */
export async function expectReplicating(target: HostileTarget, tag: string): Promise<void> {
  const [r0, r1] = target.urls
  for (let p = 0; p < target.partitions; p++) {
    for (const [from, to] of [
      [r0, r1],
      [r1, r0],
    ] as const) {
      for (const key of [
        keysIn(p, target.partitions, 1, `cart:${tag}-${from === r0 ? 0 : 1}-`)[0]!,
        keysIn(p, target.partitions, 1, `lww:${tag}-${from === r0 ? 0 : 1}-`)[0]!,
      ]) {
        const written = await putKey(from, key, tag)
        expect(written.status, `${key}: ${JSON.stringify(written.body)}`).toBe(200)
        const after = { 'causeway-after': afterWrite(written) }
        for (const [base, query] of [
          [to, '?timeoutMs=8000'],
          [from, '?replica=follower&timeoutMs=8000'],
        ] as const) {
          const read = await getKey(base, key, query, after)
          expect(read.status, `${key} at ${base}${query}: ${JSON.stringify(read.body)}`).toBe(200)
          expect(key.startsWith('cart:') ? values(read) : [read.body.value]).toEqual([tag])
        }
      }
    }
  }
}

/** The quarantine section of a region's status. */
async function quarantineOf(base: string): Promise<Record<string, unknown>> {
  const status = await call(`${base}/v1/status`)
  expect(status.status).toBe(200)
  return status.body.quarantine as Record<string, unknown>
}

/**
 * Stored values that do not decode (a counter of 2^53, as the bug of issue 12 left them; a
 * garbled version): reads of them fail with 500 `VALUE_QUARANTINED`, the key is flagged in the
 * status and counted in `/metrics`, the partition keeps replicating in both regions, every other
 * key stays readable, and the key is rebuilt from the log to what it held and takes writes again.
 */
export async function expectQuarantineContained(target: HostileTarget): Promise<void> {
  const [r0, r1] = target.urls
  const p = partitionOf('cart:q', target.partitions)
  const others = [
    ...keysIn(p, target.partitions, 2, 'cart:q-other'),
    ...keysIn(p, target.partitions, 2, 'lww:q-other'),
  ]
  const written = await prewrite(r0, others)
  const cart = 'cart:q'
  const lww = keysIn(p, target.partitions, 1, 'lww:q')[0]!
  await putKey(r0, cart, 'a')
  const second = await putKey(r0, cart, 'b')
  const lwwWrite = await putKey(r0, lww, 'kept')
  const before = await getKey(r0, cart, '?replica=leader')
  expect(values(before)).toEqual(['a', 'b'])
  expect(second.status).toBe(200)

  await target.corrupt(cart, 'siblings', `0\u001f${2 ** 53}\u001f${hlcFrom(Date.now(), 0)}=1`)
  await target.corrupt(lww, 'version', 'not a version')
  for (const key of [cart, lww]) {
    const read = await getKey(r0, key, '?replica=leader')
    expect({ status: read.status, code: read.body.code }, key).toEqual({
      status: 500,
      code: 'VALUE_QUARANTINED',
    })
    expect(read.body.details).toMatchObject({ key, partition: p, replica: 0, region: 0 })
  }
  const flagged = await quarantineOf(r0)
  expect(flagged.detected).toBeGreaterThanOrEqual(2)
  const metrics = await fetch(`${r0}/metrics`).then((res) => res.text())
  expect(metrics).toMatch(/causeway_quarantine_events_total\{[^}]*event="quarantined"[^}]*\} [2-9]/)

  // The partition keeps replicating, the other keys keep their values.
  await expectReplicating(target, 'during-quarantine')
  await expectReadable([r0, r1], written)

  // Rebuilt from the log: the key holds what it held, and takes writes (which replicate).
  const repaired = await until(
    () => getKey(r0, cart, '?replica=leader'),
    (r) => r.status === 200,
  )
  expect(values(repaired)).toEqual(['a', 'b'])
  expect(repaired.body.context).toBe(before.body.context)
  const lwwBack = await until(
    () => getKey(r0, lww, '?replica=leader'),
    (r) => r.status === 200,
  )
  expect(lwwBack.body).toMatchObject({ value: 'kept', ts: lwwWrite.body.ts })
  const resolved = await putKey(r0, cart, 'c', {
    'causeway-context': repaired.body.context as string,
  })
  expect(resolved.status, JSON.stringify(resolved.body)).toBe(200)
  const there = await getKey(r1, cart, '?timeoutMs=8000', {
    'causeway-after': afterWrite(resolved),
  })
  expect(values(there)).toEqual(['c'])
  const cleared = await until(
    () => call(`${r0}/v1/status`),
    (r) => (r.body.quarantine as { quarantined: number }).quarantined === 0,
  )
  expect(cleared.body.quarantine).toMatchObject({ quarantined: 0, keys: [] })
  expect((cleared.body.quarantine as { repaired: number }).repaired).toBeGreaterThanOrEqual(2)
  expect(target.failures()).toEqual([])
}

// ---- fuzzing a running gateway ----

const REGIONS = 2
const boundary = fc.constantFrom(
  0,
  1,
  2,
  3,
  255,
  2 ** 32,
  2 ** 48 - 1,
  MAX_SAFE_COUNTER - 1,
  MAX_SAFE_COUNTER,
  Number.MAX_SAFE_INTEGER,
  2 ** 53,
  2 ** 64,
)
const number = fc.oneof(fc.nat(12), boundary)

/** A mutation of `text`: characters replaced, removed or inserted, numbers spliced in. */
function mutated(text: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const nasty = fc.constantFrom(...'0123456789abf:@,-_=+/ .%~"\\'.split(''), '\u00e9')
  const edit = fc.tuple(
    fc.constantFrom('set', 'del', 'ins', 'num', 'cut'),
    fc.nat(),
    nasty,
    boundary,
  )
  return fc.tuple(text, fc.array(edit, { minLength: 1, maxLength: 3 })).map(([t, edits]) => {
    let s = t
    for (const [kind, at, char, n] of edits) {
      const i = s.length === 0 ? 0 : at % (s.length + 1)
      if (kind === 'set') s = s.slice(0, i) + char + s.slice(i + 1)
      else if (kind === 'del') s = s.slice(0, i) + s.slice(i + 1)
      else if (kind === 'ins') s = s.slice(0, i) + char + s.slice(i)
      else if (kind === 'num') s = s.slice(0, i) + String(n) + s.slice(i)
      else s = s.slice(0, i)
    }
    return s
  })
}

/** Contexts as base64url of a format byte, a count and (actor, counter) varints. */
const context = fc
  .tuple(
    fc.oneof(fc.constant(0xc1), fc.nat(255)),
    fc.array(fc.tuple(fc.oneof(fc.nat(REGIONS), boundary), number), { maxLength: 3 }),
  )
  .map(([format, pairs]) => {
    const bytes = [format, pairs.length]
    const varint = (n: number) => {
      for (let k = 0; n >= 128 && k < 9; k++) {
        bytes.push((n % 128) | 128)
        n = Math.floor(n / 128)
      }
      bytes.push(n % 256)
    }
    for (const [a, c] of pairs) {
      varint(a)
      varint(c)
    }
    return Buffer.from(bytes).toString('base64url')
  })
const after = fc
  .tuple(
    fc.option(number, { nil: undefined }),
    fc.array(fc.tuple(fc.oneof(fc.nat(REGIONS), boundary), number), { minLength: 1, maxLength: 3 }),
  )
  .map(
    ([epoch, pairs]) =>
      (epoch === undefined ? '' : `${epoch}@`) + pairs.map(([d, i]) => `${d}:${i}`).join(','),
  )
const dt = fc.oneof(
  fc.constant(null).map(() => hlcFrom(Date.now(), 0)),
  fc
    .tuple(fc.oneof(fc.nat(2 ** 48 - 1), fc.constant(2 ** 48 - 1)), fc.nat(0xffff))
    .map(([l, c]) => hlcFrom(l, c)),
)
const header = (valid: fc.Arbitrary<string>) =>
  fc.option(
    fc.oneof({ weight: 3, arbitrary: valid }, mutated(valid), fc.string({ maxLength: 40 })),
    {
      nil: undefined,
      freq: 2,
    },
  )

const request = fc.record({
  method: fc.constantFrom('PUT', 'PUT', 'DELETE', 'GET'),
  region: fc.constantFrom(0, 1),
  key: fc.constantFrom('cart:fz0', 'cart:fz1', 'cart:fz2', 'lww:fz0', 'lww:fz1'),
  context: header(context),
  after: header(after),
  dt: header(dt),
  value: fc.oneof(fc.nat(), fc.constant('v')),
})

/** Answers a fuzzed request may get: anything but these is a failure of the property. */
function expectClearAnswer(reply: Reply, what: string): void {
  if (reply.status === 200) return
  const code = reply.body.code
  expect(isErrorCode(code), `${what}: ${JSON.stringify(reply.body)}`).toBe(true)
  expect(reply.status, what).toBe(ERROR_CODES[code as keyof typeof ERROR_CODES])
  // A vector the replica has not reached in time is a 503 the SDK retries; nothing else 5xx.
  if (reply.status >= 500) expect(code, what).toBe('SESSION_NOT_AVAILABLE')
}

/**
 * Throws `runs` fuzzed kv requests (contexts, vectors, HLCs, generated and mutated) and `runs /
 * 4` fuzzed shipping envelopes at the cluster, each answered clearly; then the partitions still
 * replicate in both regions with session guarantees and every key written before keeps its
 * value. Bounded: every request has a deadline of its own and the count is fixed.
 */
export async function fuzzCluster(
  target: HostileTarget,
  runs: number,
  seed: number,
): Promise<void> {
  const [r0, r1] = target.urls
  const keys = Array.from({ length: target.partitions }, (_, p) => [
    ...keysIn(p, target.partitions, 2, 'cart:fuzz-kept'),
    ...keysIn(p, target.partitions, 2, 'lww:fuzz-kept'),
  ]).flat()
  const written = await prewrite(r0, keys)
  // Region 1 has them before the envelopes come (so small idx there are duplicates, skipped).
  await expectReadable([r1], written)
  const baseline = await Promise.all(target.urls.map(quarantineOf))
  const counts = new Map<string, number>()

  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const headers: Record<string, string> = {}
      if (r.context !== undefined) headers['causeway-context'] = r.context
      if (r.after !== undefined) headers['causeway-after'] = r.after
      if (r.dt !== undefined) headers['causeway-dt'] = r.dt
      const base = target.urls[r.region]!
      const query = r.method === 'GET' ? '?timeoutMs=200' : ''
      const init =
        r.method === 'PUT'
          ? { method: 'PUT', json: { value: r.value }, headers }
          : { method: r.method, headers }
      let reply: Reply
      try {
        reply = await call(kvUrl(base, r.key, query), init)
      } catch (error) {
        // fetch refuses some header values itself (it never sends them): nothing was asked.
        if (error instanceof TypeError) return
        throw error
      }
      const label = `${reply.status} ${String(reply.body.code ?? '')}`
      counts.set(label, (counts.get(label) ?? 0) + 1)
      expectClearAnswer(reply, `${r.method} ${r.key} ${JSON.stringify(headers)}`)
    }),
    { numRuns: runs, seed, endOnFailure: true },
  )
  // The fuzz reached both sides: writes that went through and refusals of each header.
  expect(counts.get('200 ') ?? 0, JSON.stringify([...counts])).toBeGreaterThan(runs / 20)
  for (const code of ['INVALID_CONTEXT', 'INVALID_VECTOR'])
    expect(counts.get(`400 ${code}`) ?? 0, JSON.stringify([...counts])).toBeGreaterThan(0)

  // Shipping envelopes: generated and mutated entries, never at the receiver's next idx (a
  // well-formed one there would be a real write of region 0 that region 0 never made).
  const hlc = fc.tuple(fc.nat(2 ** 48 - 1), fc.nat(0xffff)).map(([l, c]) => hlcFrom(l, c))
  const entry = fc.record({
    kind: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('put', 'delete', 'siblings') },
      { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
    ),
    idx: fc.oneof(fc.integer({ min: 1_000_000, max: 2 ** 40 }), boundary),
    key: fc.oneof(fc.constantFrom('cart:fz0', 'lww:fz0'), fc.string({ maxLength: 8 })),
    ts: fc.oneof(hlc, mutated(hlc)),
    at: fc.oneof(fc.nat(), boundary),
    value: fc.option(fc.constantFrom('1', '"v"', ''), { nil: undefined }),
    siblings: fc.option(
      fc.oneof(mutated(fc.constant(`0\u001f1\u001f${hlcFrom(1, 0)}=1`)), fc.string()),
      {
        nil: undefined,
      },
    ),
  })
  const envelope = fc.tuple(
    fc.nat(target.partitions - 1),
    fc.array(entry, { minLength: 1, maxLength: 3 }),
  )
  await fc.assert(
    fc.asyncProperty(envelope, async ([p, entries]) => {
      const safe = entries.map((e) => (e.idx >= 1 && e.idx < 1_000_000 ? { ...e, idx: 1 } : e))
      const answer = await target.ship(p, safe)
      if (answer.status === 200) return
      // An entry at an index the receiver holds that is not the write it holds there: refused
      // whole (a receiver that keeps epoch histories notices it, `epoch-scripts.ts`).
      if (answer.status === 409) {
        expect(answer.code).toBe('SHIPPING_DIVERGED')
        return
      }
      // Malformed, or of a kind this version does not know: refused whole, never applied.
      expect(answer.status, JSON.stringify(safe).slice(0, 300)).toBe(400)
      expect(['INVALID_REQUEST', 'UNSUPPORTED_LOG_FORMAT']).toContain(answer.code)
    }),
    { numRuns: Math.ceil(runs / 4), seed, endOnFailure: true },
  )

  await expectReplicating(target, 'after-fuzz')
  await expectReadable([r0, r1], written)
  // Nothing the fuzz sent was taken for stored data that does not decode.
  for (const [d, base] of target.urls.entries())
    expect(await quarantineOf(base)).toMatchObject({
      quarantined: 0,
      detected: baseline[d]!.detected,
      skippedEntries: baseline[d]!.skippedEntries,
    })
  expect(target.failures()).toEqual([])
}

/**
 * What the bug of issue 12 left behind, met by a fixed version: region 0's leader logged a
 * sibling write of `key` whose set has a counter of 2^53 (its followers and region 1 never took
 * it) and stores that set. `poison` plants it (on the embedded cluster by restarting it); then
 * the entry must pass to the followers and to region 1 without stopping the partition (logged,
 * not merged), and the key is rebuilt from the log to what it held before.
 */
export async function expectPoisonedEntryPasses(
  target: HostileTarget,
  poison: (key: string) => Promise<void>,
): Promise<void> {
  const key = 'cart:poisoned'
  const first = await putKey(target.urls[0], key, 'before')
  expect(first.status).toBe(200)
  const there = await getKey(target.urls[1], key, '?timeoutMs=8000', {
    'causeway-after': afterWrite(first),
  })
  expect(values(there)).toEqual(['before'])

  await poison(key)
  const [r0, r1] = target.urls
  const read = await until(
    () => getKey(r0, key, '?replica=leader'),
    (r) => r.status === 200,
  )
  expect(values(read), JSON.stringify(read.body)).toEqual(['before'])
  await expectReplicating(target, 'after-poison')
  // Region 1 logged it without merging it (its followers too, on LevelDB), and said so.
  const skipped = await until(
    () => call(`${r1}/v1/status`),
    (r) => (r.body.quarantine as { skippedEntries: number }).skippedEntries >= 1,
  )
  expect((skipped.body.quarantine as { skippedEntries: number }).skippedEntries).toBeGreaterThan(0)
  expect(values(await getKey(r1, key, '?replica=leader'))).toEqual(['before'])
  // And the key takes writes again, which replicate.
  const next = await putKey(r0, key, 'after', { 'causeway-context': read.body.context as string })
  expect(next.status, JSON.stringify(next.body)).toBe(200)
  const arrived = await getKey(r1, key, '?timeoutMs=8000', { 'causeway-after': afterWrite(next) })
  expect(values(arrived)).toEqual(['after'])
  expect(target.failures()).toEqual([])
}

/**
 * `entries` (anything) in a version 1 shipping envelope of region 0, its first and last idx taken
 * from them, in wire form (entries without origin) or, with `origin`, as replicas take it.
 */
export function shippedBy0(entries: unknown, withOrigin = false): Record<string, unknown> {
  const list = (Array.isArray(entries) ? entries : [entries]) as Record<string, unknown>[]
  return {
    v: 1,
    from: 0,
    epoch: 1,
    first: list[0]?.idx,
    last: list.at(-1)?.idx,
    entries: withOrigin ? list.map((e) => ({ ...e, origin: 0 })) : list,
  }
}
