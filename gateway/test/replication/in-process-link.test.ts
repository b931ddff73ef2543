import { HLC_ZERO } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import { DelayLine } from '../../src/replication/delay-line.js'
import { InProcessLink } from '../../src/replication/in-process-link.js'
import { entry, ship } from '../support/log-entries.js'
import { Replicas, writeMany } from './support.js'

describe('DelayLine', () => {
  it('delivers after the delay, in push order', async () => {
    const line = new DelayLine(30)
    const seen: [number, number][] = []
    const started = Date.now()
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 5; i++) line.push(() => seen.push([i, Date.now() - started]))
      line.push(resolve)
    })
    expect(seen.map(([i]) => i)).toEqual([0, 1, 2, 3, 4])
    for (const [, ms] of seen) expect(ms).toBeGreaterThanOrEqual(29)
  })

  it('with no delay, delivers on a later turn, in push order, also what deliveries push', async () => {
    const line = new DelayLine(0)
    const seen: number[] = []
    await new Promise<void>((resolve) => {
      line.push(() => {
        seen.push(0)
        line.push(() => seen.push(2))
        line.push(resolve)
      })
      line.push(() => seen.push(1))
      expect(seen).toEqual([]) // never synchronously
    })
    expect(seen).toEqual([0, 1, 2])
    expect(line.size).toBe(0)
    let late = false
    line.push(() => (late = true))
    line.close()
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(late).toBe(false)
  })

  it('drops what is in flight when closed', async () => {
    const line = new DelayLine(10)
    let delivered = false
    line.push(() => (delivered = true))
    line.close()
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(delivered).toBe(false)
    expect(() => line.push(() => {})).toThrow(/closed/)
  })
})

describe('InProcessLink', () => {
  const replicas = new Replicas()
  afterEach(() => replicas.closeAll())

  it('delivers pipelined batches in order and answers after a round trip', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    const log = await writeMany(source, 9)
    const link = new InProcessLink({ origin: 0, destination, delayMs: 25 })
    const started = Date.now()
    const answers = await Promise.all([
      link.send(ship(0, log.slice(0, 3))),
      link.send(ship(0, log.slice(3, 6))),
      link.send(ship(0, log.slice(6))),
    ])
    // Each answer is the checkpoint after its batch, or later (batches may commit together).
    answers.forEach((checkpoint, i) => expect(checkpoint).toBeGreaterThanOrEqual(3 * (i + 1)))
    expect(answers[2]).toBe(9)
    expect(await destination.readLog(0, 0, 100)).toEqual(log)
    expect(Date.now() - started).toBeGreaterThanOrEqual(49)
    expect(Date.now() - started).toBeLessThan(500)
    expect(await link.checkpoint()).toBe(9)
    await link.close()
  })

  it('rejects calls in flight and later calls once closed', async () => {
    const destination = await replicas.open(1, 2)
    const link = new InProcessLink({ origin: 0, destination, delayMs: 20 })
    const pending = link.send(ship(0, [entry(0, 1, 'k', undefined, HLC_ZERO, 0)]))
    await link.close()
    await expect(pending).rejects.toThrow(/closed/)
    await expect(link.checkpoint()).rejects.toThrow(/closed/)
    expect(destination.sv()).toEqual([0, 0])
  })
})
