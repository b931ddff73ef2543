import type { ShipEnvelope } from '@causeway/core'
import { describe, expect, it } from 'vitest'
import { DelayedShippingLink } from '../../src/cluster/delayed-shipping-link.js'
import type { ShippingLink } from '../../src/replication/shipping-link.js'
import { entry as logEntry, ship } from '../support/log-entries.js'

const entry = (idx: number) => logEntry(0, idx, 'k', undefined, '0000000000000001', 0)

/** An inner link that records when each batch reached it and answers with its last idx. */
function recordingLink(): ShippingLink & {
  arrivals: { idx: number; at: number }[]
  closed: boolean
} {
  const link = {
    arrivals: [] as { idx: number; at: number }[],
    closed: false,
    checkpoint: async () => link.arrivals.at(-1)?.idx ?? 0,
    send: async (envelope: ShipEnvelope) => {
      link.arrivals.push({ idx: envelope.last, at: performance.now() })
      return envelope.last
    },
    close: async () => {
      link.closed = true
    },
  }
  return link
}

describe('DelayedShippingLink (the emulated WAN of the Redis backend)', () => {
  it('delivers pipelined batches one delay later, in order, and answers one delay after that', async () => {
    const inner = recordingLink()
    const link = new DelayedShippingLink(inner, 60)
    const sent = performance.now()
    const answers = await Promise.all([1, 2, 3].map((idx) => link.send(ship(0, [entry(idx)]))))
    const answered = performance.now()
    expect(answers).toEqual([1, 2, 3])
    expect(inner.arrivals.map((a) => a.idx)).toEqual([1, 2, 3])
    // Pipelined: all three arrive about one delay after they were sent, not one round trip
    // after another (60, 180, 300 ms).
    for (const a of inner.arrivals) {
      expect(a.at - sent).toBeGreaterThanOrEqual(55)
      expect(a.at - sent).toBeLessThan(150)
    }
    expect(answered - sent).toBeGreaterThanOrEqual(115)
    expect(await link.checkpoint()).toBe(3)
    await link.close()
  })

  it('on close, rejects what is in flight and closes the inner link', async () => {
    const inner = recordingLink()
    const link = new DelayedShippingLink(inner, 1000)
    const pending = link.send(ship(0, [entry(1)]))
    await link.close()
    await expect(pending).rejects.toThrow('shipping link closed')
    await expect(link.send(ship(0, [entry(2)]))).rejects.toThrow('shipping link closed')
    expect(inner.arrivals).toEqual([])
    expect(inner.closed).toBe(true)
  })
})
