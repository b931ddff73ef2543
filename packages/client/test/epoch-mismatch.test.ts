/**
 * `EPOCH_MISMATCH`: the session depends on writes a failover lost. The SDK throws an
 * `EpochMismatchError` naming them, or, with `onEpochMismatch: 'rebase'`, re-bases the partition's
 * positions on what was kept and sends the call once more, never with the lost positions again.
 */
import { EpochMismatchError, partitionOf } from '@causeway/core'
import { describe, expect, it } from 'vitest'
import { type ConnectOptions, connect } from '../src/index.js'
import { FakeGateway, readOk, writeOk } from './fake-gateway.js'

const KEY = 'cart:1'
const P = partitionOf(KEY, 4)
const lost = { region: 0, epoch: 1, idx: 60, kept: 58, keptEpoch: 1 }
const mismatch = {
  status: 409,
  body: {
    statusCode: 409,
    code: 'EPOCH_MISMATCH',
    message: 'the session depends on writes partition 1 no longer has: ...',
    details: { partition: P, lost: [lost], current: 2 },
  },
}

async function sessionThatWrote60(options: Partial<ConnectOptions> = {}) {
  const gw = new FakeGateway()
  const db = await connect({ url: 'http://us.test', transport: gw, ...options })
  gw.reply(writeOk({ dc: 0, idx: 60, epoch: 1 }))
  await db.put(KEY, 'x')
  return { db, gw }
}

describe('EPOCH_MISMATCH', () => {
  it('throws an EpochMismatchError with the lost positions, and leaves the session alone', async () => {
    const { db, gw } = await sessionThatWrote60()
    gw.reply(mismatch)
    const error = await db.get(KEY).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(EpochMismatchError)
    expect((error as EpochMismatchError).partition).toBe(P)
    expect((error as EpochMismatchError).lost).toEqual([lost])
    expect(db.session.row(P)!.hwm[0]).toBe(60)
    // The documented way on: re-base, then the next call sends what was kept.
    db.session.rebase(P, (error as EpochMismatchError).lost)
    gw.reply(readOk())
    await db.get(KEY)
    expect(gw.kv.at(-1)!.headers['causeway-after']).toBe('0:58@1')
  })

  it("with onEpochMismatch: 'rebase', re-bases and sends the call once more (a read, and a write)", async () => {
    const { db, gw } = await sessionThatWrote60({ defaults: { onEpochMismatch: 'rebase' } })
    gw.reply(mismatch, readOk({ found: false, value: undefined, dc: undefined, idx: undefined }))
    const read = await db.get(KEY)
    expect(read.found).toBe(false)
    expect(gw.kv.slice(-2).map((r) => r.headers['causeway-after'])).toEqual(['0:60@1', '0:58@1'])
    // A write refused the same way is sent again (it was not applied), with what was kept.
    db.session.observeWrite(P, { dc: 0, idx: 60, ts: '0000000000020000', epoch: 1 })
    gw.reply(mismatch, writeOk({ dc: 0, idx: 1001, epoch: 2 }))
    const written = await db.put(KEY, 'y')
    expect(written).toMatchObject({ idx: 1001, epoch: 2 })
    expect(gw.kv.slice(-2).map((r) => r.headers['causeway-after'])).toEqual(['0:60@1', '0:58@1'])
    // Once: a second refusal is thrown.
    db.session.observeWrite(P, { dc: 0, idx: 70, ts: '0000000000030000', epoch: 1 })
    gw.reply(mismatch, mismatch)
    await expect(db.get(KEY)).rejects.toBeInstanceOf(EpochMismatchError)
  })

  it("a call's option wins over the client's, and a bad one is INVALID_OPTION", async () => {
    const { db, gw } = await sessionThatWrote60({ defaults: { onEpochMismatch: 'rebase' } })
    gw.reply(mismatch)
    await expect(db.get(KEY, { onEpochMismatch: 'throw' })).rejects.toBeInstanceOf(
      EpochMismatchError,
    )
    await expect(db.get(KEY, { onEpochMismatch: 'ignore' as 'throw' })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
    })
  })
})
