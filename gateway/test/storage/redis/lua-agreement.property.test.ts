/**
 * The protocol in one place: the rules the Redis scripts must apply atomically in Lua (see
 * `replica-scripts.ts`) give the same outcome as `@causeway/core`'s TypeScript on the same
 * generated inputs, run against a real `redis-server`: the HLC update, the version order, the
 * sibling-set decoder and its bounds, the check of a logged set, the DVV sync (a replica's merge)
 * and the DVV update of a leader's sibling write, refusals included.
 */
import {
  type CausalContext,
  DvvSet,
  HybridClock,
  type Hlc,
  MAX_SAFE_COUNTER,
  NO_SIBLINGS,
  type Sibling,
  type SiblingSet,
  CausewayError,
  decodeSiblingSet,
  encodeSiblingSet,
  hlcFrom,
  supersedes,
} from '@causeway/core'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROTOCOL_LUA } from '../../../src/storage/redis/replica-scripts.js'
import {
  decodeLoggedSiblings,
  mergeSiblings,
  writeSibling,
} from '../../../src/storage/sibling-set.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'

const REGIONS = 3
const RUNS = 300
const RS = '\u001e'
const US = '\u001f'
const MAX_MILLIS = 2 ** 48 - 1

let server: RedisServer
let redis: Redis

beforeAll(async () => {
  server = await startRedis()
  redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0 })
  await redis.connect()
})

afterAll(async () => {
  redis?.disconnect()
  await stopAllRedis()
})

/** Runs `body` after the protocol's Lua functions, read-only, with `args` as ARGV. */
async function lua(body: string, ...args: (string | number)[]): Promise<unknown> {
  const script = `#!lua flags=no-writes\n${PROTOCOL_LUA}\n${body}`
  return redis.eval(script, 0, ...args.map(String))
}

// ---- inputs ----

const millis = fc.oneof(
  fc.nat({ max: 2000 }),
  fc.integer({ min: MAX_MILLIS - 3, max: MAX_MILLIS }),
  fc.constant(1_700_000_000_000),
)
const counter16 = fc.oneof(fc.nat({ max: 3 }), fc.integer({ min: 0xfffc, max: 0xffff }))
const hlc = fc.tuple(millis, counter16).map(([l, c]) => hlcFrom(l, c))
const value = fc.constantFrom('1', '"a"', '{"x":[1,2]}', 'null', '"é💡"')
const sibling: fc.Arbitrary<Sibling> = fc
  .tuple(hlc, fc.option(value, { nil: undefined }))
  .map(([ts, v]) => (v === undefined ? { ts } : { ts, value: v }))
const dotCounter = fc.oneof(
  fc.integer({ min: 1, max: 6 }),
  fc.integer({ min: MAX_SAFE_COUNTER - 2, max: MAX_SAFE_COUNTER }),
)

/** Any set the decoder accepts: actors ascending, each counter at least its siblings. */
const anySet: fc.Arbitrary<SiblingSet> = fc
  .uniqueArray(fc.nat(REGIONS - 1), { maxLength: REGIONS })
  .chain((actors) =>
    fc.tuple(
      ...[...actors]
        .sort((a, b) => a - b)
        .map((actor) =>
          fc
            .tuple(dotCounter, fc.array(sibling, { maxLength: 3 }))
            .map(
              ([counter, siblings]) =>
                [actor, Math.max(counter, siblings.length), siblings] as [
                  number,
                  number,
                  Sibling[],
                ],
            ),
        ),
    ),
  )
  .map((entries) => ({ entries, anonymous: [] }))

/** Sets as replicas get them: histories of leader writes and merges across regions. */
const historySet: fc.Arbitrary<SiblingSet> = fc
  .array(fc.tuple(fc.nat(REGIONS - 1), fc.nat(REGIONS - 1), sibling, fc.boolean(), fc.boolean()), {
    maxLength: 12,
  })
  .map((steps) => {
    const sets: SiblingSet[] = [NO_SIBLINGS, NO_SIBLINGS, NO_SIBLINGS]
    for (const [region, from, s, seen, merge] of steps) {
      if (merge) sets[region] = mergeSiblings(sets[region]!, sets[from]!)
      const context = seen ? DvvSet.join(sets[region]!) : []
      sets[region] = writeSibling(sets[region]!, context, s, region)
    }
    return sets[steps[0]?.[0] ?? 0]!
  })

const set = fc.oneof(anySet, historySet)

