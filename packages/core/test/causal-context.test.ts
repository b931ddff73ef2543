import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  CAUSAL_CONTEXT_FORMAT,
  DEFAULT_MAX_CONTEXT_BYTES,
  type DecodeContextOptions,
  decodeCausalContext,
  decodeCausalContextBytes,
  encodeCausalContext,
  encodeCausalContextBytes,
} from '../src/causal-context.js'
import { MAX_SAFE_COUNTER } from '../src/counter-bounds.js'
import { type CausalContext, DvvSet } from '../src/dvvset.js'
import { CausewayError } from '../src/errors.js'

const MAX = Number.MAX_SAFE_INTEGER

function bytes(...b: number[]): Uint8Array {
  return Uint8Array.from(b)
}

function rejectedWith(run: () => unknown): CausewayError {
  try {
    run()
  } catch (err) {
    expect(err).toBeInstanceOf(CausewayError)
    const e = err as CausewayError
    expect(e.code).toBe('INVALID_CONTEXT')
    expect(e.status).toBe(400)
    return e
  }
  throw new Error('expected INVALID_CONTEXT, but it was accepted')
}

function expectInvalidBytes(b: Uint8Array, why: RegExp, options?: DecodeContextOptions): void {
  expect(rejectedWith(() => decodeCausalContextBytes(b, options)).message).toMatch(why)
  // The same bytes as text fail the same way.
  const text = Buffer.from(b).toString('base64url')
  expect(rejectedWith(() => decodeCausalContext(text, options)).message).toMatch(why)
}

function expectInvalidText(text: string, why: RegExp, options?: DecodeContextOptions): void {
  expect(rejectedWith(() => decodeCausalContext(text, options)).message).toMatch(why)
}

/** Valid contexts: strictly ascending actors, counters 1..2^53-2, small values more likely. */
const contextArb: fc.Arbitrary<CausalContext> = fc
  .uniqueArray(fc.oneof(fc.nat(300), fc.integer({ min: 0, max: MAX })), { maxLength: 40 })
  .chain((actors) =>
    fc.tuple(
      fc.constant(actors.sort((a, b) => a - b)),
      fc.array(
        fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: MAX_SAFE_COUNTER })),
        {
          minLength: actors.length,
          maxLength: actors.length,
        },
      ),
    ),
  )
  .map(([actors, counters]) => actors.map((a, i) => [a, counters[i]!] as const))

describe('causal context encoding', () => {
  it('has the documented layout', () => {
    const ctx: CausalContext = [
      [0, 3],
      [2, 1],
    ]
    expect([...encodeCausalContextBytes(ctx)]).toEqual([0xc1, 0x02, 0x00, 0x03, 0x02, 0x01])
    expect(encodeCausalContext(ctx)).toBe('wQIAAwIB')
    expect(decodeCausalContext('wQIAAwIB')).toEqual(ctx)
    expect(CAUSAL_CONTEXT_FORMAT).toBe(0xc1)
  })

  it('encodes the empty context and large counters', () => {
    expect(encodeCausalContext([])).toBe('wQA')
    expect(decodeCausalContext('wQA')).toEqual([])
    expect([...encodeCausalContextBytes([[1, 300]])]).toEqual([0xc1, 0x01, 0x01, 0xac, 0x02])
    const big: CausalContext = [
      [0, MAX_SAFE_COUNTER],
      [MAX, 2 ** 32 + 1],
    ]
    expect(decodeCausalContext(encodeCausalContext(big))).toEqual(big)
  })

  it('keeps three regions with large counters well under 40 bytes', () => {
    const text = encodeCausalContext([
      [0, 1_000_000],
      [1, 250_000],
      [2, 3],
    ])
    expect(text.length).toBeLessThan(20)
  })

  it('round-trips any valid context, in the same text as standard base64url', () => {
    fc.assert(
      fc.property(contextArb, (ctx) => {
        const binary = encodeCausalContextBytes(ctx)
        const text = encodeCausalContext(ctx)
        expect(text).toBe(Buffer.from(binary).toString('base64url'))
        expect(decodeCausalContext(text)).toEqual(ctx)
        expect(decodeCausalContextBytes(binary)).toEqual(ctx)
      }),
      { numRuns: 300 },
    )
  })

  it('carries a DvvSet join to a write that supersedes what was read', () => {
    const local = DvvSet.update(DvvSet.new('"v2"'), DvvSet.update(DvvSet.new('"v1"'), 0), 1)
    const wire = encodeCausalContext(DvvSet.join(local))
    const written = DvvSet.update(
      DvvSet.new(decodeCausalContext(wire, { regions: 3 }), '"v3"'),
      local,
      2,
    )
    expect(DvvSet.values(written)).toEqual(['"v3"'])
  })

  it('refuses to encode what is not a version vector', () => {
    const bad: unknown[] = [
      [
        [1, 1],
        [0, 1],
      ],
      [
        [1, 1],
        [1, 2],
      ],
      [[-1, 1]],
      [[0.5, 1]],
      [[0, 0]],
      [[0, 1.5]],
      [[0, MAX + 1]],
      [[0, MAX]],
      [['a', 1]],
    ]
    for (const ctx of bad) rejectedWith(() => encodeCausalContextBytes(ctx as CausalContext))
  })
})

