// Script of the results webview. It renders the state the extension posts and handles filtering by agent and
// expanding long texts; every action on a row is sent back to the extension by row index.
// All text is put into the DOM with textContent / createTextNode: no HTML is ever parsed from data.
import { formatDate, highlightSegments, highlightTerms, rowName, sourceLabel, turnsEstimate, type Segment } from '../render';
import type { FromWebview, PanelRow, PanelState, RestorableRecall, SearchedTerm, ToWebview } from '../panelProtocol';
import { snippetSegments } from '../snippet';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** Texts longer than this many characters (or lines) start collapsed. */
const COLLAPSE_CHARS = 280;
const COLLAPSE_LINES = 6;

interface Saved {
  hiddenSources: string[];
  /** The request behind the shown results: the extension runs it again when a window reload restores the panel. */
  restore?: RestorableRecall;
}

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

function appendSegments(parent: HTMLElement, segments: readonly Segment[]): void {
  for (const segment of segments) {
    parent.appendChild(segment.hit ? el('mark', undefined, segment.text) : document.createTextNode(segment.text));
  }
}

/** A text with its matches marked: whole (`body`), and as a snippet around the matches (`snippet`, shown collapsed). */
function highlighted(className: string, label: string, text: string, entities: readonly string[]): HTMLElement {
  const block = el('div', `text ${className}`);
  block.appendChild(el('span', 'label', label));
  const snippet = el('div', 'snippet');
  appendSegments(snippet, snippetSegments(text, entities));
  const body = el('div', 'body');
  appendSegments(body, highlightSegments(text, entities));
  if (text.length === 0) {
    body.appendChild(el('span', 'none', '(no reply)'));
    snippet.appendChild(el('span', 'none', '(no reply)'));
  }
  block.appendChild(snippet);
  block.appendChild(body);
  return block;
}

function isLong(text: string): boolean {
  return text.length > COLLAPSE_CHARS || text.split('\n').length > COLLAPSE_LINES;
}

type Results = Extract<PanelState, { kind: 'results' }>;

class ResultsView {
  private state: PanelState = { kind: 'idle' };
  private readonly hidden: Set<string>;
  /** Rows (by index) the user expanded, kept while the same results are updated (a whole turn fetched). */
  private expanded = new Set<number>();
  private resultsId: number | undefined;
  private restore: RestorableRecall | undefined;

  constructor(
    private readonly vscode: VsCodeApi,
    private readonly root: HTMLElement,
  ) {
    const saved = vscode.getState() as Saved | undefined;
    this.hidden = new Set(Array.isArray(saved?.hiddenSources) ? saved.hiddenSources : []);
    this.restore = saved?.restore;
  }

  private save(): void {
    this.vscode.setState({ hiddenSources: [...this.hidden], ...(this.restore === undefined ? {} : { restore: this.restore }) } satisfies Saved);
  }

  show(state: PanelState, restore: RestorableRecall | undefined): void {
    if (restore !== undefined) {
      this.restore = restore;
      this.save();
    }
    const id = state.kind === 'results' ? state.id : undefined;
    if (id === undefined || id !== this.resultsId) {
      this.expanded = new Set();
    }
    this.resultsId = id;
    this.state = state;
    this.render();
  }

  private render(): void {
    const state = this.state;
    this.root.replaceChildren();
    const header = el('header');
    this.root.appendChild(header);
    switch (state.kind) {
      case 'idle':
        this.root.appendChild(el('p', 'hint', 'Run “Pi Memory: Recall…”, or select text and hover it.'));
        return;
      case 'loading':
        header.appendChild(el('h1', 'title', `Recalling “${state.query}”…`));
        this.root.appendChild(el('p', 'loading', 'Searching past conversations…'));
        return;
      case 'error': {
        header.appendChild(el('h1', 'title', `Recall “${state.query}”`));
        const box = el('div', 'error');
        box.id = 'error';
        box.setAttribute('role', 'alert');
        box.appendChild(el('strong', undefined, 'Recall failed: '));
        box.appendChild(document.createTextNode(state.message));
        this.root.appendChild(box);
        return;
      }
      case 'results':
        this.renderResults(header, state);
        return;
    }
  }

