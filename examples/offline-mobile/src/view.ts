/**
 * What a phone shows: the list, the network switch, the pending badge, the status line, and the
 * conflict view of an item edited on two phones. Plain DOM: each render replaces the list.
 */
import { mergeItems, type Item } from './merge.js'
import { currentItem, type ItemView } from './shopping-list.js'

/** What the user can do, as the view reports it. */
export interface ViewActions {
  add(text: string): void
  tick(id: string, done: boolean): void
  rename(id: string, text: string): void
  remove(id: string): void
  keep(id: string, version: Item): void
  merge(id: string): void
  network(on: boolean): void
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> & { className?: string } = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = Object.assign(document.createElement(tag), props)
  node.append(...children)
  return node
}

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id)
  if (node === null) throw new Error(`#${id} is missing`)
  return node as T
}

/** The phone's screen. */
export class PhoneView {
  readonly #actions: ViewActions
  readonly #items = byId<HTMLUListElement>('items')
  readonly #badge = byId<HTMLSpanElement>('badge')
  readonly #status = byId<HTMLParagraphElement>('status')
  readonly #network = byId<HTMLInputElement>('network')
  readonly #networkLabel = byId<HTMLSpanElement>('network-label')
  readonly #conflict = byId<HTMLElement>('conflict')
  readonly #versions = byId<HTMLUListElement>('versions')
  readonly #merge = byId<HTMLButtonElement>('merge')
  readonly #footer = byId<HTMLElement>('footer')
  /** The item whose conflict view is open. */
  #open: string | undefined

  constructor(actions: ViewActions) {
    this.#actions = actions
    const form = byId<HTMLFormElement>('add')
    const input = byId<HTMLInputElement>('new-item')
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      const text = input.value.trim()
      if (text === '') return
      input.value = ''
      actions.add(text)
    })
    this.#network.addEventListener('change', () => actions.network(this.#network.checked))
    byId('close-conflict').addEventListener('click', () => this.closeConflict())
    this.#merge.addEventListener('click', () => {
      if (this.#open !== undefined) actions.merge(this.#open)
    })
  }

  /** The switch and its label: offline, connecting (switched on, the gateway not heard yet), online. */
  showNetwork(switchedOn: boolean, reachable: boolean): void {
    this.#network.checked = switchedOn
    const state = !switchedOn ? 'offline' : reachable ? 'online' : 'connecting'
    this.#networkLabel.textContent = state
    document.body.dataset.network = state
  }

  showPending(count: number): void {
    this.#badge.textContent = String(count)
    this.#badge.dataset.count = String(count)
    this.#badge.title = `${count} change${count === 1 ? '' : 's'} waiting for the network`
  }

  showStatus(text: string, kind: 'info' | 'error' = 'info'): void {
    this.#status.textContent = text
    this.#status.dataset.kind = kind
  }

  showFooter(text: string): void {
    this.#footer.textContent = text
  }

  /** Renders the list (and the open conflict view, if its item still has several versions). */
  render(items: { id: string; view: ItemView | undefined }[]): void {
    const rows = items.map(({ id, view }) => this.#row(id, view))
    this.#items.replaceChildren(...rows)
    if (this.#open !== undefined) {
      const open = items.find((i) => i.id === this.#open)?.view
      if (open === undefined || open.versions.length < 2) this.closeConflict()
      else this.openConflict(open)
    }
  }

  #row(id: string, view: ItemView | undefined): HTMLLIElement {
    const li = el('li', { className: 'item' })
    li.dataset.id = id
    const item = view === undefined ? undefined : currentItem(view)
    if (view === undefined || item === undefined) {
      li.append(el('span', { className: 'text unknown' }, 'not synced yet'))
      return li
    }
    const conflicted = view.versions.length > 1
    li.classList.toggle('done', item.done)
    li.classList.toggle('conflicted', conflicted)
    li.classList.toggle('pending', view.pending)
    const tick = el('input', { type: 'checkbox', className: 'tick', checked: item.done })
    tick.setAttribute('aria-label', `bought ${item.text}`)
    tick.addEventListener('change', () => this.#actions.tick(id, tick.checked))
    const text = el('span', { className: 'text', title: 'double-click to rename' }, item.text)
    text.addEventListener('dblclick', () => this.#rename(li, id, item.text))
    li.append(tick, text)
    if (view.pending)
      li.append(el('span', { className: 'pending-dot', title: 'waiting for the network' }, '●'))
    if (conflicted) {
      const button = el(
        'button',
        { type: 'button', className: 'versions-button' },
        `${view.versions.length} versions`,
      )
      button.addEventListener('click', () => this.openConflict(view))
      li.append(button)
    }
    const remove = el('button', { type: 'button', className: 'remove', title: 'remove' }, '×')
    remove.setAttribute('aria-label', `remove ${item.text}`)
    remove.addEventListener('click', () => this.#actions.remove(id))
    li.append(remove)
    return li
  }

  #rename(li: HTMLLIElement, id: string, old: string): void {
    const input = el('input', { className: 'rename', value: old, maxLength: 80 })
    let finished = false
    const done = (save: boolean) => {
      // Enter removes the input, and its removal blurs it: once is enough.
      if (finished) return
      finished = true
      input.remove()
      if (save && input.value.trim() !== '' && input.value.trim() !== old)
        this.#actions.rename(id, input.value)
      else li.querySelector<HTMLElement>('.text')!.hidden = false
    }
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') done(true)
      if (e.key === 'Escape') done(false)
    })
    input.addEventListener('blur', () => done(true), { once: true })
    li.querySelector<HTMLElement>('.text')!.hidden = true
    li.insertBefore(input, li.querySelector('.text'))
    input.focus()
    input.select()
  }

  /** Shows the versions of an item side by side, each with Keep, and the merge. */
  openConflict(view: ItemView): void {
    this.#open = view.id
    this.#conflict.hidden = false
    this.#conflict.dataset.id = view.id
    this.#versions.replaceChildren(
      ...view.versions.map((version, i) => {
        const keep = el('button', { type: 'button', className: 'keep' }, 'Keep')
        keep.addEventListener('click', () => this.#actions.keep(view.id, version))
        const li = el(
          'li',
          { className: 'version' },
          el('span', { className: 'version-label' }, `Version ${i + 1}`),
          el('span', { className: 'text' }, version.text),
          el('span', { className: 'state' }, version.done ? 'bought' : 'to buy'),
          keep,
        )
        return li
      }),
    )
    const merged = mergeItems(view.versions)
    this.#merge.textContent = `Merge: “${merged.text}”${merged.done ? ', bought' : ''}`
  }

  closeConflict(): void {
    this.#open = undefined
    this.#conflict.hidden = true
    delete this.#conflict.dataset.id
  }
}
