// The memory of each line in the editor (issue 23, `pimem/lineHistory`): an annotation after the cursor's line
// ("Claude Code · 3 days ago · make the cache TTL configurable", opt-in: pimem.lineAnnotation.enabled), a hover on a
// selection or on the cursor's line ("written by …" → Open conversation at that turn, the edit highlighted), and
// "Pi Memory: Which Conversation Wrote This?" (a quick pick of the selected lines' conversations). The server
// attributes the lines; this module asks, caches one answer per line of a document version and renders
// (src/lineHistoryRender.ts). The hover's links carry only an id of a turn kept here, never transcript text.
import * as vscode from 'vscode';
import { SECTION } from './config';
import { ErrorCodes, LineHistoryRequest, type LineAttribution, type LineHistoryParams } from './protocol';
import { annotationText, hoverTurns, lineHoverMarkdown, pickRows, selectedLines, type TurnLines } from './lineHistoryRender';
import { describeError, type PimemServer } from './server';

export const LineHistoryCommands = {
  whichConversation: 'pimem.whichConversation',
  // the same command titled for the editor context menu (menus show no category)
  whichConversationFromMenu: 'pimem.whichConversationFromMenu',
  /** Opens a turn a hover listed ({linkId}); hidden from the palette. */
  openLink: 'pimem.lineHistory.open',
} as const;

/** The cursor rests this long on a line before its annotation is asked for. */
const DEBOUNCE_MS = 150;
/** Lines kept per document version for the annotation (the cursor comes back to lines it left). */
const CACHE_LINES = 500;
/** Turns kept for the hovers' links. */
const KEEP_LINKS = 50;
const JSON_RPC_METHOD_NOT_FOUND = -32601;
/** The server attributes a sent buffer of at most 8 MiB (UTF-8): a larger unsaved one is not asked about. */
const MAX_TEXT_BYTES = 8 * 1024 * 1024;

interface OpenTarget {
  sessionId: string;
  turnId: string;
  file: string;
  tool: string | undefined;
}

