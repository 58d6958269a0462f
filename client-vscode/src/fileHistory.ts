// Memory of each file: the File History view (`pimem.fileHistory`) lists the past conversations whose tool calls
// touched the active editor's file (pimem/fileHistory), and a CodeLens at the top of a file says how many edited it
// ("3 past conversations edited this file"; setting pimem.fileHistory.codeLens). Both read one cache of answers,
// emptied whenever the server's index changes.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { SECTION } from './config';
import { fileHistoryMessage, fileLensTitle, fileSessionDescription, fileSessionTooltip, promptLabel } from './history';
import { FileHistoryRequest, type FileHistoryResult, type FileSession } from './protocol';
import { plainText } from './render';
import { describeError, type PimemServer } from './server';

export const FILE_HISTORY_VIEW = 'pimem.fileHistory';
export const FileHistoryCommands = {
  show: 'pimem.showFileHistory',
  refresh: 'pimem.fileHistory.refresh',
} as const;
export const CODE_LENS_SETTING = 'fileHistory.codeLens';

/** Sessions asked for per file (the view lists them; the CodeLens needs only the counts). */
const LIMIT = 50;
const CACHE_SIZE = 200;
const REFRESH_DELAY_MS = 1000;

/** pimem/fileHistory answers per path, forgotten when the index changes. */
export class FileHistoryCache implements vscode.Disposable {
  private readonly answers = new Map<string, Promise<FileHistoryResult>>();
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the cached answers may be stale (new turns, another server). */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly server: PimemServer) {
    this.disposables = [
      this.changed,
      server.onIndexChanged(() => this.scheduleClear()),
      server.onDidChangeState((s) => s.kind === 'running' && this.clear()),
    ];
  }

  /** The history of a file (an absolute path); rejects when the server cannot answer. */
  get(file: string): Promise<FileHistoryResult> {
    let answer = this.answers.get(file);
    if (answer === undefined) {
      answer = this.server.request(FileHistoryRequest, { path: file, limit: LIMIT });
      const asked = answer;
      // a failed answer is asked again next time
      void asked.catch(() => this.answers.get(file) === asked && this.answers.delete(file));
      if (this.answers.size >= CACHE_SIZE) {
        const oldest = this.answers.keys().next().value;
        if (oldest !== undefined) {
          this.answers.delete(oldest);
        }
      }
      this.answers.set(file, answer);
    }
    return answer;
  }

  clear(): void {
    this.answers.clear();
    this.changed.fire();
  }

  private scheduleClear(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.clear();
    }, REFRESH_DELAY_MS);
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

type Node = { kind: 'session'; session: FileSession } | { kind: 'error'; message: string };

type State = 'noFile' | 'loading' | 'notRunning' | 'empty' | 'ready';

/** The File History view: follows the active editor's file (editors of other schemes leave it as it is). */
export class FileHistoryView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changedTree = new vscode.EventEmitter<undefined>();
  readonly onDidChangeTreeData = this.changedTree.event;
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[];
  private file: vscode.Uri | undefined;

  constructor(
    private readonly server: PimemServer,
    private readonly cache: FileHistoryCache,
  ) {
    this.view = vscode.window.createTreeView(FILE_HISTORY_VIEW, { treeDataProvider: this });
    this.disposables = [
      this.view,
      this.changedTree,
      vscode.window.onDidChangeActiveTextEditor((editor) => this.follow(editor)),
      cache.onDidChange(() => this.changedTree.fire(undefined)),
      vscode.commands.registerCommand(FileHistoryCommands.refresh, () => cache.clear()),
      vscode.commands.registerCommand(FileHistoryCommands.show, (uri?: unknown) => this.show(uri)),
    ];
    this.follow(vscode.window.activeTextEditor);
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  /** Shows the view for a file (the CodeLens passes its document's URI; the palette: the active editor's). */
  private async show(uri: unknown): Promise<void> {
    if (uri instanceof vscode.Uri && uri.scheme === 'file') {
      this.setFile(uri);
    }
    await vscode.commands.executeCommand(`${FILE_HISTORY_VIEW}.focus`);
  }

  private follow(editor: vscode.TextEditor | undefined): void {
    // focus moving to a webview, the sidebar or the output leaves the list of the file that was being read
    if (editor?.document.uri.scheme === 'file') {
      this.setFile(editor.document.uri);
    } else if (this.file === undefined) {
      this.setState('noFile');
    }
  }

  private setFile(uri: vscode.Uri): void {
    if (this.file?.toString() === uri.toString()) {
      return;
    }
    this.file = uri;
    this.view.description = plainText(path.basename(uri.fsPath), 60);
    this.changedTree.fire(undefined);
  }

  private setState(state: State, message?: string): void {
    void vscode.commands.executeCommand('setContext', 'pimem.fileHistory.state', state);
    this.view.message = message;
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (node !== undefined) {
      return [];
    }
    const file = this.file;
    if (file === undefined) {
      this.setState('noFile');
      return [];
    }
    if (this.server.current.kind !== 'running' && this.server.current.kind !== 'starting') {
      this.setState('notRunning');
      return [];
    }
    this.setState('loading');
    let history: FileHistoryResult;
    try {
      history = await this.cache.get(file.fsPath);
    } catch (error) {
      this.setState('ready');
      return [{ kind: 'error', message: describeError(error) }];
    }
    if (this.file !== file) {
      return []; // another file meanwhile: its own refresh follows
    }
    if (history.sessions.length === 0) {
      this.setState('empty');
      return [];
    }
    this.setState('ready', fileHistoryMessage(path.basename(file.fsPath), history));
    return history.sessions.map((session) => ({ kind: 'session', session }));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'error') {
      const item = new vscode.TreeItem(plainText(`Could not read the file's history: ${node.message}`, 200));
      item.iconPath = new vscode.ThemeIcon('warning');
      return item;
    }
    const s = node.session;
    const item = new vscode.TreeItem(promptLabel(s.prompt), vscode.TreeItemCollapsibleState.None);
    item.id = `file-session:${s.sessionId}`;
    item.description = fileSessionDescription(s);
    item.tooltip = fileSessionTooltip(s);
    const changed = s.actions.some((a) => a !== 'read');
    item.iconPath = new vscode.ThemeIcon(changed ? 'edit' : 'eye');
    item.contextValue = s.source === 'codex' ? 'fileSession.codex' : 'fileSession';
    item.accessibilityInformation = { label: `${item.description}: ${promptLabel(s.prompt)}` };
    item.command = { command: 'pimem.openConversation', title: 'Open Conversation', arguments: [{ sessionId: s.sessionId, turnId: s.turnId }] };
    return item;
  }
}

/** "3 past conversations edited this file" at the top of a file, opening the File History view. */
export class FileHistoryCodeLens implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly cache: FileHistoryCache) {
    this.disposables = [
      this.changed,
      cache.onDidChange(() => this.changed.fire()),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(`${SECTION}.${CODE_LENS_SETTING}`) && this.changed.fire()),
    ];
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  async provideCodeLenses(document: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (document.uri.scheme !== 'file' || !vscode.workspace.getConfiguration(SECTION).get<boolean>(CODE_LENS_SETTING, true)) {
      return [];
    }
    let history: FileHistoryResult;
    try {
      history = await this.cache.get(document.uri.fsPath);
    } catch {
      return []; // no server (yet): the cache fires when it is running
    }
    const title = fileLensTitle(history);
    if (title === undefined) {
      return [];
    }
    return [
      new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), {
        title,
        tooltip: 'Pi Memory: show them in the File History view',
        command: FileHistoryCommands.show,
        arguments: [document.uri],
      }),
    ];
  }
}
