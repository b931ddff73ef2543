/**
 * CPU time used by a process and all its descendants (a `causeway dev` cluster and the Redis
 * servers it started), read from Linux's `/proc`. On a shared machine wall-clock throughput moves
 * with the neighbours' load; CPU seconds per operation move much less, so the suites report both.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

let ticksPerSecond: number | undefined

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
    } catch {
      ticksPerSecond = 100
    }
  }
  return ticksPerSecond
}

/** `[ppid, utime + stime in ticks]` of a process, from `/proc/<pid>/stat`. */
function stat(pid: number): [number, number] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: fields follow its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return [Number(fields[1]), Number(fields[11]) + Number(fields[12])]
  } catch {
    return undefined
  }
}

/**
 * CPU seconds (user + system) used so far by `pid` and every live descendant; `undefined` where
 * there is no `/proc` (not Linux) or the process is gone.
 */
export function treeCpuSeconds(pid: number): number | undefined {
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return undefined
  }
  const children = new Map<number, number[]>()
  const ticks = new Map<number, number>()
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue
    const s = stat(Number(name))
    if (!s) continue
    ticks.set(Number(name), s[1])
    const siblings = children.get(s[0]) ?? []
    siblings.push(Number(name))
    children.set(s[0], siblings)
  }
  if (!ticks.has(pid)) return undefined
  let total = 0
  const stack = [pid]
  while (stack.length > 0) {
    const p = stack.pop()!
    total += ticks.get(p) ?? 0
    stack.push(...(children.get(p) ?? []))
  }
  return total / clockTicks()
}
