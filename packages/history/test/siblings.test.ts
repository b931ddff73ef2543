/**
 * The checks on keys of siblings namespaces, on hand-made histories: a read returns a set of
 * versions, a write with a context supersedes what the read that returned it saw.
 */
import { describe, expect, it } from 'vitest'
import {
  SiblingOrder,
  checkHistory,
  type History,
  type Operation,
  type Version,
} from '../src/index.js'
import { v } from './script.js'

const KEY = 'cart:1'

/** A terse builder: sequential, non-overlapping calls of a siblings key. */
function siblings() {
  let clock = 0
  const operations: Operation[] = []
  const span = () => {
    clock += 10
    return { invokedAt: clock, completedAt: clock + 5 }
  }
  return {
    operations,
    put(client: string, version: Version, o: { context?: string; error?: string } = {}) {
      operations.push({
        client,
        op: 'put',
        key: KEY,
        region: version.dc,
        level: 'session',
        value: `${client}@${version.ts}`,
        ...(o.context !== undefined && { context: o.context }),
        ...span(),
        ...(o.error === undefined
          ? { ok: true, reply: { ...version, idx: 1 } }
          : { ok: false, error: { code: o.error } }),
      } as Operation)
    },
    del(client: string, version: Version, context?: string) {
      operations.push({
        client,
        op: 'delete',
        key: KEY,
        region: version.dc,
        level: 'session',
        ...(context !== undefined && { context }),
        ...span(),
        ok: true,
        reply: { ...version, idx: 1 },
      } as Operation)
    },
    /** A read returning `versions` (each written by `put` unless listed in `deleted`). */
    get(
      client: string,
      versions: { version: Version; by?: string; deleted?: boolean; value?: unknown }[],
      context: string,
      region = 0,
    ) {
      const sorted = [...versions].sort((a, b) =>
        a.version.ts < b.version.ts ? -1 : a.version.ts > b.version.ts ? 1 : 0,
      )
      const newest = sorted.at(-1)?.version
      operations.push({
        client,
        op: 'get',
        key: KEY,
        region,
        level: 'session',
        ...span(),
        ok: true,
        reply: {
          found: sorted.some((s) => !s.deleted),
          ...(newest && { ts: newest.ts, dc: newest.dc }),
          siblings: sorted.map((s) =>
            s.deleted
              ? { ...s.version, deleted: true }
              : {
                  ...s.version,
                  deleted: false,
                  value: 'value' in s ? s.value : `${s.by}@${s.version.ts}`,
                },
          ),
          context,
        },
      } as Operation)
    },
  }
}

const a = v(1000, 0)
const b = v(1001, 1)
const c = v(1002, 0)
const d = v(1003, 1)

/** Two blind writes in two regions, a read of both, a resolution with that read's context. */
function resolvedHistory() {
  const h = siblings()
  h.put('x', a)
  h.put('y', b)
  h.get(
    'x',
    [
      { version: a, by: 'x' },
      { version: b, by: 'y' },
    ],
    'ctx-ab',
  )
  h.put('x', c, { context: 'ctx-ab' })
  h.get('y', [{ version: c, by: 'x' }], 'ctx-c', 1)
  return h
}