/** A context as a reader would send it back: actors ascending, counters within bounds. */
const context: fc.Arbitrary<CausalContext> = fc
  .uniqueArray(fc.nat(REGIONS - 1), { maxLength: REGIONS })
  .chain((actors) =>
    fc.tuple(
      ...[...actors].sort((a, b) => a - b).map((a) => dotCounter.map((c) => [a, c] as const)),
    ),
  )

/** The Lua form of a context: a set without siblings. */
function contextText(ctx: CausalContext): string {
  return ctx.map(([actor, counter]) => `${actor}${US}${counter}`).join(RS)
}

function siblingText(s: Sibling): string {
  return s.value === undefined ? `${s.ts}-` : `${s.ts}=${s.value}`
}

/** A mutation of text: characters replaced, removed or inserted, or the text cut. */
function mutated(text: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const nasty = fc.constantFrom(...'0129af-=:\u001e\u001fx'.split(''), '', '00')
  return fc
    .tuple(text, fc.array(fc.tuple(fc.nat(), nasty, fc.boolean()), { maxLength: 3 }))
    .map(([t, edits]) => {
      let s = t
      for (const [at, c, insert] of edits) {
        const i = s.length === 0 ? 0 : at % (s.length + 1)
        s = insert ? s.slice(0, i) + c + s.slice(i) : s.slice(0, i) + c + s.slice(i + 1)
      }
      return s
    })
}

/** `set` after a blind write of a tombstone by `region` at `ts`, or `set` when it cannot take one. */
function tryWrite(set: SiblingSet, region: number, ts: Hlc): SiblingSet {
  try {
    return writeSibling(set, [], { ts }, region)
  } catch {
    return set
  }
}

/** What a TypeScript rule came to, in the terms the Lua driver answers with. */
function outcome(run: () => string): [string, string] {
  try {
    return ['ok', run()]
  } catch (error) {
    if (!(error instanceof CausewayError)) throw error
    return ['refused', error.code]
  }
}

// Lua error codes of a refused sibling write, as the replica maps them.
const LUA_CODES: Record<string, string> = {
  CW_BAD_CONTEXT: 'INVALID_CONTEXT',
  CW_COUNTER_EXHAUSTED: 'COUNTER_EXHAUSTED',
}

