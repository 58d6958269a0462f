// The results panel: one webview that shows the latest recall. Its HTML is a fixed shell; the rows are posted
// as data and rendered by dist/webview.js with textContent only, under a strict Content-Security-Policy.
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { parseFromWebview, type PanelRow, type PanelState, type ToWebview } from './panelProtocol';
import type { RecallResult, RecallRow, TurnRow } from './protocol';
import { oneLine, plainText, searchedTerms, truncate } from './render';

export const RESULTS_VIEW_TYPE = 'pimem.results';
/** Code points of the query shown in the panel (a selection can be long). */
const QUERY_DISPLAY_CHARS = 80;

export interface RecallOptions {
  /** The query is free text (a selection): the server chose the terms. */
  fromText: boolean;
}

/** `pimem/turn`: the whole turn, or null when it is no longer stored. */
export type TurnFetcher = (turnId: string) => Promise<TurnRow | null>;

export class ResultsPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private state: PanelState = { kind: 'idle' };
  private rows: RecallRow[] = [];
  /** Increases with every new state, so that a slow recall cannot overwrite a newer one. */
  private generation = 0;
  private resultsShown = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly fetchTurn: TurnFetcher,
  ) {}

  /** Shows the panel with the last state (or the idle hint). */
  reveal(): void {
    this.ensurePanel().reveal(undefined, false);
  }

  /** Shows a loading state, runs `recall`, then shows its rows or its error. */
  async run(query: string, recall: () => Promise<RecallResult>, options: RecallOptions): Promise<void> {
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
    const rows = result.results;
    this.setState(
      {
        kind: 'results',
        id: ++this.resultsShown,
        query: displayQuery(query),
        fromText: options.fromText,
        entities: result.entities,
        searched: searchedTerms(result),
        rows: rows.map(toPanelRow),
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
    const message: ToWebview = { type: 'state', state: this.state };
    void this.panel?.webview.postMessage(message);
  }

  private ensurePanel(): vscode.WebviewPanel {
    if (this.panel !== undefined) {
      return this.panel;
    }
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel(RESULTS_VIEW_TYPE, panelTitle(this.state), vscode.ViewColumn.Active, {
      enableScripts: true,
      enableCommandUris: false,
      enableFindWidget: true,
      localResourceRoots: [dist, media],
    });
    panel.webview.html = this.html(panel.webview);
    panel.webview.onDidReceiveMessage((raw: unknown) => this.onMessage(raw));
    panel.onDidDispose(() => {
      if (this.panel === panel) {
        this.panel = undefined;
      }
    });
    this.panel = panel;
    return panel;
  }

  private html(webview: vscode.Webview): string {
    const nonce = crypto.randomBytes(18).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'results.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      "base-uri 'none'",
      "form-action 'none'",
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Pi Memory</title>
</head>
<body>
<div id="root" aria-live="polite"></div>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
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
    if (message.type === 'open') {
      void this.openTranscript(row);
    } else if (message.type === 'copyResume') {
      void this.copyResume(row);
    } else {
      void this.showWholeTurn(message.index, row);
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
    rows[index] = { ...toPanelRow(whole, index), whole: true };
    this.state = { ...this.state, rows };
    this.post();
  }

  private async openTranscript(row: RecallRow): Promise<void> {
    try {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(row.jsonlPath));
      const line = row.line !== null && row.line >= 1 ? Math.min(row.line, document.lineCount) - 1 : 0;
      const range = new vscode.Range(line, 0, line, 0);
      await vscode.window.showTextDocument(document, { selection: range, preview: true, viewColumn: vscode.ViewColumn.Beside });
    } catch (error) {
      // The path and the error (which quotes it) come from the store: the log gets them, the notification not.
      this.log.warn(`Could not open ${row.jsonlPath}: ${error instanceof Error ? error.message : String(error)}`);
      void vscode.window
        .showErrorMessage('Could not open the transcript (see the Pi Memory log).', 'Show Log')
        .then((choice) => choice === 'Show Log' && this.log.show(true));
    }
  }

  private async copyResume(row: RecallRow): Promise<void> {
    if (row.resumeCommand === null) {
      return;
    }
    await vscode.env.clipboard.writeText(row.resumeCommand);
    // Not quoted: a resume command is built from stored data, and notifications render links.
    void vscode.window.showInformationMessage('Pi Memory: resume command copied to the clipboard.');
  }
}

function toPanelRow(row: RecallRow, index: number): PanelRow {
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
    resumeCommand: row.resumeCommand,
    matched: row.matched,
    truncated: row.truncated,
    whole: false,
  };
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