describe('sibling checks', () => {
  it('pass a history whose reads and final state hold exactly the concurrent siblings', () => {
    const h = resolvedHistory()
    const history: History = { operations: h.operations, finalSiblings: { [KEY]: [[c], [c]] } }
    const report = checkHistory(history)
    expect(report.violations).toEqual([])
    expect(report.results['monotonic-reads']!.checked).toBe(0) // x and y read once each
    expect(report.results['read-your-writes']!.checked).toBeGreaterThan(0)
  })

  it('model what each write superseded, transitively', () => {
    const h = resolvedHistory()
    h.put('y', d, { context: 'ctx-c' })
    const order = new SiblingOrder({ operations: h.operations }, KEY)
    expect([...order.ancestors(d)].sort()).toEqual([a, b, c].map((x) => `${x.ts}@${x.dc}`).sort())
    expect(order.isSuperseded(a)).toBe(true)
    expect(order.isSuperseded(d)).toBe(false)
    expect([...order.covered([d])]).toHaveLength(4)
  })

  it('find a read that drops a sibling its session had read (monotonic reads)', () => {
    const h = siblings()
    h.put('x', a)
    h.put('y', b)
    h.get(
      'z',
      [
        { version: a, by: 'x' },
        { version: b, by: 'y' },
      ],
      'ctx-ab',
    )
    h.get('z', [{ version: a, by: 'x' }], 'ctx-a', 1)
    const report = checkHistory({ operations: h.operations }, { checks: ['monotonic-reads'] })
    expect(report.violations).toHaveLength(1)
    expect(report.violations[0]).toMatchObject({
      check: 'monotonic-reads',
      kind: 'stale-read',
      required: b,
    })
    expect(report.violations[0]!.message).toContain('neither holds nor supersedes')
  })

  it('accept a later read that holds what superseded the sibling read before', () => {
    const h = resolvedHistory()
    h.get('x', [{ version: c, by: 'x' }], 'ctx-c', 1)
    expect(checkHistory({ operations: h.operations }).violations).toEqual([])
  })

  it('find a read that misses the session’s own write (read-your-writes)', () => {
    const h = siblings()
    h.put('x', a)
    h.put('y', b)
    h.get('y', [{ version: a, by: 'x' }], 'ctx-a')
    const report = checkHistory({ operations: h.operations }, { checks: ['read-your-writes'] })
    expect(report.violations.map((x) => [x.kind, x.client, x.required])).toEqual([
      ['stale-read', 'y', b],
    ])
  })

  it('find lost, superseded (false conflict), diverged and mismatched siblings', () => {
    const h = resolvedHistory()
    // A read that still shows a beside c, which superseded it.
    h.get(
      'x',
      [
        { version: a, by: 'x' },
        { version: c, by: 'x' },
      ],
      'ctx-ac',
    )
    // A read whose sibling b carries another value than b's write.
    h.get('y', [{ version: b, value: 'forged' }], 'ctx-b')
    h.put('y', d) // blind: concurrent with c, must survive
    const report = checkHistory(
      { operations: h.operations, finalSiblings: { [KEY]: [[a, c], [c]] } },
      { checks: ['convergence'] },
    )
    const kinds = report.violations.map((x) => x.kind).sort()
    expect(kinds).toEqual([
      'diverged',
      'lost-write', // d, in region 0
      'lost-write', // d, in region 1
      'superseded-sibling', // the read of a beside c
      'superseded-sibling', // region 0 ended on a
      'value-mismatch',
    ])
  })

  it('accept a missing sibling that a write of unknown outcome, sent with a context, may have superseded', () => {
    const h = siblings()
    h.put('x', a)
    h.put('y', b)
    h.get(
      'z',
      [
        { version: a, by: 'x' },
        { version: b, by: 'y' },
      ],
      'ctx-ab',
    )
    h.put('z', c, { context: 'ctx-ab', error: 'TIMEOUT' })
    const unknown = c
    const history: History = {
      operations: h.operations,
      finalSiblings: { [KEY]: [[unknown], [unknown]] },
    }
    expect(checkHistory(history).violations).toEqual([])
    // Without the timed-out write, the same final state loses a and b and invents c.
    const without = { ...history, operations: h.operations.slice(0, 3) }
    const kinds = checkHistory(without)
      .violations.map((x) => x.kind)
      .sort()
    expect(kinds).toEqual([
      'lost-write',
      'lost-write',
      'lost-write',
      'lost-write',
      'unknown-version',
    ])
  })

  it('treat deletes as tombstone siblings that reads report but do not find', () => {
    const h = siblings()
    h.put('x', a)
    h.get('x', [{ version: a, by: 'x' }], 'ctx-a')
    h.del('x', b, 'ctx-a')
    h.get('x', [{ version: b, deleted: true }], 'ctx-b', 1)
    const history: History = { operations: h.operations, finalSiblings: { [KEY]: [[b], [b]] } }
    expect(checkHistory(history).violations).toEqual([])
    // A tombstone read back as a value is a mismatch.
    h.get('y', [{ version: b, by: 'x' }], 'ctx-b')
    expect(checkHistory({ operations: h.operations }).violations.map((x) => x.kind)).toEqual([
      'value-mismatch',
    ])
  })
})
