import { describe, expect, it } from 'vitest'
import { durabilityProblems } from '../../src/cluster/durability-check.js'

const server = (appendfsync: string, appendonly = 'yes') => ({
  where: `replica (${appendfsync})`,
  appendonly,
  appendfsync,
})

describe('whether the Redis servers can keep the promised durability', () => {
  it("'leader' needs every replica to fsync each write (any may lead)", () => {
    const promise = { durability: 'leader', replicas: 3, sentinel: false } as const
    expect(durabilityProblems(promise, [server('always'), server('always')])).toEqual([])
    const [problem] = durabilityProblems(promise, [server('always'), server('everysec')])
    expect(problem).toMatch(
      /replica \(everysec\) \(appendfsync everysec\) may lose the last second/,
    )
  })

  it("'majority' needs followers and Sentinel, and an AOF that is flushed", () => {
    const good = { durability: 'majority', replicas: 3, sentinel: true } as const
    expect(durabilityProblems(good, [server('everysec'), server('always')])).toEqual([])
    expect(durabilityProblems(good, [server('no')])[0]).toMatch(/appendfsync no/)
    expect(durabilityProblems({ ...good, replicas: 1 }, [server('always')])[0]).toMatch(
      /at least two replicas/,
    )
    expect(durabilityProblems({ ...good, sentinel: false }, [server('always')])[0]).toMatch(
      /without Sentinel nobody promotes/,
    )
  })

  it('names servers without an AOF, and servers it could not ask', () => {
    const promise = { durability: 'majority', replicas: 3, sentinel: true } as const
    const problems = durabilityProblems(promise, [server('always', 'no'), { where: 'gone' }])
    expect(problems).toHaveLength(2)
    expect(problems.join('\n')).toMatch(/could not ask gone/)
    expect(problems.join('\n')).toMatch(/appendonly no/)
  })
})
