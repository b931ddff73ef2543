import { describe, expect, it, vi } from 'vitest'
import { hlcFrom, partitionOf } from '@causeway/core'
import {
  type Causeway,
  type SessionChannel,
  type SessionMessage,
  connect,
  shareSession,
} from '../src/index.js'
import { FakeGateway, readOk, writeOk } from './fake-gateway.js'

/**
 * A fake `BroadcastChannel` bus: a message posted on one end reaches every other end (not the
 * sender), asynchronously, as structured clones, like the real one.
 */
class FakeBus {
  readonly ends: FakeChannel[] = []
  readonly log: SessionMessage[] = []

  channel(): FakeChannel {
    const end = new FakeChannel(this)
    this.ends.push(end)
    return end
  }
}

class FakeChannel implements SessionChannel {
  readonly listeners = new Set<(event: { data: unknown }) => void>()
  closed = false
  constructor(readonly bus: FakeBus) {}

  postMessage(message: unknown): void {
    if (this.closed) throw new Error('posted on a closed channel')
    this.bus.log.push(message as SessionMessage)
    const data = structuredClone(message)
    for (const end of this.bus.ends) {
      if (end === this || end.closed) continue
      setTimeout(() => {
        for (const listener of end.listeners) listener({ data })
      }, 0)
    }
  }
  addEventListener(_type: 'message', listener: (event: { data: unknown }) => void): void {
    this.listeners.add(listener)
  }
  removeEventListener(_type: 'message', listener: (event: { data: unknown }) => void): void {
    this.listeners.delete(listener)
  }
  close(): void {
    this.closed = true
  }
}

