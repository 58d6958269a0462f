// The status bar item (syncing progress, then the number of remembered turns) and the cancellable
// notification shown when a sync lasts longer than a moment. Both are driven by the server's
// `pimem/syncStatus` and `pimem/indexChanged` notifications and by `pimem/status`.
import * as vscode from 'vscode';
import { StatusRequest, type IndexChangedParams, type SyncStatusParams } from './protocol';
import { plainText } from './render';
import { SyncState } from './syncState';
import type { PimemServer, ServerState } from './server';

/** A sync running longer than this gets a cancellable progress notification. */
const NOTIFY_AFTER_MS = 2000;

interface OpenNotification {
  progress: vscode.Progress<{ message?: string; increment?: number }>;
  percent: number;
  done: () => void;
}

export class SyncUi implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private totalTurns: number | undefined;
  /** pimem/status `upgradeRequired`: the store is a newer pimem's, which this one reads but does not sync. */
  private upgradeRequired: string | null = null;
  private readonly syncState = new SyncState();
  private notifyTimer: ReturnType<typeof setTimeout> | undefined;
  private notification: OpenNotification | undefined;
  /** The store failure last told to the user (pimem/syncStatus `error`): said once, not on every live update. */
  private toldError: string | undefined;

  constructor(
    private readonly server: PimemServer,
    private readonly statusCommand: string,
  ) {
    this.item = vscode.window.createStatusBarItem('pimem.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Pi Memory';
    this.item.command = statusCommand;
    this.disposables.push(
      this.item,
      server.onSyncStatus((p) => this.onSyncStatus(p)),
      server.onIndexChanged((p) => this.onIndexChanged(p)),
      server.onDidChangeState((s) => this.onServerState(s)),
    );
    this.render();
    this.item.show();
  }

  dispose(): void {
    this.endNotification();
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  private onServerState(state: ServerState): void {
    if (state.kind === 'running') {
      void this.refreshTotal();
    } else {
      this.syncState.clear();
      this.endNotification();
    }
    this.render();
  }

  private onIndexChanged(p: IndexChangedParams): void {
    this.totalTurns = p.totalTurns;
    this.render();
  }

  private onSyncStatus(p: SyncStatusParams): void {
    this.tellStoreFailure(p);
    const ended = this.syncState.update(p);
    if (ended !== undefined) {
      this.endNotification();
      // "syncing" stays until pimem/status has the new count (src/syncState.ts)
      void this.refreshTotal().finally(() => {
        this.syncState.countKnown(ended);
        this.render();
      });
      return;
    }
    if (this.notification !== undefined) {
      this.reportProgress(this.notification, p);
    } else {
      this.notifyTimer ??= setTimeout(() => {
        this.notifyTimer = undefined;
        if (this.syncState.current !== undefined) {
          this.openNotification();
        }
      }, NOTIFY_AFTER_MS);
    }
    this.render();
  }

  /** A sync (an automatic or live one too) stopped because the store could not be used: say so once per
   *  distinct failure; a sync that ends without one clears it. The server's line is stored-path data: plainText. */
  private tellStoreFailure(p: SyncStatusParams): void {
    if (p.syncing) {
      return;
    }
    if (p.error === undefined) {
      this.toldError = undefined;
      return;
    }
    if (p.error === this.toldError) {
      return;
    }
    this.toldError = p.error;
    void vscode.window
      .showWarningMessage(`Pi Memory could not sync: ${plainText(p.error)}`, 'Show Status')
      .then((choice) => {
        if (choice === 'Show Status') {
          void vscode.commands.executeCommand(this.statusCommand);
        }
      });
  }

  private async refreshTotal(): Promise<void> {
    try {
      const status = await this.server.request(StatusRequest, {});
      this.totalTurns = status.totalTurns;
      this.upgradeRequired = status.upgradeRequired;
      this.render();
    } catch {
      // The server stopped in between: the state change renders the item.
    }
  }

  private render(): void {
    const state = this.server.current;
    this.item.backgroundColor = undefined;
    if (state.kind === 'failed') {
      this.item.text = '$(warning) Pi Memory';
      this.item.tooltip = `Pi Memory: ${plainText(state.message)}`;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    } else if (state.kind !== 'running') {
      this.item.text = '$(loading~spin) Pi Memory';
      this.item.tooltip = 'Pi Memory: starting the server';
    } else if (this.syncState.current !== undefined) {
      const { filesDone, filesTotal, turnsIndexed, turnsToIndex } = this.syncState.current;
      if (turnsToIndex > 0) {
        this.item.text = `$(sync~spin) Pi Memory: indexing ${turnsIndexed}/${turnsToIndex}`;
        this.item.tooltip = `Pi Memory: indexing stored turns (already searchable), ${turnsIndexed} of ${turnsToIndex}`;
      } else {
        this.item.text = `$(sync~spin) Pi Memory: syncing ${filesDone}/${filesTotal}`;
        this.item.tooltip = `Pi Memory: ${this.syncState.current.force ? 'rebuilding' : 'syncing'} transcripts, ${filesDone} of ${filesTotal} files`;
      }
    } else if (this.totalTurns !== undefined && this.upgradeRequired !== null) {
      this.item.text = `$(warning) ${this.totalTurns} ${this.totalTurns === 1 ? 'turn' : 'turns'}`;
      this.item.tooltip = `Pi Memory: ${this.totalTurns} remembered turns, not syncing: ${plainText(this.upgradeRequired, 400)}. Click for status.`;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    } else if (this.totalTurns !== undefined) {
      this.item.text = `$(history) ${this.totalTurns} ${this.totalTurns === 1 ? 'turn' : 'turns'}`;
      this.item.tooltip = `Pi Memory: ${this.totalTurns} remembered turns. Click for status.`;
    } else {
      this.item.text = '$(history) Pi Memory';
      this.item.tooltip = 'Pi Memory';
    }
  }

  private openNotification(): void {
    const first = this.syncState.current;
    void vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: first?.force === true ? 'Pi Memory: rebuilding' : 'Pi Memory: syncing transcripts',
        cancellable: true,
      },
      (progress, cancel) =>
        new Promise<void>((resolve) => {
          const open: OpenNotification = { progress, percent: 0, done: resolve };
          this.notification = open;
          cancel.onCancellationRequested(() => {
            const token = this.syncState.current?.token ?? first?.token ?? null;
            if (token !== null) {
              this.server.cancelSync(token);
            }
            if (this.notification === open) {
              this.notification = undefined;
            }
            resolve();
          });
          if (this.syncState.current !== undefined) {
            this.reportProgress(open, this.syncState.current);
          }
        }),
    );
  }

  private reportProgress(open: OpenNotification, p: SyncStatusParams): void {
    // Two phases: files (first half of the bar), then indexing the stored turns (second half).
    const indexing = p.turnsToIndex > 0;
    const percent = indexing
      ? 50 + Math.min(50, (50 * p.turnsIndexed) / p.turnsToIndex)
      : p.filesTotal > 0 ? Math.min(50, (50 * p.filesDone) / p.filesTotal) : 0;
    const message = indexing ? `indexing ${p.turnsIndexed}/${p.turnsToIndex} turns` : `${p.filesDone}/${p.filesTotal} files`;
    open.progress.report({ message, increment: Math.max(0, percent - open.percent) });
    open.percent = Math.max(open.percent, percent);
  }

  private endNotification(): void {
    if (this.notifyTimer !== undefined) {
      clearTimeout(this.notifyTimer);
      this.notifyTimer = undefined;
    }
    this.notification?.done();
    this.notification = undefined;
  }
}