export class LineHistory implements vscode.Disposable {
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    after: {
      margin: '0 0 0 3em',
      color: new vscode.ThemeColor('editorCodeLens.foreground'),
      fontStyle: 'italic',
    },
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedOpen,
  });
  private readonly disposables: vscode.Disposable[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inFlight: vscode.CancellationTokenSource | undefined;
  /** Annotated editor, to clear it when the cursor moves on. */
  private annotated: vscode.TextEditor | undefined;
  private annotatedLine: number | undefined;
  /** Answers per line: key "uri\0version", then line → its attribution or null (none). */
  private cache = new Map<string, Map<number, LineAttribution | null>>();
  private readonly links = new Map<string, OpenTarget>();
  private linkCounter = 0;
  /** The server does not know pimem/lineHistory (an older one): asked again after a restart. */
  private unsupported = false;

  constructor(
    private readonly server: PimemServer,
    private readonly log: vscode.LogOutputChannel,
    private readonly openConversationCommand: string,
  ) {}

  register(): vscode.Disposable[] {
    const r = vscode.commands.registerCommand;
    this.disposables.push(
      this.decoration,
      vscode.window.onDidChangeTextEditorSelection((e) => this.schedule(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        this.clear();
        if (editor !== undefined) {
          this.schedule(editor);
        }
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0) {
          this.cache.delete(cacheKey(e.document));
          if (this.annotated?.document === e.document) {
            this.clear();
          }
        }
      }),
      vscode.workspace.onDidCloseTextDocument((document) => this.cache.delete(cacheKey(document))),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.lineAnnotation.enabled`)) {
          this.clear();
          const editor = vscode.window.activeTextEditor;
          if (editor !== undefined) {
            this.schedule(editor);
          }
        }
      }),
      // a sync may have stored new edits; a restarted server may know the request now
      this.server.onIndexChanged(() => {
        this.cache = new Map();
      }),
      this.server.onDidChangeState((state) => {
        if (state.kind === 'running') {
          this.unsupported = false;
          this.cache = new Map();
          const editor = vscode.window.activeTextEditor;
          if (editor !== undefined) {
            this.schedule(editor);
          }
        }
      }),
      vscode.languages.registerHoverProvider({ scheme: 'file' }, { provideHover: (d, p, t) => this.provideHover(d, p, t) }),
      r(LineHistoryCommands.whichConversation, () => this.whichConversation()),
      r(LineHistoryCommands.whichConversationFromMenu, () => this.whichConversation()),
      r(LineHistoryCommands.openLink, (args: unknown) => this.openLink(args)),
    );
    return [this];
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.inFlight?.cancel();
    this.inFlight?.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  // ---- the current-line annotation -------------------------------------------------------------------------

  private annotationEnabled(): boolean {
    return vscode.workspace.getConfiguration(SECTION).get<boolean>('lineAnnotation.enabled', false);
  }

  /** Asks for the cursor's line once it rests there; a newer move cancels the older wait and request. */
  private schedule(editor: vscode.TextEditor): void {
    if (editor !== vscode.window.activeTextEditor) {
      return; // another editor's selection (an output channel's, a diff's other side): the active one's wait stays
    }
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.inFlight?.cancel();
    if (this.annotated !== undefined && (this.annotated !== editor || !this.annotatedLineIs(editor))) {
      this.clear();
    }
    if (!this.annotationEnabled() || editor.document.uri.scheme !== 'file') {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.annotate(editor);
    }, DEBOUNCE_MS);
  }

  private annotatedLineIs(editor: vscode.TextEditor): boolean {
    return editor.selection.isEmpty && this.annotatedLine === editor.selection.active.line;
  }

  private async annotate(editor: vscode.TextEditor): Promise<void> {
    if (!editor.selection.isEmpty) {
      return; // GitLens too shows nothing while text is selected: the hover and the command cover selections
    }
    const document = editor.document;
    const line = editor.selection.active.line;
    const version = document.version;
    const source = new vscode.CancellationTokenSource();
    this.inFlight = source;
    let found: LineAttribution | null | undefined;
    let cancelled: boolean;
    try {
      found = await this.lineAttribution(document, line, source.token);
    } finally {
      cancelled = source.token.isCancellationRequested;
      if (this.inFlight === source) {
        this.inFlight = undefined;
      }
      source.dispose();
    }
    // the cursor may have moved while the server answered (a newer request then cancelled this one)
    const cursor = editor.selection;
    const stillThere =
      !cancelled && vscode.window.activeTextEditor === editor && document.version === version && cursor.isEmpty && cursor.active.line === line;
    if (!stillThere || found === undefined) {
      return;
    }
    if (found === null) {
      this.clear();
      return;
    }
    const end = document.lineAt(line).range.end;
    editor.setDecorations(this.decoration, [
      { range: new vscode.Range(end, end), renderOptions: { after: { contentText: annotationText(found, Date.now()) } } },
    ]);
    this.annotated = editor;
    this.annotatedLine = line;
  }

  private clear(): void {
    this.annotated?.setDecorations(this.decoration, []);
    this.annotated = undefined;
    this.annotatedLine = undefined;
  }

  /** The attribution of one line: from the cache, else asked; undefined when there is no answer (yet). */
  private async lineAttribution(document: vscode.TextDocument, line: number, token: vscode.CancellationToken): Promise<LineAttribution | null | undefined> {
    const key = cacheKey(document);
    const cached = this.cache.get(key)?.get(line);
    if (cached !== undefined) {
      return cached;
    }
    const answer = await this.ask(document, line, line, token);
    if (answer === undefined) {
      return undefined;
    }
    const found = answer.lines.find((l) => l.line === line) ?? null;
    let perLine = this.cache.get(key);
    if (perLine === undefined) {
      // one document version at a time per document: older versions' answers are useless
      for (const other of [...this.cache.keys()]) {
        if (other.startsWith(`${document.uri.toString()}\0`)) {
          this.cache.delete(other);
        }
      }
      perLine = new Map();
      this.cache.set(key, perLine);
    }
    if (perLine.size >= CACHE_LINES) {
      perLine.clear();
    }
    perLine.set(line, found);
    return found;
  }

  /**
   * `pimem/lineHistory` for lines first..last (0-based, inclusive): the file's path as the server resolved it and
   * the attributed lines among them; undefined when it could not be answered.
   */
  private async ask(
    document: vscode.TextDocument,
    first: number,
    last: number,
    token: vscode.CancellationToken,
  ): Promise<{ path: string; lines: LineAttribution[] } | undefined> {
    if (this.unsupported || this.server.current.kind !== 'running' || document.uri.scheme !== 'file') {
      return undefined;
    }
    const params: LineHistoryParams = {
      uri: document.uri.toString(),
      range: { start: { line: first, character: 0 }, end: { line: last, character: document.lineAt(last).text.length } },
    };
    if (document.isDirty) {
      const text = document.getText(); // the server attributes the buffer as it is, unsaved edits included
      if (text.length > MAX_TEXT_BYTES || Buffer.byteLength(text, 'utf8') > MAX_TEXT_BYTES) {
        return undefined; // the server would refuse it (and the cursor moves often): say nothing rather than warn each time
      }
      params.text = text;
    }
    try {
      const result = await this.server.request(LineHistoryRequest, params, token);
      const lines = Array.isArray(result.lines) ? result.lines.filter((l) => Number.isInteger(l.line) && l.line >= first && l.line <= last) : [];
      return { path: typeof result.path === 'string' && result.path.length > 0 ? result.path : document.uri.fsPath, lines };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === JSON_RPC_METHOD_NOT_FOUND) {
        this.unsupported = true;
        this.log.warn('This Pi Memory server cannot say which conversation wrote a line (pimem/lineHistory is missing).');
      } else if (code !== ErrorCodes.RequestCancelled && !token.isCancellationRequested) {
        this.log.warn(`Line history failed: ${describeError(error)}`);
      }
      return undefined;
    }
  }

  // ---- the hover -------------------------------------------------------------------------------------------

  private async provideHover(document: vscode.TextDocument, position: vscode.Position, token: vscode.CancellationToken): Promise<vscode.Hover | undefined> {
    if (!vscode.workspace.getConfiguration(SECTION).get<boolean>('lineHistory.hover', true)) {
      return undefined;
    }
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
    if (editor === undefined) {
      return undefined;
    }
    // a selection under the mouse, else the cursor's own line: hovering any other line asks nothing
    const selection = editor.selections.find((s) => !s.isEmpty && s.contains(position));
    let first: number;
    let last: number;
    if (selection !== undefined) {
      ({ first, last } = selectedLines(selection.start, selection.end));
    } else if (editor.selections.some((s) => s.isEmpty && s.active.line === position.line)) {
      first = last = position.line;
    } else {
      return undefined;
    }
    const answer = await this.ask(document, first, last, token);
    if (answer === undefined || answer.lines.length === 0 || token.isCancellationRequested) {
      return undefined;
    }
    const { path, lines } = answer;
    const targets = hoverTurns(lines).map((turn) => this.remember(turn, path));
    const markdown = new vscode.MarkdownString(
      lineHoverMarkdown(lines, Date.now(), (index) => {
        // only this extension's command and the id of a turn kept here: nothing of the transcript is in the link
        const id = targets[index] ?? '';
        return `command:${LineHistoryCommands.openLink}?${encodeURIComponent(JSON.stringify([{ linkId: id }]))}`;
      }),
    );
    markdown.isTrusted = { enabledCommands: [LineHistoryCommands.openLink] };
    markdown.supportHtml = false;
    markdown.supportThemeIcons = false;
    const range = selection ?? document.lineAt(position.line).range;
    return new vscode.Hover(markdown, range);
  }

  private remember(turn: TurnLines, file: string): string {
    this.linkCounter += 1;
    const id = `l${String(this.linkCounter)}`;
    this.links.set(id, { sessionId: turn.sessionId, turnId: turn.turnId, file, tool: turn.tools[0] });
    for (const key of this.links.keys()) {
      if (this.links.size <= KEEP_LINKS) {
        break;
      }
      this.links.delete(key);
    }
    return id;
  }

  private async openLink(raw: unknown): Promise<void> {
    const first: unknown = Array.isArray(raw) ? raw[0] : raw;
    const id = typeof first === 'object' && first !== null ? (first as { linkId?: unknown }).linkId : undefined;
    const target = typeof id === 'string' ? this.links.get(id) : undefined;
    if (target === undefined) {
      void vscode.window.showInformationMessage('Pi Memory: hover the line again to open its conversation.');
      return;
    }
    await this.open(target);
  }

  private open(target: OpenTarget): Thenable<unknown> {
    return vscode.commands.executeCommand(this.openConversationCommand, {
      sessionId: target.sessionId,
      turnId: target.turnId,
      file: target.file,
      ...(target.tool === undefined ? {} : { tool: target.tool }),
    });
  }

  // ---- "Which conversation wrote this?" -------------------------------------------------------------------

  private async whichConversation(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.uri.scheme !== 'file') {
      void vscode.window.showInformationMessage('Pi Memory: open a file and select the lines first.');
      return;
    }
    if (this.server.current.kind !== 'running') {
      void vscode.window.showWarningMessage('Pi Memory: the server is not running (Pi Memory: Show Status).');
      return;
    }
    const { first, last } = selectedLines(editor.selection.start, editor.selection.end);
    const source = new vscode.CancellationTokenSource();
    let answer: { path: string; lines: LineAttribution[] } | undefined;
    try {
      answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Pi Memory: which conversation wrote this…' },
        () => this.ask(editor.document, first, last, source.token),
      );
    } finally {
      source.dispose();
    }
    if (answer === undefined) {
      void vscode.window.showWarningMessage(
        this.unsupported ? 'Pi Memory: this server cannot say which conversation wrote a line.' : 'Pi Memory: could not ask which conversation wrote these lines (see the Pi Memory log).',
      );
      return;
    }
    const { path, lines } = answer;
    if (lines.length === 0) {
      const what = first === last ? 'this line' : 'these lines';
      void vscode.window.showInformationMessage(`Pi Memory: no past conversation wrote ${what} as they are now.`);
      return;
    }
    type Item = vscode.QuickPickItem & { turn?: TurnLines };
    const items: Item[] = pickRows(lines, Date.now()).map((row) =>
      row.kind === 'separator'
        ? { label: row.label, kind: vscode.QuickPickItemKind.Separator }
        : { label: row.label, description: row.description, detail: row.detail, turn: row.turn },
    );
    const chosen = await vscode.window.showQuickPick(items, {
      title: 'Pi Memory: Which Conversation Wrote This?',
      placeHolder: 'Open the conversation at the turn whose edit wrote these lines',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (chosen?.turn !== undefined) {
      const turn = chosen.turn;
      await this.open({ sessionId: turn.sessionId, turnId: turn.turnId, file: path, tool: turn.tools[0] });
    }
  }
}

function cacheKey(document: vscode.TextDocument): string {
  return `${document.uri.toString()}\0${String(document.version)}`;
}
