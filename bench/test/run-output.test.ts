import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type RunRecord, loadRecord, saveRecord, writeReport } from '../src/run-output.js'
import type { Suite } from '../src/suite.js'

const suite: Suite<{ n: number }> = {
  name: 'demo',
  title: 'Demo suite',
  estimateS: () => 1,
  measure: () => Promise.resolve({ n: 1 }),
  report: (r, quick) => ({ markdown: `n = ${r.n}${quick ? ' (quick)' : ''}`, charts: [] }),
}

function record(quick: boolean, n: number): RunRecord {
  return {
    suite: 'demo',
    quick,
    backend: 'memory',
    command: `npm run bench -- demo${quick ? ' --quick' : ''}`,
    started: '2025-01-01T00:00:00.000Z',
    seconds: 1,
    machine: { cpu: 'x', cores: 2, memoryGiB: 1, os: 'linux', node: 'v20', loadStart: 0 },
    results: { n },
  }
}

describe('run outputs', () => {
  let root: string
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'causeway-bench-out-'))
  })
  afterEach(() => rm(root, { recursive: true, force: true }))

  it('a quick run writes under bench/results/tmp and leaves the recorded full run and docs alone', async () => {
    const full = record(false, 1)
    expect(await saveRecord(root, full)).toBe(join(root, 'bench/results/demo.json'))
    expect(await writeReport(root, suite as Suite, full)).toBe(join(root, 'docs/benchmarks.md'))
    const recordedJson = await readFile(join(root, 'bench/results/demo.json'), 'utf8')
    const recordedDocs = await readFile(join(root, 'docs/benchmarks.md'), 'utf8')
    expect(recordedDocs).toContain('n = 1')

    const quick = record(true, 2)
    expect(await saveRecord(root, quick)).toBe(join(root, 'bench/results/tmp/demo.json'))
    expect(await writeReport(root, suite as Suite, quick)).toBe(
      join(root, 'bench/results/tmp/benchmarks.md'),
    )
    expect(await readFile(join(root, 'bench/results/demo.json'), 'utf8')).toBe(recordedJson)
    expect(await readFile(join(root, 'docs/benchmarks.md'), 'utf8')).toBe(recordedDocs)
    expect(await readFile(join(root, 'bench/results/tmp/benchmarks.md'), 'utf8')).toContain(
      'n = 2 (quick)',
    )
    expect((await readdir(join(root, 'bench/results'))).sort()).toEqual(['demo.json', 'tmp'])
  })

  it('the report is written again from the saved full run (or, asked, the quick one)', async () => {
    await saveRecord(root, record(false, 7))
    await saveRecord(root, record(true, 8))
    await mkdir(join(root, 'docs'), { recursive: true })
    await writeFile(join(root, 'docs/benchmarks.md'), '# Benchmarks\n\nHand-written text.\n')
    const full = await loadRecord(root, 'demo', 'memory', false)
    expect(full.results).toEqual({ n: 7 })
    await writeReport(root, suite as Suite, full)
    const docs = await readFile(join(root, 'docs/benchmarks.md'), 'utf8')
    expect(docs).toContain('Hand-written text.')
    expect(docs).toContain('n = 7')
    expect((await loadRecord(root, 'demo', 'memory', true)).results).toEqual({ n: 8 })
  })
})
