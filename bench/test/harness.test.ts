import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { devArgs, startCluster } from '../src/cluster-process.js'
import {
  findK6,
  interleave,
  planFile,
  planSeconds,
  scenarioResults,
  type PlannedScenario,
  type ScenarioResult,
} from '../src/k6-runner.js'
import { chartPng, lineChart } from '../src/report/chart.js'
import { replaceSection, table } from '../src/report/markdown.js'
import { componentOf, mergeProfiles, summariseProfile } from '../src/suites/profile.js'

const scenario = (name: string, durationS = 5): PlannedScenario => ({
  name,
  exec: 'mixed',
  vus: 4,
  durationS,
  env: { WARMUP_S: '1' },
})

describe('harness', () => {
  it('finds k6 on PATH or under GOPATH, and says how to install it when it is missing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-k6-find-'))
    try {
      const none = { goBin: () => undefined, home: dir }
      expect(() => findK6({ PATH: dir }, none)).toThrow(/go install go\.k6\.io\/k6@v1\.8\.1/)
      await writeFile(join(dir, 'k6'), '#!/bin/sh\n')
      await chmod(join(dir, 'k6'), 0o755)
      expect(findK6({ PATH: dir }, none)).toBe(join(dir, 'k6'))
      expect(findK6({ PATH: '' }, { goBin: () => dir, home: '/nonexistent' })).toBe(join(dir, 'k6'))
      expect(
        findK6({ K6: join(dir, 'k6'), PATH: '' }, { goBin: () => undefined, home: '/x' }),
      ).toBe(join(dir, 'k6'))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('plans scenarios one after the other, with unique k6-safe names', () => {
    const plan = planFile([scenario('a', 5), scenario('b', 2.5), scenario('c')]) as {
      scenarios: { name: string; startS: number }[]
    }
    expect(plan.scenarios.map((s) => s.startS)).toEqual([0, 5.5, 8.5])
    expect(planSeconds([scenario('a', 5), scenario('b', 2.5)])).toBe(8.5)
    expect(() => planFile([scenario('a'), scenario('a')])).toThrow(/unique/)
    expect(() => planFile([scenario('M/E')])).toThrow(/unique/)
  })

  it("reads each scenario's numbers from k6's summary", () => {
    const trend = (avg: number, count: number) => ({
      values: {
        avg,
        min: 0,
        med: avg,
        'p(90)': avg * 2,
        'p(95)': 0,
        'p(99)': avg * 3,
        max: avg * 4,
        count,
      },
    })
    const summary = {
      metrics: {
        'causeway_op_duration{scenario:a}': trend(2, 400),
        'causeway_op_duration{scenario:a,op:get}': trend(1, 200),
        'causeway_op_duration{scenario:a,op:put}': trend(3, 200),
        'causeway_ops{scenario:a}': { values: { count: 400, rate: 1 } },
        'causeway_op_failed{scenario:a}': { values: { rate: 0.01 } },
        'causeway_read_wait{scenario:a}': trend(0.5, 200),
        'causeway_read_retries{scenario:a}': { values: { count: 3 } },
        'causeway_write_wait{scenario:a}': trend(2.5, 150),
      },
    }
    const [a, b] = scenarioResults(summary, [scenario('a'), scenario('b')])
    // 400 calls in the 4 recorded seconds (5 s less 1 s of warm-up).
    expect(a).toMatchObject({
      ops: 400,
      throughput: 100,
      failed: 0.01,
      retries: 3,
      readWaitMs: 0.5,
      writeWaitMs: 2.5,
    })
    expect(a!.latency).toEqual({ avg: 2, p50: 2, p90: 4, p99: 6, max: 8, count: 400 })
    expect(a!.get?.avg).toBe(1)
    expect(a!.put?.avg).toBe(3)
    expect(b).toMatchObject({ ops: 0, throughput: 0 })
    // Only a without-HLC gateway reports write waits: none recorded, none reported.
    expect(b!.writeWaitMs).toBeUndefined()
  })

  it('interleaves compared scenarios in alternating order and takes the median of their rounds', () => {
    const { plan, combine } = interleave([[scenario('a'), scenario('b')], [scenario('c')]], 3)
    expect(plan.map((s) => s.name)).toEqual([
      'a_r0',
      'b_r0',
      'b_r1',
      'a_r1',
      'a_r2',
      'b_r2',
      'c_r0',
      'c_r1',
      'c_r2',
    ])
    const result = (name: string, throughput: number, avg: number) => ({
      name,
      ops: 10,
      throughput,
      latency: { avg, p50: avg, p90: avg, p99: avg, max: avg, count: 10 },
      failed: 0,
      retries: 1,
      errors: 0,
    })
    // One disturbed round (b_r1: 10 ops/s) does not move the median.
    const measured = plan.map((s) =>
      result(s.name, s.name === 'b_r1' ? 10 : 100, s.name === 'b_r1' ? 50 : 2),
    )
    const [[a, b], [c]] = combine(measured) as [[ScenarioResult, ScenarioResult], [ScenarioResult]]
    expect(b).toMatchObject({ name: 'b', throughput: 100, ops: 30, retries: 3 })
    expect(b.latency.avg).toBe(2)
    expect(b.latency.max).toBe(50)
    expect(a.name).toBe('a')
    expect(c.name).toBe('c')
  })

  it('passes the cluster configuration to causeway dev', () => {
    const args = devArgs(
      {
        backend: 'memory',
        regions: 2,
        partitions: 8,
        replicas: 3,
        wanDelayMs: 8,
        withoutHlc: true,
      },
      undefined,
    )
    expect(args.join(' ')).toContain('--regions 2 --partitions 8 --replicas 3 --port 0')
    expect(args).toEqual(expect.arrayContaining(['--memory', '--without-hlc', '--wan-delay', '8']))
    expect(devArgs({ backend: 'disk', regions: 1, partitions: 1, replicas: 1 }, '/d')).toEqual(
      expect.arrayContaining(['--data', '/d']),
    )
    expect(
      devArgs({ backend: 'redis', regions: 1, partitions: 1, replicas: 1 }, undefined),
    ).toEqual(expect.arrayContaining(['--backend', 'redis']))
    // The Redis deployment has the WAN delay and the ablation too (the nukv suite runs all cases).
    const redis = devArgs(
      { backend: 'redis', regions: 2, partitions: 1, replicas: 1, wanDelayMs: 8, withoutHlc: true },
      undefined,
    )
    expect(redis).toEqual(
      expect.arrayContaining(['--backend', 'redis', '--wan-delay', '8', '--without-hlc']),
    )
    // Its followers are Redis replicas: no injected replica lag, said instead of ignored.
    expect(() =>
      devArgs(
        { backend: 'redis', regions: 2, partitions: 1, replicas: 2, replicaLagMs: 5 },
        undefined,
      ),
    ).toThrow(/no --replica-lag/)
  })

  it('starts a cluster as a child process, serves, and stops it', async () => {
    const dev = await startCluster({ backend: 'memory', regions: 2, partitions: 1, replicas: 1 })
    try {
      expect(dev.urls).toHaveLength(2)
      const res = await fetch(`${dev.urls[1]}/v1/topology`)
      expect(res.status).toBe(200)
      expect(((await res.json()) as { region: number }).region).toBe(1)
    } finally {
      await dev.stop()
    }
    await expect(fetch(`${dev.urls[0]}/healthz`)).rejects.toThrow()
  })

  it('replaces only its own section of the report', () => {
    let doc = '# Benchmarks\n\nHand-written intro.\n'
    doc = replaceSection(doc, 'nukv', 'first')
    doc = replaceSection(doc, 'gateway', 'other')
    doc = replaceSection(doc, 'nukv', 'second')
    expect(doc).toContain('Hand-written intro.')
    expect(doc).toContain('<!-- bench:nukv -->\nsecond\n<!-- /bench:nukv -->')
    expect(doc).not.toContain('first')
    expect(doc.indexOf('bench:nukv')).toBeLessThan(doc.indexOf('bench:gateway'))
    expect(table(['a', 'b'], [['1', '2']])).toBe('| a | b |\n| --- | ---: |\n| 1 | 2 |')
  })

  it('renders a chart to PNG headless', async () => {
    const rows = [1, 2, 3].flatMap((x) =>
      ['E', 'M/M'].map((c) => ({ x, y: x * (c === 'E' ? 1 : 2), c })),
    )
    const png = await chartPng(
      lineChart({
        rows,
        x: { field: 'x', title: 'x' },
        y: { field: 'y', title: 'y' },
        series: { field: 'c', title: 'case' },
        title: 't',
      }),
    )
    expect(png.subarray(1, 4).toString()).toBe('PNG')
    expect(png.length).toBeGreaterThan(5000)
  })

  it('sums a CPU profile by function and component', () => {
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9 })
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(idle)', '') },
        { id: 2, callFrame: frame('route', 'file:///w/gateway/dist/http/kv-routes.js') },
        {
          id: 3,
          callFrame: frame('batch', 'file:///w/node_modules/abstract-level/abstract-level.js'),
        },
        { id: 4, callFrame: frame('(garbage collector)', '') },
      ],
      samples: [1, 2, 3, 3, 4, 1],
      timeDeltas: [1000, 1000, 2000, 1000, 1000, 5000],
    }
    const s = summariseProfile(profile)
    expect(s.idleMs).toBe(6)
    expect(s.busyMs).toBe(5)
    expect(s.components.map((c) => [c.name, c.ms])).toEqual([
      ['abstract-level', 3],
      ['gateway/http', 1],
      ['GC', 1],
    ])
    expect(s.functions[0]).toMatchObject({
      name: 'batch',
      where: 'abstract-level/abstract-level.js:10',
      share: 0.6,
    })
    expect(componentOf('node:internal/streams/writable', 'x')).toBe('node:streams')
    expect(componentOf('file:///w/packages/core/src/hlc.ts', 'x')).toBe('@causeway/core')
    // Several processes (the gateways of a Redis deployment) sum as one, their ids kept apart.
    const both = summariseProfile(mergeProfiles([profile, profile]))
    expect(both.busyMs).toBe(10)
    expect(both.idleMs).toBe(12)
    expect(both.components.map((c) => [c.name, c.ms])[0]).toEqual(['abstract-level', 6])
  })
})