describe('causal context decoding rejects', () => {
  it('a wrong format or version byte, and foreign blobs', () => {
    expectInvalidBytes(bytes(0xc3, 0x00), /unknown format or version 0xc3/)
    expectInvalidBytes(bytes(0x01, 0x00), /unknown format or version 0x01/)
    // A JSON session or a Riak-style base64 vclock is not a context.
    expectInvalidText(
      Buffer.from('{"v":1}').toString('base64url'),
      /unknown format or version 0x7b/,
    )
  })

  it('empty and truncated input', () => {
    expectInvalidText('', /empty/)
    expectInvalidBytes(bytes(0xc1), /truncated \(entry count\)/)
    expectInvalidBytes(bytes(0xc1, 0x01, 0x00), /truncated/)
    expectInvalidBytes(bytes(0xc1, 0x01, 0x00, 0x80), /truncated \(counter\)/)
    expectInvalidBytes(bytes(0xc1, 0x02, 0x00, 0x03), /truncated \(fewer entries than announced\)/)
    expectInvalidBytes(bytes(0xc1, 0x80), /truncated \(entry count\)/)
    // An absurd count is refused before anything is allocated for it.
    expectInvalidBytes(
      bytes(0xc1, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x01),
      /fewer entries than announced/,
    )
  })

  it('trailing bytes', () => {
    expectInvalidBytes(bytes(0xc1, 0x00, 0x00), /1 trailing bytes/)
    expectInvalidBytes(bytes(0xc1, 0x01, 0x00, 0x01, 0xff, 0xff), /2 trailing bytes/)
  })

  it('non-canonical varints', () => {
    expectInvalidBytes(bytes(0xc1, 0x01, 0x80, 0x00, 0x01), /non-canonical varint \(actor\)/)
    expectInvalidBytes(bytes(0xc1, 0x01, 0x00, 0x81, 0x00), /non-canonical varint \(counter\)/)
    expectInvalidBytes(bytes(0xc1, 0x80, 0x00), /non-canonical varint \(entry count\)/)
  })

  it('duplicate or unsorted actors', () => {
    expectInvalidBytes(bytes(0xc1, 0x02, 0x01, 0x01, 0x01, 0x02), /actor 1 appears twice/)
    expectInvalidBytes(bytes(0xc1, 0x02, 0x02, 0x01, 0x01, 0x01), /not in ascending order/)
  })

  it('counters and actors out of range', () => {
    expectInvalidBytes(bytes(0xc1, 0x01, 0x00, 0x00), /counter 0 of actor 0 out of range/)
    // 2^53 needs 8 varint bytes and is one past the largest safe integer.
    expectInvalidBytes(
      bytes(0xc1, 0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10),
      /counter out of range/,
    )
    expectInvalidBytes(
      bytes(0xc1, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
      /out of range/,
    )
    // 2^53 - 2 is the largest accepted: the leader's next dot, one more, is still exact.
    const top = bytes(0xc1, 0x01, 0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f)
    expect(decodeCausalContextBytes(top)).toEqual([[0, MAX_SAFE_COUNTER]])
    // 2^53 - 1: the forged context of issue 12, whose next dot would have been 2^53.
    const forged = bytes(0xc1, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f)
    expectInvalidBytes(forged, /counter 9007199254740991 of actor 0 out of range/)
    expect(Buffer.from(forged).toString('base64url')).toBe('wQEA_________w8')
    expectInvalidBytes(
      bytes(0xc1, 0x01, 0x03, 0x01),
      /actor 3 is not of a region of this cluster/,
      {
        regions: 3,
      },
    )
    expectInvalidBytes(
      bytes(0xc1, 0x02, 0x00, 0x01, 0x01, 0x01),
      /actor 1 is not of a region of this cluster/,
      {
        regions: 1,
      },
    )
    expect(decodeCausalContextBytes(bytes(0xc1, 0x01, 0x02, 0x01), { regions: 3 })).toEqual([
      [2, 1],
    ])
  })

  it('oversized input, before decoding it', () => {
    const many: [number, number][] = Array.from({ length: 500 }, (_, i) => [i, MAX_SAFE_COUNTER])
    const huge = encodeCausalContextBytes(many)
    expect(huge.length).toBeGreaterThan(DEFAULT_MAX_CONTEXT_BYTES)
    expectInvalidBytes(huge, /too large/)
    expectInvalidText('A'.repeat(100_000), /too large \(100000 characters/)
    const small = encodeCausalContext([
      [0, 1],
      [1, 1],
    ])
    expectInvalidText(small, /too large/, { maxBytes: 4 })
    expect(decodeCausalContext(small, { maxBytes: 6 })).toHaveLength(2)
  })

  it('anything but canonical base64url', () => {
    expectInvalidText('wQA=', /not base64url \(character "="/)
    expectInvalidText(' wQA', /not base64url \(character " "/)
    expectInvalidText('wQ+A', /not base64url/)
    expectInvalidText('wQ/A', /not base64url/)
    expectInvalidText('wQé', /not base64url/)
    expectInvalidText('wQAAA', /impossible length/)
    // 'wQB' carries the bytes C1 00 but sets one of the unused low bits.
    expectInvalidText('wQB', /non-zero trailing bits/)
    expect(rejectedWith(() => decodeCausalContext(42 as unknown as string)).message).toMatch(
      /not a string/,
    )
  })

  it('never fails otherwise: any text or bytes decode to a canonical context or INVALID_CONTEXT', () => {
    const accepts = (decoded: CausalContext) => {
      for (let i = 1; i < decoded.length; i++)
        expect(decoded[i]![0]).toBeGreaterThan(decoded[i - 1]![0])
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.boolean(), (raw, tagged) => {
        const b =
          tagged && raw.length > 0
            ? Uint8Array.from([CAUSAL_CONTEXT_FORMAT, ...raw.subarray(1)])
            : raw
        let decoded: CausalContext
        try {
          decoded = decodeCausalContextBytes(b)
        } catch (err) {
          expect((err as CausewayError).code).toBe('INVALID_CONTEXT')
          return
        }
        accepts(decoded)
        expect(encodeCausalContextBytes(decoded)).toEqual(b)
      }),
      { numRuns: 500 },
    )
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...'wQIAB-_/+=é 0aZ'), maxLength: 24 }),
        (text) => {
          let decoded: CausalContext
          try {
            decoded = decodeCausalContext(text)
          } catch (err) {
            expect((err as CausewayError).code).toBe('INVALID_CONTEXT')
            return
          }
          accepts(decoded)
          expect(encodeCausalContext(decoded)).toBe(text)
        },
      ),
      { numRuns: 500 },
    )
  })
})
