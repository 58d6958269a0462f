// The Pi Memory sidebar's search (webview view `pimem.search`): a search box with the results below it, live
// as the user types. The HTML is a fixed shell under a strict Content-Security-Policy; rows are posted as data
// and rendered by dist/search.js with textContent only. The folder filter ("this workspace only") and the
// agents are remembered per workspace (workspaceState).
import * as vscode from 'vscode';
import { isShowResultsArgs, type SelectionHoverProvider } from './hover';
import {
  RecallRequest,
  SOURCE_NAME,
  SOURCES,
  SourcesRequest,
  StatusRequest,
  type RecallParams,
  type RecallResult,
  type RecallRow,
  type RecallScope,
  type Source,
} from './protocol';
import { searchedTerms, sourceLabel } from './render';
import type { RowActions } from './rowActions';
import {
  authorLabel,
  parseFromSearchView,
  sharedNote,
  type SearchRow,
  type SearchSettings,
  type SearchStatus,
  type ToSearchView,
} from './searchProtocol';
import {
  afterMore,
  countText,
  firstPaging,
  mergeRows,
  nextWindow,
  PAGE_SIZE,
  parseSearch,
  queryParams,
  type Paging,
} from './searchModel';
import { describeError, type PimemServer } from './server';
import { webviewPage } from './webviewPage';

export const SEARCH_VIEW_ID = 'pimem.search';
export const FOCUS_SEARCH_COMMAND = 'pimem.focusSearch';
const WORKSPACE_ONLY_KEY = 'pimem.search.workspaceOnly';
const SOURCES_KEY = 'pimem.search.sources';
const SCOPE_KEY = 'pimem.search.scope';
/** The word of the probe that asks whether a shared store is configured (it matches nothing, cheaply). */
const SHARED_PROBE = 'pimem-shared-store-probe-0f3a9c';

interface Search {
  params: RecallParams;
  /** One request per folder (undefined: no folder filter). */
  cwds: (string | undefined)[];
  fromText: boolean;
  result: RecallResult;
  paging: Paging;
  /** Said under the count when the shared store's part is missing. */
  note: string | undefined;
}

