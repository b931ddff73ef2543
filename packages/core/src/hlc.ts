/**
 * Hybrid logical clock (Kulkarni et al.), as NuKV Algorithm 2 lines 14–21 uses it.
 *
 * A timestamp is 48 bits of milliseconds (`l`) and a 16-bit counter (`c`). On the wire it is
 * 16 lowercase hex digits, so comparing two timestamps as strings compares them as times.
 */

/** An HLC timestamp in its wire form: 16 lowercase hex digits (`l` in 12, `c` in 4). */
export type Hlc = string

/** "No dependency": the smallest timestamp. */
export const HLC_ZERO: Hlc = '0000000000000000'

/** Largest counter value; one more carries into the millisecond field. */
export const HLC_MAX_COUNTER = 0xffff
const MAX_MILLIS = 2 ** 48 - 1
const HLC_PATTERN = /^[0-9a-f]{16}$/

/** True when `value` is a well-formed wire HLC. */
export function isHlc(value: unknown): value is Hlc {
  return typeof value === 'string' && HLC_PATTERN.test(value)
}

/** Builds a wire timestamp from its parts. */
export function hlcFrom(l: number, c: number): Hlc {
  if (!Number.isInteger(l) || l < 0 || l > MAX_MILLIS)
    throw new RangeError(`HLC millis out of range: ${l}`)
  if (!Number.isInteger(c) || c < 0 || c > HLC_MAX_COUNTER)
    throw new RangeError(`HLC counter out of range: ${c}`)
  return l.toString(16).padStart(12, '0') + c.toString(16).padStart(4, '0')
}

/** Splits a wire timestamp into milliseconds and counter. */
export function hlcParts(t: Hlc): { l: number; c: number } {
  return { l: parseInt(t.slice(0, 12), 16), c: parseInt(t.slice(12), 16) }
}

/** Milliseconds part of a wire timestamp. */
export function hlcMillis(t: Hlc): number {
  return parseInt(t.slice(0, 12), 16)
}

/** Orders two timestamps: negative, zero or positive. */
export function hlcCompare(a: Hlc, b: Hlc): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** The later of two timestamps. */
export function hlcMax(a: Hlc, b: Hlc): Hlc {
  return a >= b ? a : b
}

/** Options of a {@link HybridClock}. */
export interface HybridClockOptions {
  /**
   * The physical clock in milliseconds. Injected so that tests can step it backwards.
   * @default Date.now
   */
  now?: () => number
  /** The last timestamp this clock issued before a restart; the clock never goes below it. */
  last?: Hlc
}

/**
 * A hybrid logical clock. Every timestamp it returns is strictly greater than every timestamp it
 * returned or observed before, even when the physical clock steps backwards.
 */
export class HybridClock {
  #l = 0
  #c = 0
  readonly #now: () => number

  constructor(options: HybridClockOptions = {}) {
    this.#now = options.now ?? Date.now
    if (options.last !== undefined) {
      const { l, c } = hlcParts(options.last)
      this.#l = l
      this.#c = c
    }
  }

  /** The last timestamp issued or observed, without advancing the clock. */
  peek(): Hlc {
    return hlcFrom(this.#l, this.#c)
  }

  /** The physical clock's reading, in milliseconds. */
  physical(): number {
    return this.#now()
  }

  /** A new timestamp for a local event (a write with no dependency). */
  tick(): Hlc {
    return this.update(HLC_ZERO)
  }

  /**
   * NuKV `updateHLC(t)`: advances past `t` and the physical clock, then returns the new
   * timestamp, which is strictly greater than `t` and than anything this clock issued before.
   */
  update(t: Hlc): Hlc {
    const { l: tl, c: tc } = hlcParts(t)
    const lPrev = this.#l
    const pc = Math.floor(this.#now())
    const l = Math.max(lPrev, pc, tl)
    let c: number
    if (l === lPrev && l === tl) c = Math.max(this.#c, tc) + 1
    else if (l === lPrev) c = this.#c + 1
    else if (l === tl) c = tc + 1
    else c = 0
    this.#set(l, c)
    return hlcFrom(this.#l, this.#c)
  }

  /** Moves the clock to at least `t` without issuing a new timestamp (used on restart and receive). */
  observe(t: Hlc): void {
    const { l, c } = hlcParts(t)
    if (l > this.#l || (l === this.#l && c > this.#c)) {
      this.#l = l
      this.#c = c
    }
  }

  // A counter past 16 bits carries into the millisecond field: the clock runs a millisecond
  // ahead of physical time rather than wrap and break monotonicity.
  #set(l: number, c: number): void {
    if (c > HLC_MAX_COUNTER) {
      l += 1
      c = 0
    }
    if (l > MAX_MILLIS) throw new RangeError('HLC exhausted its 48-bit millisecond range')
    this.#l = l
    this.#c = c
  }
}
