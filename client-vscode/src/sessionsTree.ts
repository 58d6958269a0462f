// The Sessions view (`pimem.sessions`): the sessions of this workspace's folders (pimem/sessions), newest first,
// grouped by day or by agent (a toggle in the view title, remembered per workspace); a session expands into its
// turns (pimem/session). Clicking a session or a turn opens the rendered conversation. The view says why it is
// empty through the context key `pimem.sessions.state` (welcome views in package.json).
import * as vscode from 'vscode';
import { groupSessions, promptLabel, sessionDescription, sessionTooltip, turnDescription, type GroupBy, type SessionGroup } from './history';
import { SessionRequest, SessionsRequest, type SessionSummary, type SessionTurn } from './protocol';
import { formatDate, plainText } from './render';
import { describeError, type PimemServer } from './server';

export const SESSIONS_VIEW = 'pimem.sessions';
export const SessionsCommands = {
  groupByAgent: 'pimem.sessions.groupByAgent',
  groupByDay: 'pimem.sessions.groupByDay',
  refresh: 'pimem.sessions.refresh',
  openConversation: 'pimem.openConversation',
  continueInPi: 'pimem.continueInPi',
} as const;

/** Sessions listed at most (the server's page); the view's message says when there are more. */
const PAGE = 200;
/** Turns listed under a session; the conversation shows the rest. */
const TURNS_SHOWN = 200;
const REFRESH_DELAY_MS = 1500;
const GROUP_BY_KEY = 'pimem.sessions.groupBy';

type State = 'loading' | 'notRunning' | 'syncing' | 'empty' | 'error' | 'ready';

type Node =
  | { kind: 'group'; group: SessionGroup }
  | { kind: 'session'; session: SessionSummary }
  | { kind: 'turn'; session: SessionSummary; turn: SessionTurn; position: number }
  | { kind: 'more'; session: SessionSummary; hidden: number }
  | { kind: 'error'; message: string };