export class SearchView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private rows: RecallRow[] = [];
  private search: Search | undefined;
  /** Increases with every search, so that a slow answer cannot overwrite a newer one. */
  private generation = 0;
  private searches = 0;
  private pendingQuery: string | undefined;
  /** The box is to get the focus once the webview has loaded (messages before its `ready` are lost). */
  private pendingFocus = false;
  private ready = false;
  private readonly disposables: vscode.Disposable[] = [];
  /** The agent filters: the server's sources (pimem/sources), or the three every server reads. */
  private agents: { source: Source; label: string }[] = SOURCES.map((source) => ({ source, label: sourceLabel(source) }));
  /** A shared store is configured (pimem/status): the scope switch is shown. */
  private sharedAvailable = false;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: PimemServer,
    private readonly actions: RowActions,
    private readonly hover: SelectionHoverProvider,
    private readonly state: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      server.onIndexChanged((p) => this.post({ type: 'history', turns: p.totalTurns, syncing: false })),
      server.onSyncStatus((p) => {
        if (!p.syncing) {
          void this.postHistory();
        } else {
          this.post({ type: 'history', turns: null, syncing: true });
        }
      }),
      server.onDidChangeState((s) => {
        if (s.kind === 'running') {
          void this.postHistory();
          void this.loadAgents();
          void this.detectShared();
        }
      }),
    );
  }

  register(): vscode.Disposable[] {
    return [
      vscode.window.registerWebviewViewProvider(SEARCH_VIEW_ID, this),
      vscode.commands.registerCommand(FOCUS_SEARCH_COMMAND, (args?: unknown) => this.focus(args)),
    ];
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  /** Shows the view with the cursor in its box; from a hover's link, searches that hover's text there. */
  async focus(args?: unknown): Promise<void> {
    const first: unknown = Array.isArray(args) ? args[0] : args;
    const stored = isShowResultsArgs(first) ? this.hover.take(first.hoverId) : undefined;
    await vscode.commands.executeCommand(`${SEARCH_VIEW_ID}.focus`);
    if (!this.ready) {
      this.pendingQuery = stored?.query;
      this.pendingFocus = stored === undefined;
    } else if (stored !== undefined) {
      this.post({ type: 'setQuery', query: stored.query });
    } else {
      this.post({ type: 'focus' });
    }
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, enableCommandUris: false, localResourceRoots: [dist, media] };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((raw: unknown) => void this.onMessage(raw));
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
        this.ready = false;
      }
    });
  }

  private post(message: ToSearchView): void {
    void this.view?.webview.postMessage(message);
  }

  private settings(): SearchSettings {
    const saved = this.state.get<unknown>(SOURCES_KEY);
    const all = this.agents.map((a) => a.source);
    const sources = Array.isArray(saved) ? all.filter((s) => saved.includes(s)) : all;
    return {
      workspaceOnly: this.state.get<unknown>(WORKSPACE_ONLY_KEY) === true,
      hasWorkspace: folders().length > 0,
      agents: this.agents,
      sources,
      scope: this.scope(),
      sharedAvailable: this.sharedAvailable,
    };
  }

  /** The saved scope while a shared store is configured; local otherwise. */
  private scope(): RecallScope {
    const saved = this.state.get<unknown>(SCOPE_KEY);
    return this.sharedAvailable && (saved === 'mine' || saved === 'team' || saved === 'all') ? saved : 'local';
  }

  /** The server's list of sources for the agent filters (an older server without pimem/sources keeps the three). */
  private async loadAgents(): Promise<void> {
    if (this.server.current.kind !== 'running') {
      return;
    }
    try {
      const result = await this.server.request(SourcesRequest, {});
      const agents = result.sources
        .filter((s) => typeof s.source === 'string' && SOURCE_NAME.test(s.source))
        .map((s) => ({ source: s.source, label: typeof s.label === 'string' ? s.label : sourceLabel(s.source) }));
      if (agents.length > 0) {
        this.agents = agents;
        if (this.ready) {
          this.post({ type: 'settings', settings: this.settings() });
        }
      }
    } catch (error) {
      this.log.info(`The agent filters stay the three of older servers: ${describeError(error)}`);
    }
  }

  /**
   * Whether a shared store is configured, once per server start: pimem/status says so when it knows (proposed),
   * else one recall of a word nobody writes with a scope: a server without scopes answers no `shared` part, one
   * without a shared store says `unconfigured`; timed out or unreachable is configured (the switch shows, and
   * each answer says what is missing).
   */
  private async detectShared(): Promise<void> {
    if (this.server.current.kind !== 'running') {
      return;
    }
    try {
      const status = await this.server.request(StatusRequest, {});
      if (status.shared !== undefined) {
        this.setShared(status.shared?.configured === true);
        return;
      }
      const probe = await this.server.request(RecallRequest, { entities: [SHARED_PROBE], limit: 1, scope: 'mine' });
      this.setShared(probe.shared !== undefined && probe.shared.state !== 'unconfigured');
    } catch (error) {
      this.log.info(`The search stays on this machine's memory: ${describeError(error)}`);
    }
  }

  private setShared(available: boolean): void {
    if (available !== this.sharedAvailable) {
      this.sharedAvailable = available;
      if (this.ready) {
        this.post({ type: 'settings', settings: this.settings() });
      }
    }
  }

  private async postHistory(): Promise<void> {
    if (this.server.current.kind !== 'running') {
      return;
    }
    try {
      const status = await this.server.request(StatusRequest, {});
      this.post({ type: 'history', turns: status.totalTurns, syncing: status.syncing });
      if (status.shared !== undefined) {
        this.setShared(status.shared?.configured === true);
      }
    } catch {
      // the server stopped meanwhile: its next start posts again
    }
  }

  private async onMessage(raw: unknown): Promise<void> {
    const message = parseFromSearchView(raw);
    if (message === undefined) {
      this.log.warn('Ignored an unexpected message from the search view.');
      return;
    }
    switch (message.type) {
      case 'ready':
        this.ready = true;
        this.post({ type: 'settings', settings: this.settings() });
        void this.postHistory();
        void this.loadAgents();
        if (this.pendingQuery !== undefined) {
          this.post({ type: 'setQuery', query: this.pendingQuery });
        } else if (this.pendingFocus) {
          this.post({ type: 'focus' });
        }
        this.pendingQuery = undefined;
        this.pendingFocus = false;
        return;
      case 'search':
        await this.state.update(WORKSPACE_ONLY_KEY, message.workspaceOnly);
        await this.state.update(SOURCES_KEY, message.sources);
        if (this.sharedAvailable) {
          await this.state.update(SCOPE_KEY, message.scope);
        }
        await this.run(message.query, message.workspaceOnly, message.sources, this.sharedAvailable ? message.scope : 'local');
        return;
      case 'more':
        await this.more();
        return;
      case 'sync':
        await vscode.commands.executeCommand('pimem.sync');
        return;
      case 'row': {
        const row = this.rows[message.index];
        if (row === undefined) {
          return;
        }
        if (message.action === 'open') {
          await this.actions.openConversation(row);
        } else if (message.action === 'raw') {
          await this.actions.openRaw(row);
        } else if (message.action === 'resume') {
          this.actions.resumeInTerminal(row);
        } else {
          await this.actions.copyResume(row);
        }
        return;
      }
    }
  }

  private status(status: SearchStatus): void {
    this.post({ type: 'status', status });
  }

  private async run(query: string, workspaceOnly: boolean, sources: Source[], scope: RecallScope): Promise<void> {
    const generation = ++this.generation;
    const parsed = parseSearch(query);
    if (parsed.kind === 'empty') {
      this.rows = [];
      this.search = undefined;
      this.status({ kind: 'idle' });
      return;
    }
    if (parsed.kind === 'invalid') {
      this.status({ kind: 'error', message: parsed.message });
      return;
    }
    if (sources.length === 0) {
      this.status({ kind: 'error', message: 'Choose at least one agent.' });
      return;
    }
    const known = sources.filter((s) => this.agents.some((a) => a.source === s));
    if (known.length === 0) {
      this.status({ kind: 'error', message: 'Choose at least one agent.' });
      return;
    }
    const all = this.agents.every((a) => known.includes(a.source));
    const params: RecallParams = { ...queryParams(parsed), ...(all ? {} : { sources: known }), ...(scope === 'local' ? {} : { scope }) };
    const scoped = workspaceOnly ? folders() : [];
    const cwds = scoped.length > 0 ? scoped : [undefined];
    this.status({ kind: 'loading' });
    let results: RecallResult[];
    try {
      results = await this.recallAll(params, cwds, { offset: 0, limit: PAGE_SIZE, withTotal: true });
    } catch (error) {
      if (generation === this.generation) {
        this.status({ kind: 'error', message: `Search failed: ${describeError(error)}` });
      }
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    const [first] = results;
    if (first === undefined) {
      return;
    }
    const rows = cwds.length > 1 ? mergeRows(results.map((r) => r.results), PAGE_SIZE) : first.results;
    const totals = results.map((r) => r.total).filter((t): t is number => t !== undefined);
    const total = totals.length === results.length ? totals.reduce((a, b) => a + b, 0) : undefined;
    const paging = firstPaging(rows.length, total, results.some((r) => r.totalCapped === true), cwds.length);
    this.rows = rows;
    const note = sharedNote(results.find((r) => r.shared !== undefined && r.shared.state !== 'ok')?.shared);
    this.search = { params, cwds, fromText: parsed.kind === 'text', result: first, paging, note };
    this.searches += 1;
    this.postRows(rows, 0, false);
  }

  private async more(): Promise<void> {
    const search = this.search;
    if (search === undefined || search.paging.done) {
      return;
    }
    const generation = this.generation;
    const window = nextWindow(search.paging);
    let results: RecallResult[];
    try {
      const paging = search.paging.mode === 'offset' ? { offset: window.offset, limit: window.limit } : { limit: window.limit };
      results = await this.recallAll(search.params, search.cwds, paging);
    } catch (error) {
      if (generation === this.generation) {
        this.status({ kind: 'error', message: `Search failed: ${describeError(error)}` });
      }
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    const before = this.rows.length;
    const firstRows = results[0]?.results ?? [];
    if (search.paging.mode === 'offset') {
      const page = firstRows;
      this.rows = [...this.rows, ...page];
      search.paging = afterMore(search.paging, window, page.length);
    } else {
      const all = search.cwds.length > 1 ? mergeRows(results.map((r) => r.results), window.limit) : firstRows;
      const samePrefix = this.rows.every((r, i) => all[i]?.turnId === r.turnId);
      search.paging = afterMore(search.paging, window, all.length);
      this.rows = all;
      if (!samePrefix) {
        this.postRows(all, 0, false);
        return;
      }
    }
    this.postRows(this.rows.slice(before), before, true);
  }

  private recallAll(params: RecallParams, cwds: (string | undefined)[], paging: Partial<RecallParams>): Promise<RecallResult[]> {
    return Promise.all(cwds.map((cwd) => this.server.request(RecallRequest, { ...params, ...paging, ...(cwd === undefined ? {} : { cwd }) })));
  }

  private postRows(rows: RecallRow[], start: number, append: boolean): void {
    const search = this.search;
    if (search === undefined) {
      return;
    }
    this.status({
      kind: 'results',
      id: this.searches,
      fromText: search.fromText,
      searched: searchedTerms(search.result),
      rows: rows.map((row, i) => this.toSearchRow(row, start + i)),
      append,
      count: countText(search.paging),
      more: !search.paging.done,
      ...(search.note === undefined ? {} : { note: search.note }),
    });
  }

  private toSearchRow(row: RecallRow, index: number): SearchRow {
    return {
      index,
      source: row.source,
      cwd: row.cwd,
      ts: row.ts,
      hits: row.hits,
      userText: row.userText,
      replyText: row.replyText,
      toolNames: row.toolNames,
      matched: row.matched,
      canOpen: row.jsonlPath.length > 0,
      canResume: this.actions.canResume(row),
      resumeLabel: this.actions.resumeLabel(row),
      canCopy: row.resumeCommand !== null,
      author: authorLabel(row.author, row.machine),
    };
  }

  private html(webview: vscode.Webview): string {
    return webviewPage(webview, this.extensionUri, {
      script: 'search.js',
      style: 'search.css',
      title: 'Pi Memory: Search',
      body: `<div class="controls" role="search">
<input id="query" type="search" spellcheck="false" autocomplete="off" aria-label="Search past conversations" placeholder="Search past conversations">
<div class="options">
<label><input type="checkbox" id="workspaceOnly"> This workspace only</label>
<label id="scopeLabel" hidden>Scope <select id="scope"><option value="local">This machine</option><option value="mine">My machines</option><option value="team">Team</option><option value="all">All</option></select></label>
<fieldset id="agents"><legend>Agents</legend></fieldset>
</div>
<p id="searched" class="searched" hidden></p>
<p id="count" class="count" aria-live="polite"></p>
</div>
<div id="welcome" class="welcome"></div>
<ul id="results" role="list" aria-label="Past turns"></ul>
<button id="more" hidden>Show more</button>`,
    });
  }
}

function folders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}