describe('the Lua rules of the Redis scripts agree with core', () => {
  it('HLC update: hlc_next is HybridClock.update, exhaustion included', async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(hlc, { nil: undefined }), hlc, millis, async (last, dt, pc) => {
        let expected: string
        try {
          expected = new HybridClock({ now: () => pc, ...(last ? { last } : {}) }).update(dt)
        } catch (error) {
          if (!(error instanceof RangeError)) throw error
          expected = 'exhausted'
        }
        const got = await lua(
          `local ts = hlc_next(ARGV[1] ~= '' and ARGV[1] or nil, ARGV[2], tonumber(ARGV[3]))
           return ts or 'exhausted'`,
          last ?? '',
          dt,
          pc,
        )
        expect(got).toBe(expected)
      }),
      { numRuns: RUNS },
    )
  })

  it('version order: version_wins is core supersedes (last writer wins by (ts, dc))', async () => {
    const stamp = fc.record({
      ts: fc.oneof(hlc, fc.constant(hlcFrom(5, 5))),
      dc: fc.nat(REGIONS - 1),
    })
    await fc.assert(
      fc.asyncProperty(stamp, stamp, async (candidate, current) => {
        const got = await lua(
          `return version_wins(ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])) and 1 or 0`,
          candidate.ts,
          candidate.dc,
          current.ts,
          current.dc,
        )
        expect(got === 1).toBe(supersedes(candidate, current))
      }),
      { numRuns: RUNS },
    )
  })

  it('decoding: set_parse accepts exactly what decodeSiblingSet does, and encodes it alike', async () => {
    const reached = new Set<string>()
    // Well-formed UTF-16 only: a lone surrogate cannot reach Redis as itself (UTF-8 has no form
    // for it), and stored sets never hold one (values are JSON text, which escapes it).
    const text = fc
      .oneof(set.map(encodeSiblingSet), mutated(set.map(encodeSiblingSet)), fc.string())
      .filter((t) => t.isWellFormed())
    await fc.assert(
      fc.asyncProperty(text, async (t) => {
        const expected = outcome(() => encodeSiblingSet(decodeSiblingSet(t, REGIONS)))
        reached.add(expected[0])
        const got = await lua(
          `local set = set_parse(ARGV[1], tonumber(ARGV[2]))
           if not set then return { 'refused', 'INVALID_REQUEST' } end
           return { 'ok', set_encode(set) }`,
          t,
          REGIONS,
        )
        expect(got).toEqual(expected)
      }),
      { numRuns: RUNS * 2 },
    )
    expect([...reached].sort()).toEqual(['ok', 'refused'])
  })

  it('logged sets: logged_ok accepts exactly what decodeLoggedSiblings does', async () => {
    const reached = new Set<string>()
    await fc.assert(
      fc.asyncProperty(set, fc.nat(REGIONS - 1), hlc, fc.boolean(), async (s, origin, ts, own) => {
        // Half the time, the set holds the entry's own write as its origin's newest sibling.
        const logged = own ? tryWrite(s, origin, ts) : s
        const text = encodeSiblingSet(logged)
        let expected = true
        try {
          decodeLoggedSiblings({ origin, idx: 1, ts, siblings: text }, REGIONS)
        } catch {
          expected = false
        }
        reached.add(String(expected))
        const got = await lua(
          `local set = set_parse(ARGV[1], tonumber(ARGV[4]))
           return set and logged_ok(set, tonumber(ARGV[2]), ARGV[3]) and 1 or 0`,
          text,
          origin,
          ts,
          REGIONS,
        )
        expect(got === 1).toBe(expected)
      }),
      { numRuns: RUNS },
    )
    expect([...reached].sort()).toEqual(['false', 'true'])
  })

  it('DVV sync: set_sync is DvvSet.sync (a replica merging a logged set)', async () => {
    await fc.assert(
      fc.asyncProperty(set, set, async (a, b) => {
        const got = await lua(
          `local r = tonumber(ARGV[3])
           return set_encode(set_sync(set_parse(ARGV[1], r), set_parse(ARGV[2], r)))`,
          encodeSiblingSet(a),
          encodeSiblingSet(b),
          REGIONS,
        )
        expect(got).toBe(encodeSiblingSet(mergeSiblings(a, b)))
      }),
      { numRuns: RUNS },
    )
  })

  it('DVV update: sibling_write is writeSibling, refusals included', async () => {
    const reached = new Set<string>()
    await fc.assert(
      fc.asyncProperty(
        set,
        context,
        fc.nat(REGIONS - 1),
        sibling,
        async (local, ctx, region, s) => {
          const expected = outcome(() => encodeSiblingSet(writeSibling(local, ctx, s, region)))
          reached.add(expected[0] === 'ok' ? 'ok' : expected[1])
          const got = (await lua(
            `local r = tonumber(ARGV[5])
             local set, code = sibling_write(set_parse(ARGV[1], r), set_parse(ARGV[2], r), tonumber(ARGV[3]), ARGV[4])
             if not set then return { 'refused', code } end
             return { 'ok', set_encode(set) }`,
            contextText(ctx),
            encodeSiblingSet(local),
            region,
            siblingText(s),
            REGIONS,
          )) as [string, string]
          expect(got[0] === 'refused' ? ['refused', LUA_CODES[got[1]]] : got).toEqual(expected)
        },
      ),
      { numRuns: RUNS },
    )
    expect([...reached].sort()).toEqual(['COUNTER_EXHAUSTED', 'INVALID_CONTEXT', 'ok'])
  })

  it('reached both outcomes of every rule that can refuse', async () => {
    // A forged context (more writes of the region than the key had) and a counter at its bound.
    const local = decodeSiblingSet(`0${US}1${US}${hlcFrom(1, 0)}=1`, REGIONS)
    const forged = await lua(
      `local set, code = sibling_write(set_parse(ARGV[1], 3), set_parse(ARGV[2], 3), 0, ARGV[3])
       return code`,
      contextText([[0, 2]]),
      encodeSiblingSet(local),
      `${hlcFrom(2, 0)}-`,
    )
    expect(forged).toBe('CW_BAD_CONTEXT')
    const full = decodeSiblingSet(`1${US}${MAX_SAFE_COUNTER}`, REGIONS)
    const exhausted = await lua(
      `local set, code = sibling_write({}, set_parse(ARGV[1], 3), 1, ARGV[2])
       return code`,
      encodeSiblingSet(full),
      `${hlcFrom(2, 0)}-`,
    )
    expect(exhausted).toBe('CW_COUNTER_EXHAUSTED')
    const ts: Hlc = hlcFrom(MAX_MILLIS, 0xffff)
    expect(await lua(`return hlc_next(ARGV[1], ARGV[1], 0) or 'exhausted'`, ts)).toBe('exhausted')
  })
})