  private renderResults(header: HTMLElement, state: Results): void {
    const { entities, rows, query } = state;
    const words = entities.length > 0 ? entities : [query];
    const title = el('h1', 'title');
    if (state.fromText) {
      title.textContent = `Past turns about “${query}”`;
    } else {
      title.appendChild(document.createTextNode('Past turns about '));
      words.forEach((w, i) => {
        if (i > 0) {
          title.appendChild(document.createTextNode(', '));
        }
        title.appendChild(el('mark', undefined, w));
      });
    }
    header.appendChild(title);
    if (state.searched.length > 0) {
      header.appendChild(renderSearched(state.searched));
    }
    if (rows.length === 0) {
      const empty = el('p', 'empty', `No past turns match ${words.map((w) => `“${w}”`).join(', ')}.`);
      empty.id = 'empty';
      this.root.appendChild(empty);
      return;
    }
    const visible = rows.filter((r) => !this.hidden.has(r.source));
    const count = el('p', 'count', `${visible.length} of ${rows.length} shown`);
    count.setAttribute('aria-live', 'polite'); // the count is announced, not the whole list
    header.appendChild(count);
    header.appendChild(this.renderFilters(rows));
    const list = el('div', 'results');
    list.id = 'results';
    list.setAttribute('role', 'list');
    list.setAttribute('aria-label', 'Past turns');
    for (const row of visible) {
      list.appendChild(this.renderRow(row, entities));
    }
    this.root.appendChild(list);
  }

  private renderFilters(rows: PanelRow[]): HTMLElement {
    const counts = new Map<string, number>();
    for (const row of rows) {
      counts.set(row.source, (counts.get(row.source) ?? 0) + 1);
    }
    const bar = el('div', 'filters');
    bar.id = 'filters';
    bar.setAttribute('role', 'group');
    bar.setAttribute('aria-label', 'Filter by agent');
    for (const [source, count] of counts) {
      const label = el('label', 'filter');
      const box = el('input');
      box.type = 'checkbox';
      box.value = source;
      box.checked = !this.hidden.has(source);
      box.addEventListener('change', () => {
        if (box.checked) {
          this.hidden.delete(source);
        } else {
          this.hidden.add(source);
        }
        this.save();
        this.render();
        // the re-rendered checkbox keeps the keyboard focus
        document.querySelector<HTMLInputElement>(`#filters input[value="${source}"]`)?.focus();
      });
      label.appendChild(box);
      label.appendChild(document.createTextNode(` ${sourceLabel(source)} (${count})`));
      bar.appendChild(label);
    }
    return bar;
  }

