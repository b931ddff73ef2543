/**
 * Exactly-once without a time window (issue 22 item 2) and op ids per tenant (issue 23 item 6),
 * over HTTP, written once and run on both backends: a write, a sibling write, a set add and a
 * transaction commit resent after their client's op-record retention has passed are never applied
 * again (`OP_EXPIRED`, 409), and a tenant reusing another's op id or transaction id never gets the
 * other's result.
 *
 * A deployment is one region with a siblings namespace `cart`, a transactional namespace `acct`,
 * an op-record retention of {@link RETENTION_MS} and two API keys: the admin's (unscoped) and a
 * tenant's (another key, also unscoped so it may reuse the admin's keys).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/** The op-record retention every deployment of the suite runs with. */
export const RETENTION_MS = 1500
/** The admin's API key. */
export const ADMIN_KEY = 'op-expiry-admin-key-0123456789'
/** The tenant's API key. */
export const TENANT_KEY = 'op-expiry-tenant-key-0123456789'

/** A reply, as the suite reads it. */
export interface Reply {
  status: number
  headers: Record<string, string | undefined>
  body: Record<string, unknown>
}

/** A running deployment. */
export interface OpDeployment {
  request(
    key: string,
    method: 'GET' | 'PUT' | 'DELETE' | 'POST',
    path: string,
    init?: { json?: unknown; headers?: Record<string, string> },
  ): Promise<Reply>
  close(): Promise<void>
}

const CLIENT = `phone${Math.random().toString(36).slice(2, 10)}`

export function opExpirySuite(name: string, deploy: () => Promise<OpDeployment>): void {
  describe(`exactly-once without a time window: ${name}`, () => {
    let dep: OpDeployment
    beforeAll(async () => {
      dep = await deploy()
    }, 60_000)
    afterAll(() => dep?.close(), 30_000)

    const put = (key: string, value: unknown, op?: string, token = ADMIN_KEY) =>
      dep.request(token, 'PUT', `/v1/kv/${encodeURIComponent(key)}`, {
        json: { value },
        headers: op === undefined ? {} : { 'causeway-op-id': op },
      })
    const get = async (key: string) =>
      (await dep.request(ADMIN_KEY, 'GET', `/v1/kv/${encodeURIComponent(key)}`)).body
    const setAdd = (name: string, element: string, op: string) =>
      dep.request(ADMIN_KEY, 'POST', `/v1/sets/${encodeURIComponent(name)}/add`, {
        json: { elements: [element] },
        headers: { 'causeway-op-id': op },
      })
    const commit = (id: string, value: number, token = ADMIN_KEY) =>
      dep.request(token, 'POST', '/v1/tx/commit', {
        json: { id, snapshot: 0, reads: [], writes: [{ key: 'acct:x', value }] },
      })

    // Waits (polling, with a deadline) until the retention has passed since `since`.
    async function pastRetention(since: number): Promise<void> {
      while (Date.now() < since + RETENTION_MS + 300)
        await new Promise((resolve) => setTimeout(resolve, 100))
    }

    it('never applies a put, a sibling write, a set add or a commit again after the window', async () => {
      const op = (seq: number) => `${CLIENT}.${seq}`
      const first = await put('list:x', 'from phone', op(7))
      expect(first.status).toBe(200)
      const sibling = await put('cart:x', 'phone item', op(8))
      expect(sibling.status).toBe(200)
      expect((await setAdd('list:tags', 'red', op(9))).status).toBe(200)
      const tx = await commit(op(10), 100)
      expect(tx.status).toBe(200)
      expect(tx.body.outcome).toBe('applied')
      const since = Date.now()
      // Within the window a resend is answered from the record.
      const replay = await put('list:x', 'from phone', op(7))
      expect(replay.status).toBe(200)
      expect(replay.headers['causeway-op-replayed']).toBe('1')
      expect(replay.body.idx).toBe(first.body.idx)
      // Another writer.
      expect((await put('list:x', 'from laptop')).status).toBe(200)
      const laptop = await commit(`laptop${CLIENT}.1`, 50)
      expect(laptop.body.outcome).toBe('applied')
      await pastRetention(since)
      // The phone's replies were lost; its outbox resends everything after the window.
      for (const resent of [
        await put('list:x', 'from phone', op(7)),
        await put('cart:x', 'phone item', op(8)),
        await setAdd('list:tags', 'red', op(9)),
        await commit(op(10), 100),
      ]) {
        expect(resent.status, JSON.stringify(resent.body)).toBe(409)
        expect(resent.body.code).toBe('OP_EXPIRED')
      }
      expect((await get('list:x')).value).toBe('from laptop')
      expect((await get('cart:x')).siblings ?? [(await get('cart:x')).value]).toHaveLength(1)
      const read = await dep.request(ADMIN_KEY, 'POST', '/v1/tx/read', {
        json: { keys: ['acct:x'], minTid: laptop.body.tid },
      })
      expect(read.body.items).toMatchObject([{ key: 'acct:x', value: 50 }])
      // The phone's next ids are new: applied.
      expect((await put('list:x', 'phone again', op(11))).status).toBe(200)
      expect((await get('list:x')).value).toBe('phone again')
      expect((await commit(op(12), 70)).body).toMatchObject({ outcome: 'applied' })
    }, 30_000)

    it('keeps op ids and transaction ids per tenant: no tenant sees another’s result', async () => {
      const id = `${CLIENT}x.1`
      const admin = await put('list:t', 'admin', id)
      expect(admin.status).toBe(200)
      const tenant = await put('list:t', 'admin', id, TENANT_KEY)
      expect(tenant.status).toBe(200)
      expect(tenant.headers['causeway-op-replayed']).toBeUndefined()
      expect(tenant.body.idx).not.toBe(admin.body.idx)
      const adminTx = await commit(`${CLIENT}x.2`, 1)
      const tenantTx = await commit(`${CLIENT}x.2`, 1, TENANT_KEY)
      expect(tenantTx.status).toBe(200)
      expect(tenantTx.body.replayed).toBeUndefined()
      expect(tenantTx.body.tid).not.toBe(adminTx.body.tid)
      // Each tenant's own resend is its own replay.
      const again = await commit(`${CLIENT}x.2`, 1, TENANT_KEY)
      expect(again.body).toMatchObject({ replayed: true, tid: tenantTx.body.tid })
    }, 30_000)
  })
}
