/**
 * The forged-context regression (issue 12, defect 1), run over HTTP against any two-region
 * cluster with a `cart` siblings namespace: `PUT /v1/kv/cart%3A1` with a context claiming counter
 * 2^53 - 1 must be a 400 that writes nothing, and afterwards the key must stay readable and
 * writable and its partition must keep replicating, to the followers and to the other region.
 */
import { partitionOf } from '@causeway/core'
import { expect } from 'vitest'
import { afterWrite, call, getKey, kvUrl, putKey, until, type Reply } from './http-calls.js'

/** The context of issue 23, item 1: format 0xC1, one entry, actor 1 (region r1), counter 2^53 - 2. */
export const FORGED_FOREIGN_CONTEXT = 'wQEB_v_______w8'

/** The context of the report: format 0xC1, one entry, actor 0, counter 2^53 - 1. */
export const FORGED_CONTEXT = 'wQEA_________w8'

/** `count` keys `prefix<n>` that fall in partition `p` of `partitions`. */
export function keysIn(p: number, partitions: number, count: number, prefix: string): string[] {
  const keys: string[] = []
  for (let i = 0; keys.length < count && i < 100_000; i++)
    if (partitionOf(`${prefix}${i}`, partitions) === p) keys.push(`${prefix}${i}`)
  return keys
}

const values = (reply: Reply) =>
  ((reply.body.siblings as { value?: unknown }[] | undefined) ?? []).map((s) => s.value)

/**
 * Runs the scenario on `key` (a fresh key of the `cart` namespace) against region URLs `r0`, `r1`
 * of a cluster of `partitions` partitions with followers.
 */
export async function expectForgedContextHarmless(
  [r0, r1]: readonly [string, string],
  partitions: number,
  key = 'cart:1',
): Promise<void> {
  const p = partitionOf(key, partitions)
  // Keys of the same partition, written before: they must stay readable with their values.
  const others = [
    ...keysIn(p, partitions, 2, `${key}.o`),
    ...keysIn(p, partitions, 2, `lww:${key}.o`),
  ]
  const before = new Map<string, Reply>()
  for (const [i, other] of others.entries()) {
    const written = await putKey(r0, other, { other: i })
    expect(written.status, other).toBe(200)
    before.set(other, written)
  }

  const first = await putKey(r0, key, 'kept')
  expect(first.status).toBe(200)

  // The forged context, as a PUT and as a DELETE: refused, nothing written.
  const forged = await call(kvUrl(r0, key), {
    method: 'PUT',
    headers: { 'causeway-context': FORGED_CONTEXT, 'content-type': 'application/json' },
    body: '{"value":1}',
  })
  expect({ status: forged.status, code: forged.body.code }).toEqual({
    status: 400,
    code: 'INVALID_CONTEXT',
  })
  const forgedDelete = await call(kvUrl(r0, key), {
    method: 'DELETE',
    headers: { 'causeway-context': FORGED_CONTEXT },
  })
  expect({ status: forgedDelete.status, code: forgedDelete.body.code }).toEqual({
    status: 400,
    code: 'INVALID_CONTEXT',
  })

  // Readable, at the leader and at a follower, with only the value written before.
  const read = await getKey(r0, key, '?replica=leader')
  expect(read.status, JSON.stringify(read.body)).toBe(200)
  expect(values(read)).toEqual(['kept'])
  const atFollower = await getKey(r0, key, '?replica=follower&timeoutMs=5000', {
    'causeway-after': afterWrite(first),
  })
  expect(atFollower.status, JSON.stringify(atFollower.body)).toBe(200)
  expect(values(atFollower)).toEqual(['kept'])

  // Writable, with the context of that read: the write supersedes it.
  const second = await putKey(r0, key, 'second', {
    'causeway-context': read.body.context as string,
  })
  expect(second.status, JSON.stringify(second.body)).toBe(200)
  expect(values(await getKey(r0, key, '?replica=leader'))).toEqual(['second'])

  // The partition still replicates: the other region reads the write with the session's vector,
  // and so does a follower of this region.
  const there = await getKey(r1, key, '?timeoutMs=8000', { 'causeway-after': afterWrite(second) })
  expect(there.status, JSON.stringify(there.body)).toBe(200)
  expect(values(there)).toEqual(['second'])
  const follower = await getKey(r0, key, '?replica=follower&timeoutMs=5000', {
    'causeway-after': afterWrite(second),
  })
  expect(follower.status, JSON.stringify(follower.body)).toBe(200)
  expect(values(follower)).toEqual(['second'])

  // And back: a write in the other region with the context it read arrives here.
  const third = await putKey(r1, key, 'third', { 'causeway-context': there.body.context as string })
  expect(third.status, JSON.stringify(third.body)).toBe(200)
  const back = await getKey(r0, key, '?timeoutMs=8000', { 'causeway-after': afterWrite(third) })
  expect(back.status, JSON.stringify(back.body)).toBe(200)
  expect(values(back)).toEqual(['third'])

  // Every other key of the partition kept its value, in both regions.
  for (const [other, written] of before) {
    for (const base of [r0, r1]) {
      const r = await until(
        () => getKey(base, other, '?timeoutMs=8000', { 'causeway-after': afterWrite(written) }),
        (reply) => reply.status === 200,
      )
      expect(r.status, `${other} in ${base}: ${JSON.stringify(r.body)}`).toBe(200)
      const value = other.startsWith('lww:') ? r.body.value : values(r)[0]
      expect(value, other).toEqual({ other: [...before.keys()].indexOf(other) })
    }
  }
}

