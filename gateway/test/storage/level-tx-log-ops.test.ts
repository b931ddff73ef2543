/**
 * Commit operation ids on the embedded transaction log (`LevelTxLog`, `level-op-records.ts`): a
 * bounded window of records per tenant and client, ids below it refused with `OP_EXPIRED` and
 * never appended, also after a reopen; an idle client keeps only its mark.
 */
import { HLC_ZERO } from '@causeway/core'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { LevelTxLog } from '../../src/storage/level/level-tx-log.js'

const opened: LevelTxLog[] = []
afterEach(async () => {
  for (const log of opened.splice(0)) if (log.available) await log.close()
})

const tx = (key: string) => ({
  dt: HLC_ZERO,
  snapshot: 0,
  reads: [],
  writes: [[key, JSON.stringify(key)] as const],
})
const op = (seq: number, tenant?: string) => ({
  namespace: '',
  id: `bank-window.${seq}`,
  fingerprint: `body-${seq}`,
  ...(tenant === undefined ? {} : { tenant }),
})

describe('commit operation ids on the embedded transaction log', () => {
  it('keeps a bounded window per tenant and client, and never appends an id below it', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    let now = Date.now()
    const open = async () => {
      const log = new LevelTxLog({
        region: 0,
        regions: 1,
        db,
        sync: false,
        now: () => now,
        opWindow: 2,
        opRetentionMs: 60_000,
      })
      opened.push(log)
      await log.open()
      return log
    }
    let log = await open()
    for (const seq of [2, 1, 3, 4])
      expect(await log.append(tx(`w:${seq}`), op(seq))).toHaveProperty('tid')
    await log.close()
    log = await open()
    expect(await log.append(tx('w:4'), op(4))).toMatchObject({ replayed: { idx: 4 } })
    for (const seq of [1, 2])
      await expect(log.append(tx(`w:${seq}`), op(seq))).rejects.toMatchObject({
        code: 'OP_EXPIRED',
        details: { remembered: 2 },
      })
    expect(await log.append(tx('w:1'), op(1, 'key:other'))).toMatchObject({ tid: 5 })
    const records = async () => (await db.keys({ gte: 'or/', lt: 'or0' }).all()).length
    expect(await records()).toBe(3) // two of the client's, one of the other tenant's
    // Idle past the retention: a resend is refused; the next id drops the old records.
    now += 120_000
    await expect(log.append(tx('w:4'), op(4))).rejects.toMatchObject({ code: 'OP_EXPIRED' })
    expect(await log.append(tx('w:5'), op(5))).toMatchObject({ tid: 6 })
    expect(await records()).toBe(2)
    expect(log.lastTid()).toBe(6)
  })
})
