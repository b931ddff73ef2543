/**
 * The cross-key causality workload of the causal-shipping tests (embedded and Redis): eight
 * clients that stay in their region, region 0 mostly writing and region 1 mostly reading, so a
 * reader that saw a write of a fast partition then reads a slow one's key, which its writer had
 * written just before. Under per-partition WAN delays FIFO shipping shows such anomalies and causal
 * shipping must not.
 */
import { connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import { type WorkloadResult, runWorkload } from '@causeway/history'

/** Keys spread over `partitions` partitions: `perPartition` each, named after `tag`. */
export function keysOver(partitions: number, perPartition: number, tag: string): string[] {
  const keys: string[] = []
  const count = new Array<number>(partitions).fill(0)
  for (let i = 0; keys.length < perPartition * partitions; i++) {
    const key = `causal:${tag}:${i}`
    const p = partitionOf(key, partitions)
    if (count[p]! < perPartition) {
      count[p]!++
      keys.push(key)
    }
  }
  return keys
}

/** Runs the workload on a 2-region cluster at `urls`, at causal or session levels. */
export function crossKeyWorkload(options: {
  urls: string[]
  causal: boolean
  seed: number
  keys: string[]
  durationMs: number
  timeoutMs: number
  convergenceTimeoutMs: number
}): Promise<WorkloadResult> {
  const { causal } = options
  return runWorkload({
    connect,
    url: options.urls,
    regions: 2,
    clients: 8,
    keys: options.keys,
    opsPerClient: 80,
    durationMs: options.durationMs,
    // Several times the slow partitions' delay of calls.
    pauseMs: 50,
    // Clients stay in their region: only shipping can carry causality between the regions.
    switchRegionProbability: 0,
    regionMix: [
      { get: 1, put: 3, delete: 0 },
      { get: 9, put: 1, delete: 0 },
    ],
    level: causal ? { read: 'causal', write: 'causal' } : { read: 'session', write: 'session' },
    seed: options.seed,
    timeoutMs: options.timeoutMs,
    convergence: { timeoutMs: options.convergenceTimeoutMs },
  })
}