  private renderRow(row: PanelRow, entities: string[]): HTMLElement {
    const item = el('article', 'result');
    item.dataset.source = row.source;
    const name = rowName(row);
    item.setAttribute('role', 'listitem');
    item.setAttribute('aria-label', name);
    const meta = el('div', 'meta');
    meta.appendChild(el('span', `agent agent-${row.source}`, sourceLabel(row.source)));
    const cwd = el('span', 'cwd', row.cwd);
    cwd.title = row.cwd;
    meta.appendChild(cwd);
    meta.appendChild(el('span', 'date', formatDate(row.ts)));
    meta.appendChild(el('span', 'score', `score ${row.hits}`));
    if (row.matched.length > 0) {
      meta.appendChild(el('span', 'matched', `matched: ${row.matched.join(', ')}`));
    }
    if (row.toolNames.length > 0) {
      meta.appendChild(el('span', 'tools', `tools: ${row.toolNames.join(', ')}`));
    }
    item.appendChild(meta);
    const terms = highlightTerms(row, entities);
    item.appendChild(highlighted('user', 'You', row.userText, terms));
    item.appendChild(highlighted('reply', 'Reply', row.replyText, terms));

    if (row.truncated) {
      item.appendChild(el('p', 'shortened', 'This turn is shortened here: “Show whole turn” fetches all of it.'));
    } else if (row.whole && row.hidden > 0) {
      const more = row.hidden.toLocaleString('en-US');
      item.appendChild(el('p', 'whole', `The turn's start: ${more} more characters are shown in pieces by “Open conversation”.`));
    } else if (row.whole) {
      item.appendChild(el('p', 'whole', 'The whole turn.'));
    }

    const actions = el('div', 'actions');
    if (isLong(row.userText) || isLong(row.replyText)) {
      const collapsed = !this.expanded.has(row.index);
      item.classList.toggle('collapsed', collapsed);
      const expand = el('button', 'expand', collapsed ? 'Show full text' : 'Show less');
      expand.setAttribute('aria-expanded', String(!collapsed));
      expand.addEventListener('click', () => {
        const nowCollapsed = item.classList.toggle('collapsed');
        expand.textContent = nowCollapsed ? 'Show full text' : 'Show less';
        expand.setAttribute('aria-expanded', String(!nowCollapsed));
        if (nowCollapsed) {
          this.expanded.delete(row.index);
        } else {
          this.expanded.add(row.index);
        }
      });
      actions.appendChild(expand);
    }
    if (row.truncated) {
      const whole = el('button', 'whole-turn', 'Show whole turn');
      whole.addEventListener('click', () => {
        whole.disabled = true;
        whole.textContent = 'Fetching the whole turn…';
        this.expanded.add(row.index); // shown expanded once it arrives
        this.vscode.postMessage({ type: 'wholeTurn', index: row.index });
      });
      actions.appendChild(whole);
    }
    const button = (className: string, label: string, type: 'open' | 'raw' | 'resume' | 'copyResume', enabled: boolean): HTMLButtonElement => {
      const b = el('button', className, label);
      b.disabled = !enabled;
      b.setAttribute('aria-label', `${label}: ${name}`); // distinct names for a screen reader's list of buttons
      b.addEventListener('click', () => this.vscode.postMessage({ type, index: row.index }));
      actions.appendChild(b);
      return b;
    };
    button('open', 'Open conversation', 'open', row.canOpen);
    button('raw', 'Open raw transcript', 'raw', row.canOpen);
    button('resume', row.resumeLabel, 'resume', row.canResume);
    const copy = button('copy', 'Copy resume command', 'copyResume', row.resumeCommand !== null);
    if (row.resumeCommand !== null) {
      copy.title = row.resumeCommand;
    }
    item.appendChild(actions);
    return item;
  }
}

/** "searched: timezone, flaky, test": the terms as marks, the server's estimate and weight in their tooltips. */
function renderSearched(searched: SearchedTerm[]): HTMLElement {
  const line = el('p', 'searched');
  line.id = 'searched';
  line.appendChild(document.createTextNode('searched: '));
  searched.forEach((s, i) => {
    if (i > 0) {
      line.appendChild(document.createTextNode(', '));
    }
    const term = el('mark', 'term', s.term);
    if (s.turns !== null) {
      term.title = `in ${turnsEstimate(s.turns)}${s.weight === null ? '' : `, weight ${s.weight}`}`;
    }
    line.appendChild(term);
  });
  return line;
}

function main(): void {
  const vscode = acquireVsCodeApi();
  const root = document.getElementById('root');
  if (root === null) {
    return;
  }
  const view = new ResultsView(vscode, root);
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    const data = event.data as Partial<ToWebview> | null;
    if (typeof data === 'object' && data !== null && data.type === 'state' && data.state !== undefined) {
      view.show(data.state, data.restore);
    }
  });
  vscode.postMessage({ type: 'ready' });
}

main();
