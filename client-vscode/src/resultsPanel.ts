// The results panel: one webview that shows the latest recall. Its HTML is a fixed shell; the rows are posted
// as data and rendered by dist/webview.js with textContent only, under a strict Content-Security-Policy.
import * as vscode from 'vscode';
import { parseFromWebview, parseRestorable, wholeTurnTexts, type PanelRow, type PanelState, type RestorableRecall, type ToWebview } from './panelProtocol';
import { type RecallParams, type RecallResult, type RecallRow, type TurnRow } from './protocol';
import { oneLine, plainText, searchedTerms, truncate } from './render';
import type { RowActions } from './rowActions';
import { webviewPage } from './webviewPage';

export const RESULTS_VIEW_TYPE = 'pimem.results';
/** Code points of the query shown in the panel (a selection can be long). */
const QUERY_DISPLAY_CHARS = 80;

export interface RecallOptions {
  /** The query is free text (a selection): the server chose the terms. */
  fromText: boolean;
  /** The request that gave these results: kept in the webview's state, run again when a reload restores it. */
  request?: RecallParams;
}

/** Runs a recall for a restored panel. */
export type Recaller = (request: RecallParams) => Promise<RecallResult>;

/** `pimem/turn`: the whole turn, or null when it is no longer stored. */
export type TurnFetcher = (turnId: string) => Promise<TurnRow | null>;

