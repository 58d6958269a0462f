// Script of the sidebar search (webview view). Builds its controls once (so that focus stays where it is when a
// filter changes), renders the rows the extension posts with textContent only, and sends back what the user
// typed and chose; actions on a row go to the extension by row index.
import { folderName, formatDate, highlightSegments, rowName, sourceLabel, turnsEstimate, type Segment } from '../render';
import type { SearchedTerm } from '../panelProtocol';
import type { FromSearchView, SearchRow, SearchRowAction, SearchSettings, SearchStatus, ToSearchView } from '../searchProtocol';
import { ELLIPSIS, snippetSegments } from '../snippet';

interface VsCodeApi {
  postMessage(message: FromSearchView): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const DEBOUNCE_MS = 250;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className !== undefined) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function byId(id: string): HTMLElement {
  const node = document.getElementById(id);
  if (node === null) {
    throw new Error(`#${id} is missing`);
  }
  return node;
}

function appendSegments(parent: HTMLElement, segments: readonly Segment[]): void {
  for (const s of segments) {
    parent.appendChild(s.hit ? el('mark', undefined, s.text) : document.createTextNode(s.text));
  }
}

class SearchPanel {
  private readonly query = (byId('query') as HTMLInputElement);
  private readonly workspaceOnly = (byId('workspaceOnly') as HTMLInputElement);
  private readonly agentBox = byId('agents') as HTMLFieldSetElement;
  /** Where to search: shown only while a shared store is configured (issue 24). */
  private readonly scope = byId('scope') as HTMLSelectElement;
  private readonly scopeLabel = byId('scopeLabel') as HTMLLabelElement;
  /** One checkbox per source, built from the settings the extension sends (the server's list). */
  private agents: HTMLInputElement[] = [];
  private readonly searched = (byId('searched') as HTMLParagraphElement);
  private readonly count = (byId('count') as HTMLParagraphElement);
  private readonly welcome = (byId('welcome') as HTMLDivElement);
  private readonly list = (byId('results') as HTMLUListElement);
  private readonly more = (byId('more') as HTMLButtonElement);
  private timer: ReturnType<typeof setTimeout> | undefined;
  private history: { turns: number | null; syncing: boolean } = { turns: null, syncing: false };
  private status: SearchStatus = { kind: 'idle' };

