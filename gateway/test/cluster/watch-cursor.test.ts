import { describe, expect, it } from 'vitest'
import { decodeCursor, encodeCursor } from '../../src/cluster/watch-cursor.js'

const shape = { cluster: 'c-1', regions: 3, partitions: 8 }

describe('change-feed cursors', () => {
  it('round-trip the positions of the watched partitions', () => {
    const positions = new Map([
      [5, { epoch: 2, idx: [0, 2 ** 40, 7] }],
      [0, { epoch: 1, idx: [1, 0, 300] }],
    ])
    const text = encodeCursor(shape, positions)
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/)
    expect([...decodeCursor(text, shape)].sort(([a], [b]) => a - b)).toEqual([
      [0, { epoch: 1, idx: [1, 0, 300] }],
      [5, { epoch: 2, idx: [0, 2 ** 40, 7] }],
    ])
  })

  it('refuses a cursor of another cluster or shape, and anything malformed', () => {
    const text = encodeCursor(shape, new Map([[1, { epoch: 1, idx: [1, 2, 3] }]]))
    const bytes = Buffer.from(text, 'base64url')
    const cases = [
      encodeCursor({ ...shape, cluster: 'other' }, new Map()),
      encodeCursor({ ...shape, partitions: 4 }, new Map()),
      encodeCursor({ ...shape, regions: 2 }, new Map()),
      bytes.subarray(0, bytes.length - 1).toString('base64url'),
      Buffer.concat([bytes, Buffer.from([0])]).toString('base64url'),
      Buffer.concat([Buffer.from([2]), bytes.subarray(1)]).toString('base64url'),
      'not a cursor!',
      '',
    ]
    for (const bad of cases)
      expect(() => decodeCursor(bad, shape), bad).toThrow(
        expect.objectContaining({ code: 'INVALID_CURSOR' }),
      )
  })
})