/** The values of `key` in region `base` once it holds the writes `after` (session vectors). */
async function valuesOnceApplied(base: string, key: string, after: Reply[]): Promise<unknown[]> {
  let read = await getKey(base, key, '?replica=leader')
  for (const write of after) {
    read = await getKey(base, key, '?replica=leader&timeoutMs=8000', {
      'causeway-after': afterWrite(write),
    })
    expect(read.status, JSON.stringify(read.body)).toBe(200)
  }
  return values(read)
}

/**
 * Issue 23, item 1 (Redis): a context claiming region r1's counter at 2^53 - 2, written in r0,
 * made `key` unwritable in r1 (`409 COUNTER_EXHAUSTED` for every later PUT and DELETE) and dropped
 * r1's concurrent sibling. Whatever r0 answers, r1 must keep taking writes of the key and keep
 * its sibling, in both regions.
 */
export async function expectForeignCounterHarmless(
  [r0, r1]: readonly [string, string],
  key: string,
): Promise<void> {
  const theirs = await putKey(r1, key, 'theirs')
  expect(theirs.status, JSON.stringify(theirs.body)).toBe(200)
  const forged = await putKey(r0, key, 'forged', { 'causeway-context': FORGED_FOREIGN_CONTEXT })
  const shipped = forged.status === 200 ? [forged] : []
  // r1 has whatever r0 wrote, then writes again, blind and as a delete: both taken.
  await valuesOnceApplied(r1, key, shipped)
  const again = await putKey(r1, key, 'again')
  expect({ status: again.status, code: again.body.code }).toEqual({ status: 200, code: undefined })
  const gone = await call(kvUrl(r1, key), { method: 'DELETE' })
  expect({ status: gone.status, code: gone.body.code }).toEqual({ status: 200, code: undefined })
  // r1's first sibling survives everywhere.
  for (const base of [r0, r1])
    expect(await valuesOnceApplied(base, key, [theirs, ...shipped, again, gone])).toContain(
      'theirs',
    )
  // And the cluster never issued that context.
  expect({ status: forged.status, code: forged.body.code }).toEqual({
    status: 400,
    code: 'INVALID_CONTEXT',
  })
}

/**
 * Issue 23, item 1 (embedded): a context was checked against the other region's partition log,
 * not the key's, so the context of another key of the partition (where r1 has written twice)
 * could claim r1's second write to `key`, which r1 had not made yet, and supersede it when made.
 * The borrowed context must be refused, and r1's write must survive in both regions.
 */
export async function expectOtherKeysContextHarmless(
  [r0, r1]: readonly [string, string],
  partitions: number,
  key: string,
): Promise<void> {
  const other = keysIn(partitionOf(key, partitions), partitions, 1, `${key}.other`)[0]!
  const o1 = await putKey(r1, other, 1)
  const o2 = await putKey(r1, other, 2, { 'causeway-context': o1.body.context as string })
  const b1 = await putKey(r1, key, 'b1')
  for (const w of [o1, o2, b1]) expect(w.status, JSON.stringify(w.body)).toBe(200)
  // r0 has them all; its read of the other key names r1's counter 2 (for that key).
  await valuesOnceApplied(r0, key, [b1])
  await valuesOnceApplied(r0, other, [o2])
  const read = await getKey(r0, other, '?replica=leader')
  const borrowed = await putKey(r0, key, 'a', { 'causeway-context': read.body.context as string })
  // r1's second write to the key, which no context r0 issued can have seen.
  const b2 = await putKey(r1, key, 'b2')
  expect(b2.status, JSON.stringify(b2.body)).toBe(200)
  const written = borrowed.status === 200 ? [borrowed, b2] : [b2]
  // Once both regions have applied both writes, their sets have met in both directions.
  for (const base of [r0, r1])
    expect(await valuesOnceApplied(base, key, written), base).toContain('b2')
  // And the context was issued for another key.
  expect({ status: borrowed.status, code: borrowed.body.code }).toEqual({
    status: 400,
    code: 'INVALID_CONTEXT',
  })
}