export class ResultsPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private state: PanelState = { kind: 'idle' };
  private rows: RecallRow[] = [];
  /** Increases with every new state, so that a slow recall cannot overwrite a newer one. */
  private generation = 0;
  private resultsShown = 0;
  private restorable: RestorableRecall | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly fetchTurn: TurnFetcher,
    private readonly actions: RowActions,
  ) {}

  /** Shows the panel with the last state (or the idle hint), beside the current editor, which keeps the focus. */
  reveal(): void {
    const panel = this.ensurePanel();
    if (!panel.visible) {
      panel.reveal(undefined, true);
    }
  }

  /** Brings back a panel VS Code restored after a window reload (its webview state: `saved`). */
  restore(panel: vscode.WebviewPanel, saved: unknown, recall: Recaller): void {
    if (this.panel !== undefined) {
      panel.dispose(); // one results panel: the live one wins
      return;
    }
    this.adopt(panel);
    const again = parseRestorable(saved);
    if (again !== undefined) {
      void this.run(again.query, () => recall(again.request), { fromText: again.fromText, request: again.request });
    }
  }

  /** The serializer that lets the panel survive a window reload. */
  serializer(recall: Recaller): vscode.WebviewPanelSerializer {
    return {
      deserializeWebviewPanel: (panel: vscode.WebviewPanel, state: unknown) => {
        this.restore(panel, state, recall);
        return Promise.resolve();
      },
    };
  }

  /** Shows a loading state, runs `recall`, then shows its rows or its error. */
  async run(query: string, recall: () => Promise<RecallResult>, options: RecallOptions): Promise<void> {
    this.restorable = options.request === undefined ? undefined : { query, fromText: options.fromText, request: options.request };
    const generation = this.setState({ kind: 'loading', query: displayQuery(query) }, []);
    this.reveal();
    try {
      const result = await recall();
      if (generation === this.generation) {
        this.showResult(query, result, options);
      }
    } catch (error) {
      if (generation === this.generation) {
        const message = error instanceof Error ? error.message : String(error);
        this.setState({ kind: 'error', query: displayQuery(query), message }, []);
      }
    }
  }

  /** Shows rows that are already known (from a hover). */
  showResult(query: string, result: RecallResult, options: RecallOptions): void {
    if (options.request !== undefined) {
      this.restorable = { query, fromText: options.fromText, request: options.request };
    }
    const rows = result.results;
    this.setState(
      {
        kind: 'results',
        id: ++this.resultsShown,
        query: displayQuery(query),
        fromText: options.fromText,
        entities: result.entities,
        searched: searchedTerms(result),
        rows: rows.map((row, index) => this.toPanelRow(row, index)),
      },
      rows,
    );
    this.reveal();
  }

  dispose(): void {
    this.panel?.dispose();
  }

  private setState(state: PanelState, rows: RecallRow[]): number {
    this.generation += 1;
    this.state = state;
    this.rows = rows;
    if (this.panel !== undefined) {
      this.panel.title = panelTitle(state);
      this.post();
    }
    return this.generation;
  }

  private post(): void {
    const message: ToWebview = { type: 'state', state: this.state, ...(this.restorable === undefined ? {} : { restore: this.restorable }) };
    void this.panel?.webview.postMessage(message);
  }

  private ensurePanel(): vscode.WebviewPanel {
    if (this.panel !== undefined) {
      return this.panel;
    }
    // beside the editor the user is reading, which keeps the focus (issue 15 §3)
    const panel = vscode.window.createWebviewPanel(
      RESULTS_VIEW_TYPE,
      panelTitle(this.state),
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      this.webviewOptions(),
    );
    this.adopt(panel);
    return panel;
  }

  private webviewOptions(): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    return { enableScripts: true, enableCommandUris: false, enableFindWidget: true, localResourceRoots: [dist, media] };
  }

  private adopt(panel: vscode.WebviewPanel): void {
    panel.webview.options = this.webviewOptions();
    panel.title = panelTitle(this.state);
    panel.webview.html = this.html(panel.webview);
    panel.webview.onDidReceiveMessage((raw: unknown) => this.onMessage(raw));
    panel.onDidDispose(() => {
      if (this.panel === panel) {
        this.panel = undefined;
      }
    });
    this.panel = panel;
  }

  private html(webview: vscode.Webview): string {
    return webviewPage(webview, this.extensionUri, {
      script: 'webview.js',
      style: 'results.css',
      title: 'Pi Memory',
      images: true,
      body: `<div id="root"></div>`,
    });
  }

  private onMessage(raw: unknown): void {
    const message = parseFromWebview(raw);
    if (message === undefined) {
      this.log.warn('Ignored an unexpected message from the results panel.');
      return;
    }
    if (message.type === 'ready') {
      this.post();
      return;
    }
    const row = this.rows[message.index];
    if (row === undefined) {
      return;
    }
    switch (message.type) {
      case 'open':
        void this.actions.openConversation(row);
        break;
      case 'raw':
        void this.actions.openRaw(row);
        break;
      case 'resume':
        this.actions.resumeInTerminal(row);
        break;
      case 'copyResume':
        void this.actions.copyResume(row);
        break;
      case 'wholeTurn':
        void this.showWholeTurn(message.index, row);
        break;
    }
  }

  /** Replaces a shortened row with the whole turn (`pimem/turn`), in the panel and for its actions. */
  private async showWholeTurn(index: number, row: RecallRow): Promise<void> {
    const generation = this.generation;
    let turn: TurnRow | null;
    try {
      turn = await this.fetchTurn(row.turnId);
    } catch (error) {
      this.log.warn(`Could not fetch the whole turn: ${error instanceof Error ? error.message : String(error)}`);
      void vscode.window.showErrorMessage('Pi Memory: could not fetch the whole turn (see the Pi Memory log).');
      this.post(); // the webview enables its button again
      return;
    }
    if (generation !== this.generation || this.state.kind !== 'results') {
      return; // another recall replaced these rows meanwhile
    }
    if (turn === null) {
      void vscode.window.showWarningMessage('Pi Memory: this turn is no longer in the memory; recall again.');
      this.post();
      return;
    }
    const whole: RecallRow = { ...row, ...turn, truncated: false };
    this.rows[index] = whole;
    const rows = [...this.state.rows];
    rows[index] = { ...this.toPanelRow(whole, index), ...wholeTurnTexts(whole), whole: true };
    this.state = { ...this.state, rows };
    this.post();
  }

  private toPanelRow(row: RecallRow, index: number): PanelRow {
    return {
      index,
      source: row.source,
      cwd: row.cwd,
      ts: row.ts,
      hits: row.hits,
      userText: row.userText,
      replyText: row.replyText,
      toolNames: row.toolNames,
      canOpen: row.jsonlPath.length > 0,
      canResume: this.actions.canResume(row),
      resumeLabel: this.actions.resumeLabel(row),
      resumeCommand: row.resumeCommand,
      matched: row.matched,
      truncated: row.truncated,
      whole: false,
      hidden: 0,
    };
  }
}

function displayQuery(query: string): string {
  return truncate(oneLine(query), QUERY_DISPLAY_CHARS);
}

function panelTitle(state: PanelState): string {
  if (state.kind === 'idle') {
    return 'Pi Memory';
  }
  const words = state.kind === 'results' && state.entities.length > 0 ? state.entities.join(', ') : state.query;
  return `Pi Memory: ${plainText(words, 40)}`;
}
