/**
 * A shopping-list item, and how two versions of one (edited on two phones while offline) merge.
 * Pure: the conflict view shows the merge before the user picks it.
 */

/** What one item's key holds. */
export interface Item {
  text: string
  done: boolean
}

/** Whether `value` is an item (values come from other devices: check them). */
export function isItem(value: unknown): value is Item {
  const v = value as Partial<Item> | null
  return (
    typeof v === 'object' && v !== null && typeof v.text === 'string' && typeof v.done === 'boolean'
  )
}

/**
 * Merges the versions of one item: every distinct text, in order, joined with " / " (nobody's
 * edit disappears; the user can shorten it), and done when any phone ticked it (someone bought
 * it). The same versions in any order merge to texts in the order given, so callers pass them
 * as the gateway orders siblings, which every phone sees alike.
 */
export function mergeItems(versions: readonly Item[]): Item {
  const texts: string[] = []
  for (const v of versions) {
    for (const part of v.text.split(' / ')) if (!texts.includes(part)) texts.push(part)
  }
  return { text: texts.join(' / '), done: versions.some((v) => v.done) }
}
