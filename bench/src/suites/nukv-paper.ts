/**
 * The NuKV paper's published numbers (section 6), for the side-by-side report. Only the figures
 * whose data labels are printed in the paper have numbers: average latency in ms with 10% remote
 * traffic, against client threads per datacenter (Figure 3a, 50:50 put:get) and against the
 * write proportion at 40 threads (Figure 7a). Figures 2 and 6 (100% local) print no labels; the
 * text says every session level stays within 1 ms of eventual there.
 */

/** The seven cases of Table 1: write guarantee / read guarantee, with or without HLC. */
export const CASES = ['E', 'M/E', 'E/M', 'M/M', 'M/E_HLC', 'E/M_HLC', 'M/M_HLC'] as const
export type CaseName = (typeof CASES)[number]

/** Figure 3(a): latency (ms) at 10, 20, 30, 40, 50 client threads per datacenter. */
export const FIG3A_THREADS = [10, 20, 30, 40, 50]
export const FIG3A: Record<CaseName, number[]> = {
  E: [3.05, 4.31, 5.16, 6.35, 7.6],
  'M/E': [4.28, 7.68, 11.6, 17.09, 20.11],
  'E/M': [4.18, 8.21, 11.84, 17.33, 19.67],
  'M/M': [4.54, 9.25, 13.13, 16.68, 21.32],
  'M/E_HLC': [3.09, 4.09, 5.34, 6.4, 7.74],
  'E/M_HLC': [5.08, 8.06, 12.97, 14.13, 19.83],
  'M/M_HLC': [4.78, 7.96, 13.69, 14.96, 19],
}

/** Figure 7(a): latency (ms) at write proportion 0, 0.25, 0.5, 0.75, 1 (40 threads per DC). */
export const FIG7A_WRITES = [0, 0.25, 0.5, 0.75, 1]
export const FIG7A: Record<CaseName, number[]> = {
  E: [1.87, 3.63, 6.31, 8.84, 12.43],
  'M/E': [1.89, 7.35, 16.23, 24.14, 35],
  'E/M': [1.91, 8.2, 14.84, 19.76, 12.09],
  'M/M': [1.91, 8.76, 16.77, 26.53, 32.08],
  'M/E_HLC': [1.89, 3.59, 6.25, 9.17, 11.92],
  'E/M_HLC': [1.87, 8.64, 15.44, 19.89, 11.58],
  'M/M_HLC': [1.9, 8.16, 15.79, 20.05, 11.98],
}

/** The paper's latency for a case at a number of threads (Figure 3a), if printed. */
export function paperLatencyByThreads(name: CaseName, threads: number): number | undefined {
  const i = FIG3A_THREADS.indexOf(threads)
  return i < 0 ? undefined : FIG3A[name][i]
}

/** The paper's latency for a case at a write proportion (Figure 7a, 40 threads), if printed. */
export function paperLatencyByWrites(name: CaseName, writes: number): number | undefined {
  const i = FIG7A_WRITES.indexOf(writes)
  return i < 0 ? undefined : FIG7A[name][i]
}
