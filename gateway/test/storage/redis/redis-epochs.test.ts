/**
 * The epochs of a Redis replica (`epoch-scripts.ts`), on real redis-servers: a leader claim starts
 * epoch 1 on a fresh store and a new epoch above every reserved index on a store another process
 * led; writes go only under the claim of the server process they were sent for (a restarted
 * process, even on the same data, is another) and only up to the reserved ceiling, which a
 * writer moves up once a follower has the reservation; a receiver refuses an envelope that
 * disagrees with what it holds of its origin, moves past a lost range a new epoch declares, notes
 * entries it holds that the origin lost, and takes the origin again once its history agrees.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import {
  CausewayError,
  HLC_ZERO,
  INITIAL_HISTORY,
  checkHistory,
  hlcFrom,
  shipEnvelope,
} from '@causeway/core'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { RedisServerAdmin } from '../../../src/storage/redis/server-admin.js'
import { replicasClosedAfterEach } from '../../support/redis-replicas.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { entry } from '../../support/log-entries.js'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(stopAllRedis)

const replicaOn = replicasClosedAfterEach('epochs')

async function runIdOf(target: RedisServer): Promise<string> {
  const admin = new RedisServerAdmin(target.url)
  try {
    for (let i = 0; i < 100; i++) {
      try {
        return (await admin.info()).runId
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
    throw new Error('no INFO')
  } finally {
    admin.close()
  }
}

async function refusal(promise: Promise<unknown>): Promise<CausewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!(error instanceof CausewayError)) throw new Error(`expected a refusal, got ${String(error)}`)
  return error
}

describe('the leader claim', () => {
  it('starts epoch 1 on a fresh store, and writes then go under it', async () => {
    const r = replicaOn(server, { supervised: true })
    await r.open()
    expect(r.epoch()).toBe(1)
    // Supervised: no claim, no write.
    expect((await refusal(r.write('k', '1', HLC_ZERO))).code).toBe('BACKEND_UNAVAILABLE')
    const runId = await runIdOf(server)
    expect(await r.claim(runId, 'here', 0, 1)).toEqual([{ epoch: 1, first: 1 }])
    r.lead(runId)
    expect((await r.write('k', '1', HLC_ZERO)).idx).toBe(1)
    // Claimed again by the same process: nothing changes.
    expect(await r.claim(runId, 'here', 0, 1)).toEqual([{ epoch: 1, first: 1 }])
    expect((await r.claimState()).epoch).toBe(1)
  })

  it('a new leader process starts the next epoch above everything reserved; positions of the old one past what it kept are lost', async () => {
    const r = replicaOn(server, { supervised: true, ceilingStep: 100 })
    await r.open()
    await r.claim('old-process', 'there', 0, 1)
    // The store as an old leader left it (no such process writes here now): 5 entries, 100
    // reserved.
    const runId = await runIdOf(server)
    await r.claim(runId, 'here', 0, 1) // a new process: epoch 2
    r.lead(runId)
    for (let i = 0; i < 5; i++) await r.write(`k${i}`, String(i), HLC_ZERO)
    const state = await r.claimState()
    expect(state).toMatchObject({ epoch: 2, leader: runId, leaderAddr: 'here' })
    expect(state.reserved).toBeGreaterThanOrEqual(5 + 100 - 50)
    const next = await r.claim('newer-process', 'elsewhere', 0, 1)
    const history = checkHistory(next)
    expect(history.at(-1)).toEqual({ epoch: 3, first: state.reserved + 1 })
    expect(history.at(-2)).toEqual({ epoch: 2, first: 1, last: 5 })
    // A store claimed by another process takes no writes from this one.
    const lost = await refusal(r.write('k9', '9', HLC_ZERO))
    expect(lost.code).toBe('BACKEND_UNAVAILABLE')
    expect(r.leading).toBe(false)
  })

  it('a claim starts above what the other replicas reserved or hold, and after their epochs', async () => {
    const r = replicaOn(server, { supervised: true })
    await r.open()
    const history = await r.claim('p1', 'a', 7, 5001)
    expect(history).toEqual([
      { epoch: 1, first: 1, last: 0 },
      { epoch: 8, first: 5001 },
    ])
    expect(r.sv()[0]).toBe(5000)
  })
})

describe('the write fence', () => {
  it('refuses writes under a claim after its server process restarted, on the same data', async () => {
    const own = await startRedis()
    const r = replicaOn(own, { supervised: true, reconnectMaxDelayMs: 50 })
    await r.open()
    const before = await runIdOf(own)
    await r.claim(before, 'here', 0, 1)
    r.lead(before)
    await r.write('k', '1', HLC_ZERO)
    await own.kill()
    await own.restart()
    // The replica lets go of the claim when it reconnects: the server may be another process.
    await vi.waitFor(() => expect(r.leading).toBe(false), { timeout: 10_000, interval: 20 })
    // And the server refuses a write under the old claim even if a gateway had not noticed:
    // the store still names `before` (the AOF kept it), but this is another process.
    r.lead(before)
    const refused = await waitForRefusal(() => r.write('k', '2', HLC_ZERO))
    expect(refused.details?.['reason']).toMatch(/^CW_NOT_LEADER/)
    expect(r.leading).toBe(false)
    const after = await runIdOf(own)
    expect(after).not.toBe(before)
    await r.claim(after, 'here', 0, 1)
    r.lead(after)
    const written = await r.write('k', '3', HLC_ZERO)
    expect(r.epoch()).toBe(2)
    // No index is issued twice: the new epoch starts above the old reservation.
    expect(written.idx).toBeGreaterThan(1)
    expect(r.epochHistory(0)).toEqual([
      { epoch: 1, first: 1, last: 1 },
      { epoch: 2, first: written.idx },
    ])
  })

  it('writes up to the ceiling, reserving more as it goes; a leader whose follower cannot confirm stops there', async () => {
    // A short command timeout: the refused reservation waits for it (WAIT), and the test's budget
    // must hold on a busy machine.
    const r = replicaOn(server, {
      supervised: true,
      ceilingStep: 10,
      ceilingReplicas: 1,
      commandTimeoutMs: 1000,
    })
    await r.open()
    const runId = await runIdOf(server)
    await r.claim(runId, 'here', 0, 1)
    r.lead(runId)
    // No follower: the reservation is never confirmed, so no index is issued.
    const refused = await refusal(r.write('k', '1', HLC_ZERO))
    expect(refused.code).toBe('BACKEND_UNAVAILABLE')
    expect(refused.message).toMatch(/replicas needed confirmed the index reservation/)
    const follower = await startRedis()
    await follower.replicaOf(server)
    for (let i = 0; i < 25; i++) await r.write(`k${i}`, String(i), HLC_ZERO)
    const state = await r.claimState()
    expect(state.sv[0]).toBe(25)
    expect(state.reserved).toBeGreaterThanOrEqual(25)
    // Killed: nothing here needs its data.
    await follower.kill()
  }, 60_000)

  it('fences transaction commits like writes: under the claim, within the reserved ceiling', async () => {
    const own = await startRedis()
    const r = replicaOn(own, { supervised: true, ceilingStep: 4, reconnectMaxDelayMs: 50 })
    await r.open()
    const commit = (tid: number) => ({
      tid,
      ts: hlcFrom(Date.now(), tid),
      writes: [[`t${tid}`, String(tid)] as const] as [string, string][],
    })
    // No claim, no commit.
    expect((await refusal(r.commit([commit(1)]))).code).toBe('BACKEND_UNAVAILABLE')
    const before = await runIdOf(own)
    await r.claim(before, 'here', 0, 1)
    r.lead(before)
    // A round of more commits than one ceiling step: the ceiling is raised for all of them first.
    const round = await r.commit([1, 2, 3, 4, 5, 6, 7, 8, 9].map(commit))
    expect(round.map((e) => e.idx)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect((await r.claimState()).reserved).toBeGreaterThanOrEqual(9)
    // The store names another claim while this process still believes it leads, with room left
    // under its ceiling: the commit script itself refuses, whole.
    const direct = new Redis(own.url)
    await direct.hset(r.keys.meta, 'leader', 'another-process')
    direct.disconnect()
    const taken = await refusal(r.commit([commit(10)]))
    expect(taken.details?.['reason']).toMatch(/^CW_NOT_LEADER/)
    expect(r.leading).toBe(false)
    expect(r.committedTid()).toBe(9)
    expect(await r.readLog(0, 9, 10)).toEqual([])
  }, 30_000)

  it('refuses transaction commits under a claim after its server process restarted', async () => {
    const own = await startRedis()
    const r = replicaOn(own, { supervised: true, reconnectMaxDelayMs: 50 })
    await r.open()
    const before = await runIdOf(own)
    await r.claim(before, 'here', 0, 1)
    r.lead(before)
    const ts = hlcFrom(Date.now(), 1)
    await r.commit([{ tid: 1, ts, writes: [['t1', '1']] }])
    await own.kill()
    await own.restart()
    await vi.waitFor(() => expect(r.leading).toBe(false), { timeout: 10_000, interval: 20 })
    r.lead(before)
    const refused = await waitForRefusal(() => r.commit([{ tid: 2, ts, writes: [['t2', '2']] }]))
    expect(refused.details?.['reason']).toMatch(/^CW_NOT_LEADER/)
    expect(r.leading).toBe(false)
    expect(r.committedTid()).toBe(1)
    expect(await r.readLog(0, 1, 10)).toEqual([])
  }, 30_000)

  it('leaves a replica used on its own (unsupervised) without claim or ceiling', async () => {
    const r = replicaOn(server)
    await r.open()
    for (let i = 0; i < 3; i++) expect((await r.write('k', String(i), HLC_ZERO)).idx).toBe(i + 1)
    expect(r.epochHistory(0)).toEqual(INITIAL_HISTORY)
  })
})

describe('receiving', () => {
  const t = Date.now()
  const e = (idx: number, c = 0) => entry(1, idx, `k${idx}`, `"${idx}"`, hlcFrom(t, idx * 10 + c))

  it('refuses an entry at a known position that is another write, and notes the divergence', async () => {
    const r = replicaOn(server)
    await r.open()
    expect(await r.receive(shipEnvelope(1, 1, [e(1), e(2), e(3)]))).toBe(3)
    // The sender lost 2..3 and issued them again, in the same epoch: another write at 3.
    const error = await refusal(r.receive(shipEnvelope(1, 1, [e(3, 1), e(4)])))
    expect(error.code).toBe('SHIPPING_DIVERGED')
    expect(error.message).toContain('entry 3 of region 1')
    expect(r.sv()[1]).toBe(3)
    expect([...(await r.divergence())][0]).toEqual([1, expect.stringMatching(/^diverged /)])
    // Resent as it was (a retry), it is skipped as before, and the link resumes.
    expect(await r.receive(shipEnvelope(1, 1, [e(3), e(4)]))).toBe(4)
    expect((await r.divergence()).size).toBe(0)
  })

  it('moves past a range a new epoch declares lost, and notes entries it holds that the origin lost', async () => {
    const r = replicaOn(server)
    await r.open()
    await r.receive(shipEnvelope(1, 1, [e(1), e(2), e(3), e(4)]))
    // Region 1's new leader kept 1..2 (3 and 4 reached only this region) and starts epoch 2 at 101.
    const history = checkHistory([
      { epoch: 1, first: 1, last: 2 },
      { epoch: 2, first: 101 },
    ])
    expect(await r.receive(shipEnvelope(1, history, [e(101), e(102)]))).toBe(102)
    expect(r.epochHistory(1)).toEqual(history)
    expect([...(await r.divergence())][0]).toEqual([1, expect.stringMatching(/^extra 3\.\.4 /)])
    // A history that does not extend what it learned (another end of epoch 1) is refused.
    const other = checkHistory([
      { epoch: 1, first: 1, last: 3 },
      { epoch: 2, first: 101 },
    ])
    const error = await refusal(r.receive(shipEnvelope(1, other, [e(103)])))
    expect(error.code).toBe('SHIPPING_DIVERGED')
    expect(r.sv()[1]).toBe(102)
  })

  it('waits at a gap inside an epoch, as before', async () => {
    const r = replicaOn(server)
    await r.open()
    await r.receive(shipEnvelope(1, 1, [e(1)]))
    const history = checkHistory([
      { epoch: 1, first: 1, last: 5 },
      { epoch: 2, first: 101 },
    ])
    // The sender kept up to 5: 2..5 must come before 101.
    expect(await r.receive(shipEnvelope(1, history, [e(101)]))).toBe(1)
  })
})

// Retries a write until the replica has reconnected and the server refuses it.
async function waitForRefusal(write: () => Promise<unknown>): Promise<CausewayError> {
  for (let i = 0; i < 200; i++) {
    const error = await refusal(write())
    // Refused here while the connection comes back: ask again.
    if (typeof error.details?.['reason'] === 'string' && /^CW_/.test(error.details['reason']))
      return error
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('the write was never refused by the server')
}
