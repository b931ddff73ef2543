/**
 * The change feed of transactional keys: one event per key a transaction wrote, each with the
 * transaction's tid; a feed resumed from a cursor in the middle of a commit entry gets all of the
 * entry again (never half of it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevCluster, startDevCluster } from '../../src/dev-server.js'
import { openSse, type SseEvent, type SseStream } from '../support/sse-client.js'

let dev: DevCluster
beforeAll(async () => {
  dev = await startDevCluster({
    regions: 1,
    partitions: 1,
    replicas: 1,
    port: 0,
    sync: false,
    namespaces: { acct: { transactions: true } },
  })
})
afterAll(() => dev.close())

async function commit(writes: Record<string, unknown>): Promise<{ tid: number }> {
  const res = await fetch(`${dev.urls[0]}/v1/tx/commit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      snapshot: 0,
      reads: [],
      writes: Object.entries(writes).map(([key, value]) => ({ key, value })),
    }),
  })
  return (await res.json()) as { tid: number }
}

async function changes(s: SseStream, n: number): Promise<SseEvent[]> {
  const out: SseEvent[] = []
  while (out.length < n) out.push(await s.nextOf('change', 5000))
  return out
}

describe('the change feed of transactional keys', () => {
  it('has one event per key a transaction wrote, with its tid; a resume mid-entry gets it all', async () => {
    const opened = await openSse(`${dev.urls[0]}/v1/watch?prefix=acct%3A`)
    if (!opened.ok) throw new Error(`watch refused: ${JSON.stringify(opened.body)}`)
    const s = opened.stream
    await s.next()
    const { tid } = await commit({ 'acct:a': 1, 'acct:b': 2, 'acct:c': 3 })
    const events = await changes(s, 3)
    s.close()
    const data = events.map((e) => JSON.parse(e.data) as Record<string, unknown>)
    expect(data.map((d) => [d['key'], d['value'], d['tid'], d['deleted']])).toEqual([
      ['acct:a', 1, tid, false],
      ['acct:b', 2, tid, false],
      ['acct:c', 3, tid, false],
    ])
    // The first two events carry the cursor before the entry; the last one, after it.
    expect(events[0]!.id).toBe(events[1]!.id)
    expect(events[2]!.id).not.toBe(events[1]!.id)
    const resumed = await openSse(
      `${dev.urls[0]}/v1/watch?prefix=acct%3A&since=${encodeURIComponent(events[0]!.id!)}`,
    )
    if (!resumed.ok) throw new Error('resume refused')
    await resumed.stream.next()
    const again = await changes(resumed.stream, 3)
    resumed.stream.close()
    expect(again.map((e) => (JSON.parse(e.data) as { key: string }).key)).toEqual([
      'acct:a',
      'acct:b',
      'acct:c',
    ])
  })
})
