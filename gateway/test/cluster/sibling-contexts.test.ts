/**
 * Signed sibling contexts (`sibling-contexts.ts`) and how a leader takes one (`writeSibling`): a
 * context verifies only for the key and cluster it was issued for, under the current secret or a
 * previous one; an unsigned or altered one is `INVALID_CONTEXT`; and a verified context counts as
 * it was issued, also for writes not received here yet (no false conflict).
 */
import type { CausewayError } from '@causeway/core'
import {
  DvvSet,
  decodeCausalContext,
  encodeCausalContext,
  siblingActor,
  type SiblingSet,
} from '@causeway/core'
import { describe, expect, it } from 'vitest'
import { SiblingContexts } from '../../src/cluster/sibling-contexts.js'
import { writeSibling } from '../../src/storage/sibling-set.js'

const secret = (n: number) => new Uint8Array(32).fill(n)

function code(run: () => unknown): string | undefined {
  try {
    run()
    return undefined
  } catch (error) {
    return (error as CausewayError).code
  }
}

describe('signed sibling contexts', () => {
  const contexts = new SiblingContexts([secret(1)])

  it('verify what they issued, for that key only', () => {
    const text = contexts.issue('cart:1', [
      [0, 3],
      [1, 2],
    ])
    expect(decodeCausalContext(text)).toEqual([
      [0, 3],
      [1, 2],
    ])
    expect(contexts.verify('cart:1', text, 2)).toEqual([
      [0, 3],
      [1, 2],
    ])
    expect(code(() => contexts.verify('cart:2', text, 2))).toBe('INVALID_CONTEXT')
  })

  it('refuse unsigned, altered and foreign contexts; an empty one claims nothing and passes', () => {
    expect(code(() => contexts.verify('cart:1', encodeCausalContext([[1, 5]]), 2))).toBe(
      'INVALID_CONTEXT',
    )
    // The context of issue 23 (r1's counter at 2^53 - 2), unsigned.
    expect(code(() => contexts.verify('cart:v', 'wQEB_v_______w8', 2))).toBe('INVALID_CONTEXT')
    const text = contexts.issue('cart:1', [[0, 3]])
    const altered = text.slice(0, 3) + (text[3] === 'A' ? 'B' : 'A') + text.slice(4)
    expect(code(() => contexts.verify('cart:1', altered, 2))).toBe('INVALID_CONTEXT')
    const other = new SiblingContexts([secret(2)])
    expect(code(() => other.verify('cart:1', text, 2))).toBe('INVALID_CONTEXT')
    expect(contexts.verify('cart:1', encodeCausalContext([]), 2)).toEqual([])
  })

  it('accept contexts of a previous secret during a rotation, and sign with the current one', () => {
    const before = contexts.issue('cart:1', [[0, 3]])
    const rotated = new SiblingContexts([secret(2), secret(1)])
    expect(rotated.verify('cart:1', before, 2)).toEqual([[0, 3]])
    const after = rotated.issue('cart:1', [[0, 4]])
    expect(code(() => contexts.verify('cart:1', after, 2))).toBe('INVALID_CONTEXT')
    // Once the old secret is dropped, its contexts are refused.
    expect(code(() => new SiblingContexts([secret(2)]).verify('cart:1', before, 2))).toBe(
      'INVALID_CONTEXT',
    )
  })

  it('name actors of later epochs, of the cluster’s regions only', () => {
    const actor = siblingActor(1, 3)
    const text = contexts.issue('cart:1', [[actor, 1]])
    expect(contexts.verify('cart:1', text, 2)).toEqual([[actor, 1]])
    expect(code(() => contexts.verify('cart:1', contexts.issue('cart:1', [[2, 1]]), 2))).toBe(
      'INVALID_CONTEXT',
    )
  })
})

describe('a leader takes a signed context as it names its counters', () => {
  const held: SiblingSet = {
    entries: [
      [0, 2, [{ ts: '0000000000010000' as never, value: '"a"' }]],
      [1, 1, [{ ts: '0000000000020000' as never, value: '"b"' }]],
    ],
    anonymous: [],
  }

  it('so a write with a context read in another region supersedes what it saw there when it arrives (no false conflict)', () => {
    // The context saw region 1's writes 1 and 2; only write 1 has arrived here.
    const next = writeSibling(
      held,
      [
        [0, 2],
        [1, 2],
      ],
      { ts: '0000000000030000' as never, value: '"c"' },
      0,
    )
    const arrived: SiblingSet = {
      entries: [
        [
          1,
          2,
          [
            { ts: '0000000000025000' as never, value: '"b2"' },
            { ts: '0000000000020000' as never, value: '"b"' },
          ],
        ],
      ],
      anonymous: [],
    }
    const merged = DvvSet.sync([next, arrived])
    expect(DvvSet.values(merged)).toEqual([{ ts: '0000000000030000', value: '"c"' }])
  })

  it('mints under the actor it is given, and refuses a claim on that actor beyond what it holds', () => {
    const actor = siblingActor(0, 2)
    const next = writeSibling(
      held,
      [[0, 2]],
      { ts: '0000000000030000' as never, value: '"c"' },
      actor,
    )
    expect(DvvSet.join(next)).toEqual([
      [0, 2],
      [1, 1],
      [actor, 1],
    ])
    expect(code(() => writeSibling(held, [[0, 3]], { ts: '0000000000030000' as never }, 0))).toBe(
      'INVALID_CONTEXT',
    )
  })
})
