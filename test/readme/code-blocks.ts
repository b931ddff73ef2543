/** The fenced code blocks of a Markdown file. */

/** One fenced block. */
export interface CodeBlock {
  /** The info string's words: `ts browser` gives `['ts', 'browser']`. */
  info: string[]
  code: string
  /** 1-based line of the opening fence. */
  line: number
  /** The text of a `<!-- not run by the README test: ... -->` comment just before it. */
  notRun?: string
}

const NOT_RUN = /^<!-- not run by the README test: (.+) -->$/

/** The blocks of `markdown`, in order (fences at the start of a line, ``` only). */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n')
  const blocks: CodeBlock[] = []
  let previous = ''
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]!)
    if (!open) {
      if (lines[i]!.trim() !== '') previous = lines[i]!.trim()
      continue
    }
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!)
    if (i === lines.length) throw new Error(`line ${start + 1}: a code block is never closed`)
    const block: CodeBlock = {
      info: open[1]!.trim().split(/\s+/).filter(Boolean),
      code: `${body.join('\n')}\n`,
      line: start + 1,
    }
    const marker = NOT_RUN.exec(previous)
    if (marker) block.notRun = marker[1]!
    blocks.push(block)
    previous = ''
  }
  return blocks
}
