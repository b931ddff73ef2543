/**
 * The chaos suite's judge on planted faults: a run it must pass, and each kind of failure the
 * suite exists to catch (a lost majority write, a stale 200, a reused log index, diverged copies,
 * an error that is not an allowed refusal, writes that never resume) planted in a small history
 * and its logs, and caught.
 */
import { partitionOf } from '@causeway/core'
import type { Operation, WriteOperation } from '@causeway/history'
import { describe, expect, it } from 'vitest'
import {
  ALLOWED_ERRORS,
  checkRun,
  failureReasons,
  type LogCopy,
  type RunRecord,
} from './chaos-checks.js'
import { keysFor } from './run-scenario.js'

const PARTITIONS = 2
const [K] = keysFor('planted:', PARTITIONS, 1) as [string]
const P = partitionOf(K, PARTITIONS)

/** A HLC 16 hex digits long at `ms` (counter 0). */
function ts(ms: number): string {
  return (ms * 0x10000).toString(16).padStart(16, '0')
}

let clock = 0
function write(
  client: string,
  region: number,
  at: number,
  idx: number,
  durability: 'majority' | 'leader' = 'majority',
): WriteOperation {
  clock += 10
  return {
    client,
    op: 'put',
    key: K,
    value: `${client}@${at}`,
    level: 'session',
    durability,
    region,
    invokedAt: clock,
    completedAt: clock + 5,
    ok: true,
    reply: { ts: ts(at), dc: region, idx },
  }
}

function read(
  client: string,
  region: number,
  version?: { at: number; dc: number; value: string },
): Operation {
  clock += 10
  return {
    client,
    op: 'get',
    key: K,
    level: 'session',
    region,
    invokedAt: clock,
    completedAt: clock + 5,
    ok: true,
    reply: version
      ? { found: true, value: version.value, ts: ts(version.at), dc: version.dc }
      : { found: false },
  }
}

/** Every replica of both regions holding `entries` of origin `origin`. */
function copies(origin: number, entries: LogCopy['entries']): LogCopy[] {
  return [0, 1].flatMap((region) =>
    [0, 1, 2].map((replica) => ({
      region,
      copy: `replica ${replica}`,
      partition: P,
      origin,
      entries: [...entries],
    })),
  )
}

/** A clean run: c0 writes in region 0, reads it in region 1, writes there; logs agree. */
function cleanRun(): RunRecord {
  clock = 0
  const w1 = write('c0', 0, 1000, 1)
  const r1 = read('c0', 1, { at: 1000, dc: 0, value: 'c0@1000' })
  const w2 = write('c0', 1, 1001, 1, 'leader')
  const w3 = write('c1', 0, 1002, 2)
  return {
    history: {
      operations: [w1, r1, w2, w3],
      final: {
        [K]: [
          { ts: ts(1002), dc: 0 },
          { ts: ts(1002), dc: 0 },
        ],
      },
    },
    converged: true,
    logs: [
      ...copies(0, [
        { idx: 1, ts: ts(1000), key: K },
        { idx: 2, ts: ts(1002), key: K },
      ]),
      ...copies(1, [{ idx: 1, ts: ts(1001), key: K }]),
    ],
    partitions: PARTITIONS,
    fault: { injectedAt: 15, region: 0, partition: P },
  }
}