export class SessionsTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [];
  private groupBy: GroupBy;
  private sessions: SessionSummary[] | undefined;
  private total = 0;
  private syncing = false;
  private loadError: string | undefined;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  private generation = 0;

  constructor(
    private readonly server: PimemServer,
    private readonly memento: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.groupBy = memento.get<GroupBy>(GROUP_BY_KEY) === 'agent' ? 'agent' : 'day';
    this.view = vscode.window.createTreeView(SESSIONS_VIEW, { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      this.changed,
      vscode.commands.registerCommand(SessionsCommands.groupByAgent, () => this.setGroupBy('agent')),
      vscode.commands.registerCommand(SessionsCommands.groupByDay, () => this.setGroupBy('day')),
      vscode.commands.registerCommand(SessionsCommands.refresh, () => this.reload()),
      server.onIndexChanged(() => this.scheduleReload()),
      server.onSyncStatus((p) => {
        if (p.syncing !== this.syncing) {
          this.syncing = p.syncing;
          this.updateState();
          if (!p.syncing) {
            this.scheduleReload();
          }
        }
      }),
      server.onDidChangeState(() => this.reload()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.reload()),
      // the list is only fetched while the view is visible
      this.view.onDidChangeVisibility((e) => e.visible && this.sessions === undefined && this.reload()),
    );
    void vscode.commands.executeCommand('setContext', GROUP_BY_KEY, this.groupBy);
    this.updateState();
  }

  dispose(): void {
    if (this.refreshTimer !== undefined) {
      clearTimeout(this.refreshTimer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  private setGroupBy(by: GroupBy): void {
    this.groupBy = by;
    void this.memento.update(GROUP_BY_KEY, by);
    void vscode.commands.executeCommand('setContext', GROUP_BY_KEY, by);
    this.changed.fire(undefined);
  }

  private scheduleReload(): void {
    if (this.refreshTimer !== undefined) {
      clearTimeout(this.refreshTimer);
    }
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.reload();
    }, REFRESH_DELAY_MS);
  }

  /** Forgets the list; the tree asks again (getChildren), if it is visible. */
  private reload(): void {
    this.sessions = undefined;
    this.loadError = undefined;
    this.generation += 1;
    this.changed.fire(undefined);
  }

  private state(): State {
    if (this.server.current.kind !== 'running') {
      return this.server.current.kind === 'starting' ? 'loading' : 'notRunning';
    }
    if (this.loadError !== undefined) {
      return 'error';
    }
    if (this.sessions === undefined) {
      return 'loading';
    }
    if (this.sessions.length === 0) {
      return this.syncing ? 'syncing' : 'empty';
    }
    return 'ready';
  }

  private updateState(): void {
    void vscode.commands.executeCommand('setContext', 'pimem.sessions.state', this.state());
    this.view.message =
      this.sessions !== undefined && this.total > this.sessions.length
        ? `The newest ${this.sessions.length.toLocaleString('en-US')} of ${this.total.toLocaleString('en-US')} sessions.`
        : undefined;
  }

  private async load(): Promise<SessionSummary[]> {
    if (this.sessions !== undefined) {
      return this.sessions;
    }
    if (this.server.current.kind !== 'running' && this.server.current.kind !== 'starting') {
      this.updateState();
      return [];
    }
    const generation = this.generation;
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
    try {
      const result = await this.server.request(SessionsRequest, { folders: folders.length > 0 ? folders : undefined, limit: PAGE });
      if (generation === this.generation) {
        this.sessions = result.sessions;
        this.total = result.total;
      }
    } catch (error) {
      if (generation === this.generation) {
        this.loadError = describeError(error);
        this.log.warn(`Sessions view: ${this.loadError}`);
      }
    }
    this.updateState();
    return this.sessions ?? [];
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (node === undefined) {
      const sessions = await this.load();
      if (this.loadError !== undefined) {
        return [{ kind: 'error', message: this.loadError }];
      }
      return groupSessions(sessions, this.groupBy, Date.now()).map((group) => ({ kind: 'group', group }));
    }
    if (node.kind === 'group') {
      return node.group.sessions.map((session) => ({ kind: 'session', session }));
    }
    if (node.kind === 'session') {
      return this.turns(node.session);
    }
    return [];
  }

  private async turns(session: SessionSummary): Promise<Node[]> {
    try {
      const result = await this.server.request(SessionRequest, { sessionId: session.sessionId, before: 0, after: TURNS_SHOWN - 1 });
      const nodes: Node[] = result.turns.map((turn, n) => ({ kind: 'turn', session, turn, position: result.firstPosition + n + 1 }));
      const hidden = result.turnCount - result.turns.length;
      if (hidden > 0) {
        nodes.push({ kind: 'more', session, hidden });
      }
      return nodes;
    } catch (error) {
      return [{ kind: 'error', message: describeError(error) }];
    }
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'group': {
        const item = new vscode.TreeItem(node.group.label, vscode.TreeItemCollapsibleState.Expanded);
        item.description = `${node.group.sessions.length}`;
        item.contextValue = 'group';
        item.id = `group:${this.groupBy}:${node.group.key}`;
        return item;
      }
      case 'session': {
        const s = node.session;
        const item = new vscode.TreeItem(promptLabel(s.firstPrompt), vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `session:${this.groupBy}:${s.sessionId}`;
        item.description = sessionDescription(s, this.groupBy);
        item.tooltip = sessionTooltip(s);
        item.iconPath = new vscode.ThemeIcon('comment-discussion');
        item.contextValue = s.source === 'codex' ? 'session.codex' : 'session';
        item.accessibilityInformation = { label: `${item.description}: ${promptLabel(s.firstPrompt)}` };
        item.command = { command: SessionsCommands.openConversation, title: 'Open Conversation', arguments: [{ sessionId: s.sessionId }] };
        return item;
      }
      case 'turn': {
        const item = new vscode.TreeItem(promptLabel(node.turn.userText), vscode.TreeItemCollapsibleState.None);
        item.id = `turn:${this.groupBy}:${node.turn.turnId}`;
        item.description = turnDescription(node.turn);
        item.tooltip = plainText(`Turn ${node.position} · ${formatDate(node.turn.ts)}`, 100);
        item.iconPath = new vscode.ThemeIcon('comment');
        item.contextValue = 'turn';
        item.command = {
          command: SessionsCommands.openConversation,
          title: 'Open Conversation',
          arguments: [{ sessionId: node.session.sessionId, turnId: node.turn.turnId }],
        };
        return item;
      }
      case 'more': {
        const item = new vscode.TreeItem(`${node.hidden.toLocaleString('en-US')} more turns…`, vscode.TreeItemCollapsibleState.None);
        item.command = { command: SessionsCommands.openConversation, title: 'Open Conversation', arguments: [{ sessionId: node.session.sessionId }] };
        return item;
      }
      case 'error': {
        const item = new vscode.TreeItem(plainText(`Could not list the sessions: ${node.message}`, 200), vscode.TreeItemCollapsibleState.None);
        item.iconPath = new vscode.ThemeIcon('warning');
        return item;
      }
    }
  }
}