/** Lets the bus deliver what was posted: for checks that nothing (more) arrives. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5))

function keyIn(p: number): string {
  for (let n = 0; n < 1000; n++) if (partitionOf(`k${n}`, 4) === p) return `k${n}`
  throw new Error('no key found')
}

async function tab(): Promise<{ db: Causeway; gw: FakeGateway }> {
  const gw = new FakeGateway()
  return { db: await connect({ url: 'http://us.test', transport: gw }), gw }
}

describe('shareSession (browser tabs)', () => {
  it("a write in one tab gives the other tab's next read its read-your-writes vector", async () => {
    const bus = new FakeBus()
    const a = await tab()
    const b = await tab()
    const sa = shareSession(a.db, { channel: bus.channel() })
    const sb = shareSession(b.db, { channel: bus.channel() })
    const key = keyIn(3)
    a.gw.reply(writeOk({ dc: 0, idx: 12, ts: hlcFrom(5000, 0) }))
    await a.db.put(key, 'draft')
    await vi.waitFor(() => expect(b.db.session.toJSON()).toEqual(a.db.session.toJSON()))
    b.gw.reply(readOk(), writeOk())
    await b.db.get(key, { read: 'read-your-writes' })
    expect(b.gw.kv[0]!.headers['causeway-after']).toBe('0:12@1')
    await b.db.put(keyIn(0), 1, { write: 'monotonic-writes' })
    expect(b.gw.kv[1]!.headers['causeway-dt']).toBe(hlcFrom(5000, 0))
    sa.stop()
    sb.stop()
  })

  it('a tab that opens late asks the others and starts where they are', async () => {
    const bus = new FakeBus()
    const a = await tab()
    const sa = shareSession(a.db, { channel: bus.channel() })
    a.gw.reply(writeOk({ dc: 0, idx: 4, ts: hlcFrom(10, 0) }))
    await a.db.put(keyIn(1), 1)
    await tick()

    const b = await tab()
    const sb = shareSession(b.db, { channel: bus.channel() })
    // The hello and its answer cross the bus asynchronously: wait for them, bounded.
    await vi.waitFor(() => expect(b.db.session.toJSON()).toEqual(a.db.session.toJSON()), {
      timeout: 2000,
    })
    expect(bus.log.map((m) => m.type)).toContain('causeway-session-hello')
    sa.stop()
    sb.stop()
  })

  it('ready resolves once another tab answered with its session (a write can then rely on it)', async () => {
    const bus = new FakeBus()
    const a = await tab()
    const sa = shareSession(a.db, { channel: bus.channel() })
    a.gw.reply(writeOk({ dc: 0, idx: 9, ts: hlcFrom(20, 0) }))
    await a.db.put(keyIn(2), 1)
    await tick()
    const b = await tab()
    // A long timeout: only the other tab's answer can resolve it in time.
    const sb = shareSession(b.db, { channel: bus.channel(), readyTimeoutMs: 60_000 })
    await sb.ready
    expect(b.db.session.row(2)).toEqual(a.db.session.row(2))
    sa.stop()
    sb.stop()
  })

  it('ready resolves alone after readyTimeoutMs when no other tab answers', async () => {
    const bus = new FakeBus()
    const a = await tab()
    const started = Date.now()
    const sa = shareSession(a.db, { channel: bus.channel(), readyTimeoutMs: 50 })
    await sa.ready
    expect(Date.now() - started).toBeGreaterThanOrEqual(40)
    sa.stop()
  })

  it('calls finishing in one tick post once', async () => {
    const bus = new FakeBus()
    const a = await tab()
    const sa = shareSession(a.db, { channel: bus.channel() })
    a.gw.reply(writeOk({ idx: 1 }), writeOk({ idx: 2 }), writeOk({ idx: 3 }))
    await Promise.all([a.db.put('x', 1), a.db.put('y', 1), a.db.put('z', 1)])
    await tick()
    expect(bus.log.filter((m) => m.type === 'causeway-session')).toHaveLength(1)
    sa.stop()
  })

  it('ignores and reports malformed or foreign sessions', async () => {
    const bus = new FakeBus()
    const a = await tab()
    const errors: string[] = []
    const sa = shareSession(a.db, {
      channel: bus.channel(),
      onError: (e) => errors.push((e as { code: string }).code),
    })
    const before = JSON.stringify(a.db.session)
    const rogue = bus.channel()
    rogue.postMessage({ type: 'causeway-session', session: { v: 1, cluster: 'test-cluster' } })
    rogue.postMessage({
      type: 'causeway-session',
      session: { ...a.db.session.toJSON(), cluster: 'other', dtW: hlcFrom(99, 0) },
    })
    rogue.postMessage('noise')
    rogue.postMessage(null)
    await tick()
    expect(errors).toEqual(['INVALID_SESSION', 'FOREIGN_SESSION'])
    expect(JSON.stringify(a.db.session)).toBe(before)
    sa.stop()
  })

  it('stop() ends listening and posting; publish() posts on demand', async () => {
    const bus = new FakeBus()
    const a = await tab()
    const b = await tab()
    const channel = bus.channel()
    const sa = shareSession(a.db, { channel })
    const sb = shareSession(b.db, { channel: bus.channel() })
    await tick()
    // A merge is not a reply: the app publishes it itself.
    a.db.session.observeWrite(2, { dc: 1, idx: 3, ts: hlcFrom(20, 0), epoch: 1 })
    sa.publish()
    await vi.waitFor(() => expect(b.db.session.row(2)?.hwm).toEqual([0, 3, 0]))

    sb.stop()
    const posted = bus.log.length
    a.gw.reply(writeOk({ dc: 0, idx: 9 }))
    await a.db.put(keyIn(2), 1)
    await tick()
    expect(b.db.session.row(2)?.hwm).toEqual([0, 3, 0])
    sa.stop()
    expect(channel.closed).toBe(false) // not ours to close
    b.gw.reply(writeOk())
    await b.db.put(keyIn(2), 1)
    await tick()
    expect(bus.log.length).toBe(posted + 1) // only a's post before it stopped
  })

  it('uses a real BroadcastChannel named after the cluster by default', async () => {
    const a = await tab()
    const b = await tab()
    const sa = shareSession(a.db)
    const sb = shareSession(b.db)
    a.gw.reply(writeOk({ dc: 0, idx: 7, ts: hlcFrom(30, 0) }))
    await a.db.put(keyIn(1), 1)
    await vi.waitFor(() => expect(b.db.session.dtW).toBe(hlcFrom(30, 0)))
    sa.stop()
    sb.stop()
  })
})