describe('the chaos checks', () => {
  it('pass a clean run, with the time from the fault to the next write acknowledged there', () => {
    const findings = checkRun(cleanRun())
    expect(findings).toMatchObject({
      operations: 4,
      acknowledgedWrites: 3,
      majorityWrites: 2,
      lost: 0,
      lostLeaderWrites: 0,
      violations: 0,
      stale200s: 0,
      reusedIndices: 0,
      divergedLogs: 0,
      converged: true,
    })
    // The fault at 15; w3, region 0 and the key's partition, called at 40, answered at 45.
    expect(findings.recoverMs).toBe(30)
    expect(failureReasons(findings)).toEqual([])
  })

  it('catch an acknowledged majority write missing from one replica', () => {
    const run = cleanRun()
    const logs = run.logs.map((c) =>
      c.region === 1 && c.copy === 'replica 2' && c.origin === 0
        ? { ...c, entries: c.entries.filter((e) => e.idx !== 1) }
        : c,
    )
    const findings = checkRun({ ...run, logs })
    expect(findings.lost).toBe(1)
    expect(findings.divergedLogs).toBe(1)
    expect(findings.examples.find((e) => e.startsWith('lost'))).toContain('region 1 replica 2')
    expect(failureReasons(findings)).toContain('1 acknowledged majority write(s) lost')
  })

  it('count a missing leader-durability write apart: that level allows it', () => {
    const run = cleanRun()
    const logs = run.logs.map((c) => (c.origin === 1 ? { ...c, entries: [] } : c))
    const findings = checkRun({ ...run, logs })
    expect(findings).toMatchObject({ lost: 0, lostLeaderWrites: 1, divergedLogs: 0 })
  })

  it('catch a stale 200: a session read that misses its own acknowledged write', () => {
    const run = cleanRun()
    const stale = read('c1', 1) // c1 wrote w3 in region 0 and reads nothing in region 1
    const findings = checkRun({
      ...run,
      history: { ...run.history, operations: [...run.history.operations, stale] },
    })
    expect(findings.stale200s).toBe(1)
    expect(findings.violationsByCheck['read-your-writes']).toBe(1)
    expect(failureReasons(findings).join('\n')).toMatch(/guarantee violation/)
  })

  it('catch a reused index: a log position that named two different writes', () => {
    const run = cleanRun()
    // Region 0 lost its entries and gave idx 2 to another write (a wiped leader).
    const reused = { idx: 2, ts: ts(2000), key: K }
    const logs = run.logs.map((c) =>
      c.region === 0 && c.origin === 0 ? { ...c, entries: [c.entries[0]!, reused] } : c,
    )
    const findings = checkRun({ ...run, logs })
    expect(findings.reusedIndices).toBe(1)
    expect(findings.lost).toBe(1) // w3's position holds another write now
    expect(findings.divergedLogs).toBe(1)
    expect(findings.examples.find((e) => e.startsWith('reused'))).toContain(`${P}/0/2`)
  })

  it('catch a reused index in the replies alone', () => {
    const run = cleanRun()
    const twin = { ...write('c2', 0, 1500, 2), value: 'other' }
    const findings = checkRun({
      ...run,
      history: { ...run.history, operations: [...run.history.operations, twin] },
    })
    expect(findings.reusedIndices).toBe(1)
  })

  it('allow typed refusals and fail on any other error', () => {
    const run = cleanRun()
    const failed = (code: string): Operation => ({
      client: 'c3',
      op: 'put',
      key: K,
      level: 'session',
      region: 1,
      invokedAt: 1,
      completedAt: 2,
      ok: false,
      error: { code },
    })
    const allowed = checkRun({
      ...run,
      history: {
        ...run.history,
        operations: [...run.history.operations, ...ALLOWED_ERRORS.map(failed)],
      },
    })
    expect(allowed.unexpectedErrors).toEqual({})
    expect(ALLOWED_ERRORS).toEqual(
      expect.arrayContaining([
        'SESSION_NOT_AVAILABLE',
        'EPOCH_MISMATCH',
        'TIMEOUT',
        'BACKEND_UNAVAILABLE',
      ]),
    )
    const refused = checkRun({
      ...run,
      history: {
        ...run.history,
        operations: [...run.history.operations, failed('CLOCK_SKEW_EXCEEDED')],
      },
    })
    expect(refused.unexpectedErrors).toEqual({ CLOCK_SKEW_EXCEEDED: 1 })
    expect(failureReasons(refused).join('\n')).toMatch(/CLOCK_SKEW_EXCEEDED ×1/)
  })

  it('fail a run whose writes never resumed where the fault hit, or that did not converge', () => {
    const run = cleanRun()
    const never = checkRun({ ...run, fault: { injectedAt: 1_000, region: 0, partition: P } })
    expect(never.recoverMs).toBeNull()
    expect(failureReasons(never)).toContain(
      'no write was acknowledged where the fault hit after it',
    )
    expect(failureReasons(checkRun({ ...run, converged: false }))).toContain(
      'the regions did not converge',
    )
  })
})
