import { HLC_ZERO } from '@causeway/core'
import { describe, expect, it } from 'vitest'
import { encodeMeta, type ReplicaMeta } from '../../src/storage/level/level-layout.js'

describe('encodeMeta', () => {
  it('writes the text JSON.stringify writes, so every reader of the meta parses it alike', () => {
    const metas: ReplicaMeta[] = [
      { format: 1, region: 0, partition: 0, regions: 1, sv: [0], epoch: 1, hlc: HLC_ZERO },
      {
        format: 1,
        region: 254,
        partition: 65_535,
        regions: 255,
        sv: Array.from({ length: 255 }, (_, i) => i * 1_000_003),
        epoch: 7,
        hlc: '00018f2a3b4c0001',
      },
      {
        format: 1,
        region: 1,
        partition: 3,
        regions: 2,
        sv: [Number.MAX_SAFE_INTEGER, 12],
        epoch: 2,
        hlc: 'ffffffffffffffff',
      },
    ]
    for (const meta of metas) {
      expect(encodeMeta(meta)).toBe(JSON.stringify(meta))
      expect(JSON.parse(encodeMeta(meta))).toEqual(meta)
    }
  })
})
