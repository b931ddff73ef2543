import {
  HLC_ZERO,
  compareVersions,
  deleteEntry,
  hlcFrom,
  putEntry,
  setOpEntry,
  siblingsEntry,
} from '@causeway/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type ReplicaMeta,
  decodeEntry,
  encodeEntry,
  encodeMeta,
  encodeVersion,
  storedVersionOrderKey,
  versionOrderKey,
} from '../../src/storage/level/level-layout.js'
import type { LogEntry } from '../../src/storage/partition-replica.js'

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

describe('version order keys', () => {
  const hlc = fc
    .tuple(fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.integer({ min: 0, max: 0xffff }))
    .map(([l, c]) => hlcFrom(l, c))
  const version = fc.record({
    ts: hlc,
    dc: fc.integer({ min: 0, max: 254 }),
    value: fc.option(fc.string(), { nil: undefined }),
  })

  it('order a stored version against a candidate as compareVersions does', () => {
    fc.assert(
      fc.property(version, version, (stored, candidate) => {
        const text = encodeVersion(
          stored.value === undefined ? { ts: stored.ts, dc: stored.dc } : stored,
        )
        const a = versionOrderKey(candidate.ts, candidate.dc)
        const b = storedVersionOrderKey(text)
        expect(Math.sign(a < b ? -1 : a > b ? 1 : 0)).toBe(
          Math.sign(compareVersions(candidate, stored)),
        )
      }),
    )
  })
})

describe('encodeEntry', () => {
  it('encodes an entry (frozen, as every entry is) once, and decodes it to an equal one', () => {
    const entry: LogEntry = putEntry({ origin: 0, idx: 1, key: 'k', ts: HLC_ZERO, at: 1 }, '"a"')
    expect(Object.isFrozen(entry)).toBe(true)
    expect(decodeEntry(0, 1, encodeEntry(entry))).toEqual(entry)
    expect(encodeEntry(entry)).toBe(encodeEntry(entry))
    for (const other of [
      deleteEntry(entry),
      siblingsEntry(entry, '0\u001f1'),
      setOpEntry(entry, '{"v":1,"adds":[],"removes":[]}'),
    ])
      expect(decodeEntry(0, 1, encodeEntry(other))).toEqual(other)
  })
})
