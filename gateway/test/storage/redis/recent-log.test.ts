/**
 * The run of latest own log entries a Redis leader keeps for its shipper (`recent-log.ts`): it
 * answers only what it holds, consecutive from the asked idx, and a gap starts it over.
 */
import { HLC_ZERO } from '@causeway/core'
import { describe, expect, it } from 'vitest'
import { RecentLog } from '../../../src/storage/redis/recent-log.js'
import { entry } from '../../support/log-entries.js'

const at = (idx: number, origin = 0) => entry(origin, idx, `k${idx}`, '"v"', HLC_ZERO, idx)

describe('RecentLog', () => {
  it('answers consecutive entries from the asked idx, up to the limit or the end of its run', () => {
    const log = new RecentLog()
    expect(log.after(0, 0, 10)).toBeUndefined()
    for (let i = 1; i <= 5; i++) log.add(at(i))
    expect(log.after(0, 0, 10)?.map((e) => e.idx)).toEqual([1, 2, 3, 4, 5])
    expect(log.after(0, 2, 2)?.map((e) => e.idx)).toEqual([3, 4])
    // Nothing after the last: the caller asks the server, which may have more.
    expect(log.after(0, 5, 10)).toBeUndefined()
    expect(log.after(1, 0, 10)).toBeUndefined()
  })

  it('starts over at an entry that does not follow the last, and after clear', () => {
    const log = new RecentLog()
    for (let i = 1; i <= 3; i++) log.add(at(i))
    // Another writer's entries 4 and 5 came between.
    log.add(at(6))
    expect(log.after(0, 0, 10)).toBeUndefined()
    expect(log.after(0, 3, 10)).toBeUndefined()
    expect(log.after(0, 5, 10)?.map((e) => e.idx)).toEqual([6])
    // An idx seen before (a server that lost writes reissues it): only the new run counts.
    log.add(at(2))
    expect(log.after(0, 1, 10)?.map((e) => e.idx)).toEqual([2])
    log.clear()
    expect(log.after(0, 1, 10)).toBeUndefined()
  })

  it('keeps a bounded number of the latest entries', () => {
    const log = new RecentLog()
    for (let i = 1; i <= 20_000; i++) log.add(at(i))
    expect(log.after(0, 0, 10)).toBeUndefined()
    expect(log.after(0, 19_990, 100)?.map((e) => e.idx)).toEqual(
      Array.from({ length: 10 }, (_, i) => 19_991 + i),
    )
    expect(log.after(0, 20_000 - 4096, 1)?.[0]?.idx).toBe(20_000 - 4095)
    expect(log.after(0, 20_000 - 4097, 1)).toBeUndefined()
  })
})