  constructor(private readonly vscode: VsCodeApi) {
    const saved = vscode.getState() as { query?: unknown } | undefined;
    if (typeof saved?.query === 'string') {
      this.query.value = saved.query;
    }
    this.query.addEventListener('input', () => this.schedule());
    this.query.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        this.searchNow();
      } else if (e.key === 'ArrowDown') {
        e.preventDefault();
        this.focusCard(0);
      }
    });
    this.workspaceOnly.addEventListener('change', () => this.searchNow());
    this.scope.addEventListener('change', () => this.searchNow());
    this.more.addEventListener('click', () => {
      this.more.disabled = true;
      this.more.textContent = 'Loading more…';
      this.vscode.postMessage({ type: 'more' });
    });
    this.list.addEventListener('keydown', (e) => this.onListKey(e));
    this.renderWelcome();
  }

  /** The saved query is searched again once the extension has sent the settings. */
  start(): void {
    if (this.query.value.trim().length > 0) {
      this.searchNow();
    }
  }

  onMessage(message: ToSearchView): void {
    switch (message.type) {
      case 'settings':
        this.applySettings(message.settings);
        break;
      case 'history':
        this.history = { turns: message.turns, syncing: message.syncing };
        this.renderWelcome();
        break;
      case 'setQuery':
        this.query.value = message.query;
        this.query.focus();
        this.searchNow();
        break;
      case 'focus':
        this.query.focus();
        this.query.select();
        break;
      case 'status':
        this.show(message.status);
        break;
    }
  }

  private applySettings(settings: SearchSettings): void {
    this.workspaceOnly.checked = settings.workspaceOnly && settings.hasWorkspace;
    this.workspaceOnly.disabled = !settings.hasWorkspace;
    this.scopeLabel.hidden = !settings.sharedAvailable;
    this.scope.value = settings.sharedAvailable ? settings.scope : 'local';
    if (this.agents.map((box) => box.value).join('\n') !== settings.agents.map((a) => a.source).join('\n')) {
      for (const box of this.agents) {
        box.parentElement?.remove();
      }
      this.agents = settings.agents.map((agent) => {
        const label = el('label');
        const box = el('input');
        box.type = 'checkbox';
        box.id = `agent-${agent.source}`; // names are [a-z0-9-] (searchProtocol checks what comes back)
        box.value = agent.source;
        box.addEventListener('change', () => this.searchNow());
        label.append(box, document.createTextNode(` ${agent.label}`));
        this.agentBox.appendChild(label);
        return box;
      });
    }
    for (const box of this.agents) {
      box.checked = settings.sources.some((s) => s === box.value);
    }
  }

  private schedule(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => this.searchNow(), DEBOUNCE_MS);
  }

  private searchNow(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.vscode.setState({ query: this.query.value });
    this.list.setAttribute('aria-busy', 'true'); // until the answer (tests wait on it, screen readers too)
    const sources = this.agents.filter((box) => box.checked).map((box) => box.value);
    const scope = this.scopeLabel.hidden ? 'local' : this.scopeValue();
    this.vscode.postMessage({ type: 'search', query: this.query.value, workspaceOnly: this.workspaceOnly.checked, sources, scope });
  }

  private scopeValue(): 'local' | 'mine' | 'team' | 'all' {
    const value = this.scope.value;
    return value === 'mine' || value === 'team' || value === 'all' ? value : 'local';
  }

  private show(status: SearchStatus): void {
    this.status = status;
    this.list.setAttribute('aria-busy', String(status.kind === 'loading'));
    if (status.kind === 'loading') {
      return; // the old rows stay until the new ones arrive (no flashing while typing)
    }
    if (status.kind !== 'results') {
      this.list.replaceChildren();
      this.searched.hidden = true;
      this.count.textContent = '';
      this.more.hidden = true;
      this.renderWelcome(status.kind === 'error' ? status.message : undefined);
      return;
    }
    if (!status.append) {
      this.list.replaceChildren();
      this.renderSearched(status.searched);
    }
    for (const row of status.rows) {
      this.list.appendChild(this.card(row, status.searched.map((s) => s.term)));
    }
    this.roving();
    this.count.textContent = this.list.childElementCount === 0 ? 'No turns' : status.count;
    if (status.note !== undefined) {
      this.count.appendChild(el('span', 'note', ` ${status.note}`));
    }
    this.more.hidden = !status.more;
    this.more.disabled = false;
    this.more.textContent = 'Show more';
    this.renderWelcome();
  }

  private renderSearched(searched: readonly SearchedTerm[]): void {
    this.searched.replaceChildren(document.createTextNode('searched: '));
    searched.forEach((s, i) => {
      if (i > 0) {
        this.searched.appendChild(document.createTextNode(', '));
      }
      const term = el('mark', 'term', s.term);
      if (s.turns !== null) {
        term.title = `in ${turnsEstimate(s.turns)}`;
      }
      this.searched.appendChild(term);
    });
    this.searched.hidden = searched.length === 0;
  }

  /** The welcome text for what is (not) shown: no history yet, syncing, nothing typed, no match, an error. */
  private renderWelcome(error?: string): void {
    this.welcome.replaceChildren();
    const kind = this.status.kind;
    if (error !== undefined) {
      const p = el('p', 'error', error);
      p.setAttribute('role', 'alert');
      this.welcome.appendChild(p);
      return;
    }
    if (kind === 'results' && this.list.childElementCount === 0) {
      this.welcome.appendChild(el('p', undefined, 'No past turns match.'));
      if (this.workspaceOnly.checked) {
        const all = el('button', 'primary', 'Search All Folders');
        all.id = 'searchAll';
        all.addEventListener('click', () => {
          this.workspaceOnly.checked = false;
          this.searchNow();
          this.workspaceOnly.focus();
        });
        this.welcome.appendChild(all);
      } else {
        this.welcome.appendChild(el('p', undefined, 'Try other words, or separate exact phrases with commas.'));
      }
      return;
    }
    if (kind !== 'idle') {
      return;
    }
    if (this.history.syncing) {
      this.welcome.appendChild(el('p', undefined, 'Syncing your conversations with Pi, Claude Code and Codex…'));
    } else if (this.history.turns === 0) {
      this.welcome.appendChild(el('p', undefined, 'No conversations remembered yet. Pi Memory reads the transcripts of Pi, Claude Code and Codex on this machine.'));
      const sync = el('button', 'primary', 'Sync Now');
      sync.id = 'syncNow';
      sync.addEventListener('click', () => this.vscode.postMessage({ type: 'sync' }));
      this.welcome.appendChild(sync);
    } else {
      this.welcome.appendChild(el('p', undefined, 'Type to search your past conversations: a question, an error, an identifier. Separate exact phrases with commas.'));
    }
  }

  private card(row: SearchRow, searched: readonly string[]): HTMLLIElement {
    const terms = row.matched.length > 0 ? row.matched : searched;
    const name = rowName(row);
    const item = el('li', 'card');
    item.setAttribute('role', 'listitem');
    item.setAttribute('aria-label', name);
    item.dataset.index = String(row.index);
    item.dataset.source = row.source;
    item.tabIndex = -1;
    const meta = el('div', 'meta');
    meta.appendChild(el('span', 'agent', sourceLabel(row.source)));
    if (row.author !== null) {
      // a row of the shared store: who wrote it (text only, like every stored value)
      meta.appendChild(el('span', 'author', row.author));
    }
    const cwd = el('span', 'cwd', folderName(row.cwd));
    cwd.title = row.cwd;
    meta.appendChild(cwd);
    meta.appendChild(el('span', 'date', formatDate(row.ts)));
    if (row.matched.length > 0) {
      meta.appendChild(el('span', 'matched', `matched: ${row.matched.join(', ')}`));
    }
    item.appendChild(meta);
    let long = false;
    for (const [className, label, text] of [['user', 'You', row.userText], ['reply', 'Reply', row.replyText]] as const) {
      const block = el('div', `text ${className}`);
      block.appendChild(el('span', 'label', label));
      const snippet = el('span', 'snippet');
      const segments = snippetSegments(text, terms);
      appendSegments(snippet, segments);
      const body = el('span', 'body');
      appendSegments(body, highlightSegments(text, terms));
      if (text.trim().length === 0) {
        snippet.appendChild(el('span', 'none', className === 'reply' ? '(no reply)' : '(no text)'));
      }
      long ||= segments.some((s) => !s.hit && s.text.includes(ELLIPSIS));
      block.append(snippet, body);
      item.appendChild(block);
    }
    const actions = el('div', 'actions');
    const button = (className: string, label: string, action: SearchRowAction, enabled: boolean): void => {
      const b = el('button', className, label);
      b.disabled = !enabled;
      b.setAttribute('aria-label', `${label}: ${name}`);
      b.addEventListener('click', (e) => {
        e.stopPropagation();
        this.vscode.postMessage({ type: 'row', action, index: row.index });
      });
      actions.appendChild(b);
    };
    button('open', 'Open conversation', 'open', row.canOpen);
    button('raw', 'Open raw transcript', 'raw', row.canOpen);
    button('resume', row.resumeLabel, 'resume', row.canResume);
    button('copy', 'Copy resume command', 'copy', row.canCopy);
    if (long) {
      const expand = el('button', 'expand', 'Show full text');
      expand.setAttribute('aria-expanded', 'false');
      expand.setAttribute('aria-label', `Show full text: ${name}`);
      expand.addEventListener('click', (e) => {
        e.stopPropagation();
        const expanded = item.classList.toggle('expanded');
        expand.textContent = expanded ? 'Show less' : 'Show full text';
        expand.setAttribute('aria-expanded', String(expanded));
      });
      actions.appendChild(expand);
    }
    item.appendChild(actions);
    item.addEventListener('focus', () => this.roving(item));
    return item;
  }

  private cards(): HTMLLIElement[] {
    return Array.from(this.list.querySelectorAll<HTMLLIElement>(':scope > li.card'));
  }

  /** One card is in the Tab order (the focused one, else the first); arrows move between them. */
  private roving(current?: HTMLLIElement): void {
    const cards = this.cards();
    const active = current ?? cards.find((c) => c.tabIndex === 0) ?? cards[0];
    for (const c of cards) {
      c.tabIndex = c === active ? 0 : -1;
    }
  }

  private focusCard(i: number): void {
    const cards = this.cards();
    const card = cards[Math.max(0, Math.min(cards.length - 1, i))];
    card?.focus();
  }

  private onListKey(e: KeyboardEvent): void {
    const target = e.target as HTMLElement;
    const card = target.closest('li.card');
    if (!(card instanceof HTMLLIElement)) {
      return;
    }
    const cards = this.cards();
    const i = cards.indexOf(card);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (e.key === 'ArrowUp' && i === 0) {
        this.query.focus();
      } else {
        this.focusCard(i + (e.key === 'ArrowDown' ? 1 : -1));
      }
    } else if (e.key === 'Home' || e.key === 'End') {
      e.preventDefault();
      this.focusCard(e.key === 'Home' ? 0 : cards.length - 1);
    } else if (e.key === 'Enter' && target === card) {
      e.preventDefault();
      this.vscode.postMessage({ type: 'row', action: 'open', index: Number(card.dataset.index) });
    } else if (e.key === 'Escape') {
      this.query.focus();
    }
  }
}

function main(): void {
  const vscode = acquireVsCodeApi();
  const panel = new SearchPanel(vscode);
  let started = false;
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    const data = event.data as ToSearchView | null;
    if (typeof data !== 'object' || data === null || typeof data.type !== 'string') {
      return;
    }
    panel.onMessage(data);
    if (data.type === 'settings' && !started) {
      started = true;
      panel.start();
    }
  });
  vscode.postMessage({ type: 'ready' });
}

main();
