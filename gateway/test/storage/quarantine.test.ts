/**
 * The quarantine registry: each key reported once however often it is hit, at most
 * `linesPerMinute` report lines a minute (the rest counted and mentioned), exact counts and the
 * keys quarantined now in the status.
 */
import { describe, expect, it } from 'vitest'
import { QuarantineRegistry } from '../../src/storage/quarantine.js'

const place = (key: string, replica = 0) => ({ region: 0, partition: 1, replica, key })
const event = (key: string, replica = 0) => ({
  ...place(key, replica),
  kind: 'siblings' as const,
  reason: 'malformed sibling set: bad counter "9007199254740992"',
})

describe('QuarantineRegistry', () => {
  it('reports a key once, lists it until it is repaired, and counts everything', () => {
    const lines: string[] = []
    let now = Date.parse('2026-01-01T00:00:00Z')
    const registry = new QuarantineRegistry({ log: (l) => lines.push(l), now: () => now })
    for (let i = 0; i < 100; i++) registry.quarantined(event('cart:1'))
    registry.quarantined(event('cart:1', 1)) // the same key at a follower is another place
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/quarantined "cart:1" at replica 0 of partition 1 in region 0/)
    expect(registry.status()).toEqual({
      quarantined: 2,
      detected: 2,
      repaired: 0,
      skippedEntries: 0,
      keys: [
        {
          partition: 1,
          replica: 0,
          key: 'cart:1',
          kind: 'siblings',
          reason: event('cart:1').reason,
          since: '2026-01-01T00:00:00.000Z',
        },
        expect.objectContaining({ replica: 1, key: 'cart:1' }),
      ],
    })
    now += 1000
    registry.repaired(place('cart:1'))
    registry.repaired(place('cart:1')) // nothing more to repair
    registry.repaired(place('never-quarantined'))
    registry.skipped({ ...place('cart:2'), origin: 1, idx: 7, reason: 'bad actor' })
    expect(registry.status()).toMatchObject({
      quarantined: 1,
      detected: 2,
      repaired: 1,
      skippedEntries: 1,
    })
    expect(lines.at(-2)).toMatch(/rebuilt "cart:1" from the log/)
    expect(lines.at(-1)).toMatch(/entry 1:7 for "cart:2" .* logged but not merged/)
  })

  it('writes at most linesPerMinute lines a minute and says how many it dropped', () => {
    const lines: string[] = []
    let now = 0
    const registry = new QuarantineRegistry({
      log: (l) => lines.push(l),
      now: () => now,
      linesPerMinute: 3,
      maxListed: 5,
    })
    for (let i = 0; i < 50; i++) registry.quarantined(event(`k:${i}`))
    expect(lines).toHaveLength(3)
    const status = registry.status()
    expect(status.quarantined).toBe(50)
    expect(status.keys).toHaveLength(5)
    now += 60_000
    registry.quarantined(event('k:late'))
    expect(lines).toHaveLength(4)
    expect(lines[3]).toMatch(/k:late.*\(47 more quarantine reports were dropped\)/)
  })
})
