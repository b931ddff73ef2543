/**
 * Says, in one line at the end of a run, how many tests tagged `redis` were skipped because
 * redis-server could not be had, and how to get it: a skip is never silent.
 */
import type { Reporter, TestModule } from 'vitest/node'
import { REDIS_INSTALL_HINT, type RedisAvailability } from './redis-availability.js'

/** A vitest reporter beside the default one. */
export class RedisSkipReporter implements Reporter {
  readonly #availability: RedisAvailability

  constructor(availability: RedisAvailability) {
    this.#availability = availability
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    if (this.#availability.available) return
    let tests = 0
    const files = new Set<string>()
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        if (!test.tags.includes('redis') || test.result().state !== 'skipped') continue
        tests++
        files.add(module.moduleId)
      }
    }
    if (tests === 0) return
    console.log(
      `Redis: ${plural(tests, 'test')} in ${plural(files.size, 'file')} skipped: ${this.#availability.reason}; ` +
        `to run them, ${REDIS_INSTALL_HINT}`,
    )
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}
