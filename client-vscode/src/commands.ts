// The "Pi Memory: …" commands. Each one sends pimem/* requests and shows what comes back.
import * as vscode from 'vscode';
import { openSetting, readSettings } from './config';
import { isShowResultsArgs, type SelectionHoverProvider } from './hover';
import {
  BackfillRequest,
  MigrateCodexRequest,
  RecallRequest,
  SOURCES,
  StatusRequest,
  type MigrationReport,
  type SyncStats,
} from './protocol';
import { parseEntities, recallText, validateEntities } from './query';
import { formatDate, plainText, sourceLabel } from './render';
import type { ResultsPanel } from './resultsPanel';
import { describeError, type PimemServer } from './server';

export const Commands = {
  recall: 'pimem.recall',
  recallSelection: 'pimem.recallSelection',
  // the same command, titled "Pi Memory: Recall Selection" for the editor context menu (menus show no category)
  recallSelectionFromMenu: 'pimem.recallSelectionFromMenu',
  sync: 'pimem.sync',
  rebuild: 'pimem.rebuild',
  migrateCodex: 'pimem.migrateCodex',
  showResults: 'pimem.showResults',
  showStatus: 'pimem.showStatus',
  restart: 'pimem.restart',
} as const;

export class PimemCommands {
  private lastQuery = '';

  constructor(
    private readonly server: PimemServer,
    private readonly panel: ResultsPanel,
    private readonly hover: SelectionHoverProvider,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  register(): vscode.Disposable[] {
    const r = vscode.commands.registerCommand;
    return [
      r(Commands.recall, () => this.recall()),
      r(Commands.recallSelection, () => this.recallSelection()),
      r(Commands.recallSelectionFromMenu, () => this.recallSelection()),
      r(Commands.sync, () => this.sync(false)),
      r(Commands.rebuild, () => this.rebuild()),
      r(Commands.migrateCodex, () => this.migrateCodex()),
      r(Commands.showResults, (args?: unknown) => this.showResults(args)),
      r(Commands.showStatus, () => this.showStatus()),
      r(Commands.restart, () => this.server.restart()),
    ];
  }

  async recall(): Promise<void> {
    const input = await vscode.window.showInputBox({
      title: 'Pi Memory: Recall',
      prompt: 'Words to look for in past conversations (separate phrases with commas)',
      placeHolder: 'e.g. flamingo zeta_ratelimit',
      value: this.lastQuery,
      validateInput: (value) => (value.trim().length === 0 ? undefined : validateEntities(value)),
    });
    if (input === undefined || validateEntities(input) !== undefined) {
      return;
    }
    this.lastQuery = input.trim();
    const entities = parseEntities(input);
    const limit = readSettings().recallLimit;
    const request = { entities, limit };
    await this.panel.run(entities.join(', '), () => this.server.request(RecallRequest, request), { fromText: false, request });
  }

  async recallSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showInformationMessage('Pi Memory: select some text in an editor first.');
      return;
    }
    let range: vscode.Range | undefined = editor.selection.isEmpty ? undefined : editor.selection;
    range ??= editor.document.getWordRangeAtPosition(editor.selection.active);
    const text = range === undefined ? '' : editor.document.getText(range).trim();
    if (text.length === 0) {
      void vscode.window.showInformationMessage('Pi Memory: select some text in an editor first.');
      return;
    }
    const limit = readSettings().recallLimit;
    // free text: the server chooses the terms (the panel shows which); a selection over its limit is cut here
    const request = { text: recallText(text), limit };
    await this.panel.run(text, () => this.server.request(RecallRequest, request), { fromText: true, request });
  }

  showResults(args: unknown): void {
    const first: unknown = Array.isArray(args) ? args[0] : args;
    if (isShowResultsArgs(first)) {
      const stored = this.hover.take(first.hoverId);
      if (stored !== undefined) {
        this.panel.showResult(stored.query, stored.result, { fromText: true, request: { text: stored.query, limit: Math.max(1, stored.result.results.length) } });
        return;
      }
    }
    this.panel.reveal();
  }

  async sync(force: boolean): Promise<SyncStats | undefined> {
    let stats: SyncStats;
    try {
      stats = await this.server.request(BackfillRequest, { force });
    } catch (error) {
      void vscode.window.showErrorMessage(`Pi Memory: ${force ? 'rebuild' : 'sync'} failed: ${describeError(error)}`);
      return undefined;
    }
    const seconds = (stats.durationMs / 1000).toFixed(1);
    let message: string;
    if (stats.cancelled) {
      message = `Pi Memory: ${force ? 'rebuild' : 'sync'} cancelled after ${count(stats.scannedFiles, 'file')}; the next sync finishes it.`;
    } else if (force) {
      // what the memory holds now, not only what this pass wrote
      const held = await this.server.request(StatusRequest, {}).then(
        (s) => `the memory holds ${count(s.totalTurns, 'turn')} in ${count(s.sessions, 'session')}`,
        () => `${count(stats.turns, 'turn')} added or updated`,
      );
      message = `Pi Memory: rebuilt from ${count(stats.scannedFiles, 'transcript file')}: ${held} (${seconds} s).`;
    } else if (stats.turns === 0 && stats.issues.length === 0) {
      message = `Pi Memory: nothing new to sync: ${count(stats.scannedFiles, 'transcript file')} checked, none changed (${seconds} s).`;
    } else {
      message =
        `Pi Memory: synced ${count(stats.scannedFiles, 'transcript file')}: ${count(stats.turns, 'turn')} added or updated; ` +
        `${stats.skippedFiles} unchanged (${seconds} s).`;
    }
    if (stats.issues.length > 0) {
      message += ` ${stats.issues.length} ${stats.issues.length === 1 ? 'file' : 'files'} could not be read.`;
      for (const issue of stats.issues) {
        this.log.warn(`Sync issue (${issue.source}) ${issue.jsonlPath ?? ''}: ${issue.error}`);
      }
      void vscode.window.showWarningMessage(message, 'Show Log').then((c) => c === 'Show Log' && this.server.showLog());
    } else {
      void vscode.window.showInformationMessage(message);
    }
    return stats;
  }

  async rebuild(): Promise<void> {
    const choice = await vscode.window.showWarningMessage(
      'Rebuild Pi Memory?',
      { modal: true, detail: 'Every transcript of Pi, Claude Code and Codex is read again. This can take a while.' },
      'Rebuild',
    );
    if (choice === 'Rebuild') {
      await this.sync(true);
    }
  }

  async migrateCodex(): Promise<void> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    if (folders.length === 0) {
      void vscode.window.showInformationMessage('Pi Memory: open a folder first; Codex sessions are migrated per folder.');
      return;
    }
    const folder =
      folders.length === 1
        ? folders[0]
        : await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Migrate the Codex sessions of which folder?' });
    if (folder === undefined) {
      return;
    }
    const name = plainText(folder.name, 80); // a folder name is whatever the workspace's author chose
    const dry = await this.migrate(folder, true, `Pi Memory: looking for Codex sessions of ${name}`);
    if (dry === undefined) {
      return;
    }
    if (dry.migrated.length === 0) {
      const skipped = dry.skipped.length > 0 ? ` (${dry.skipped.length} skipped: ${summariseReasons(dry)})` : '';
      void vscode.window.showInformationMessage(`Pi Memory: no Codex session of ${name} to migrate${skipped}.`);
      return;
    }
    const detail =
      `${count(dry.migrated.length, 'Codex session')} will be written as Pi sessions ` +
      `(${count(dry.migrated.reduce((n, m) => n + m.messages, 0), 'message')}).` +
      (dry.skipped.length > 0 ? `\n${count(dry.skipped.length, 'session')} will be skipped: ${summariseReasons(dry)}.` : '') +
      (dry.issues.length > 0 ? `\n${count(dry.issues.length, 'file')} could not be read.` : '') +
      '\nThe Codex files are not changed.';
    const choice = await vscode.window.showInformationMessage(
      `Migrate ${count(dry.migrated.length, 'Codex session')} of ${name} to Pi?`,
      { modal: true, detail },
      'Migrate',
    );
    if (choice !== 'Migrate') {
      return;
    }
    const report = await this.migrate(folder, false, `Pi Memory: migrating Codex sessions of ${name}`);
    if (report === undefined) {
      return;
    }
    const written = `Pi Memory: migrated ${count(report.migrated.length, 'Codex session')} of ${name} to Pi`;
    const skipped = report.skipped.length > 0 ? `, skipped ${report.skipped.length} (${summariseReasons(report)})` : '';
    const issues = report.issues.length > 0 ? `; ${count(report.issues.length, 'file')} could not be read` : '';
    const show = report.issues.length > 0 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(`${written}${skipped}${issues}.`, 'Show Details').then((c) => c === 'Show Details' && this.server.showLog());
  }

  async showStatus(): Promise<void> {
    const state = this.server.current;
    if (state.kind !== 'running') {
      const text = state.kind === 'failed' ? `not running: ${plainText(state.message)}` : state.kind;
      // a setting that caused the failure (an unusable interpreter): the button that fixes it comes first
      const setting = state.kind === 'failed' ? state.setting : undefined;
      const buttons = setting !== undefined ? ['Open Setting', 'Restart Server', 'Show Log'] : ['Restart Server', 'Show Log'];
      const choice = await vscode.window.showWarningMessage(`Pi Memory server ${text}.`, ...buttons);
      if (choice === 'Open Setting' && setting !== undefined) {
        await openSetting(setting);
      } else if (choice === 'Restart Server') {
        await this.server.restart();
      } else if (choice === 'Show Log') {
        this.server.showLog();
      }
      return;
    }
    let message: string;
    let upgradeRequired: string | null = null;
    try {
      const s = await this.server.request(StatusRequest, {});
      const perSource = Object.entries(s.turns)
        .filter(([k, n]) => n > 0 || SOURCES.includes(k))
        .map(([k, n]) => `${sourceLabel(k)} ${n}`)
        .join(', ');
      const last =
        s.lastSync === null
          ? 'never synced'
          : `last ${s.lastSync.force ? 'rebuild' : 'sync'} ${formatDate(s.lastSync.finishedAt)}` +
            (s.lastSync.cancelled ? ' (cancelled)' : '') +
            (s.lastSync.issues > 0 ? ` with ${count(s.lastSync.issues, 'issue')}` : '');
      upgradeRequired = s.upgradeRequired;
      message =
        `Pi Memory: ${count(s.totalTurns, 'turn')} in ${count(s.sessions, 'session')} (${perSource}); ` +
        `${s.syncing ? 'syncing now' : last}. ` +
        (upgradeRequired !== null ? `Not syncing (recall still works): ${plainText(upgradeRequired, 400)}. ` : '') +
        (s.turnsToIndex > 0 ? `${count(s.turnsToIndex, 'turn')} not indexed yet (found, more slowly). ` : '') +
        `Database: ${plainText(s.dbPath)}. Server: Python ${plainText(state.version, 20)}.`;
    } catch (error) {
      message = `Pi Memory: status failed: ${describeError(error)}`;
    }
    // a store only a newer pimem may write: a warning, and no Sync Now (it would be refused)
    const choice =
      upgradeRequired !== null
        ? await vscode.window.showWarningMessage(message, 'Show Results', 'Show Log')
        : await vscode.window.showInformationMessage(message, 'Sync Now', 'Show Results', 'Show Log');
    if (choice === 'Sync Now') {
      await this.sync(false);
    } else if (choice === 'Show Results') {
      this.panel.reveal();
    } else if (choice === 'Show Log') {
      this.server.showLog();
    }
  }

  private withNotification<T>(title: string, task: (token: vscode.CancellationToken) => Promise<T>): Thenable<T> {
    return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (_p, token) =>
      task(token),
    );
  }

  /** One `pimem/migrateCodex` call for a folder, with its report logged; undefined after an error (shown). */
  private async migrate(folder: vscode.WorkspaceFolder, dryRun: boolean, title: string): Promise<MigrationReport | undefined> {
    try {
      const result = await this.withNotification(title, (token) =>
        this.server.request(MigrateCodexRequest, { workspaceFolder: folder.uri.toString(), dryRun }, token),
      );
      const report = result.reports[0];
      if (report !== undefined) {
        this.logReport(report);
      }
      return report;
    } catch (error) {
      void vscode.window.showErrorMessage(`Pi Memory: Codex migration failed: ${describeError(error)}`);
      return undefined;
    }
  }

  private logReport(report: MigrationReport): void {
    const mode = report.dryRun ? 'Codex migration (dry run)' : 'Codex migration';
    this.log.info(`${mode} for ${report.folder}: ${report.migrated.length} migrated, ${report.skipped.length} skipped, ${report.issues.length} issues`);
    for (const m of report.migrated) {
      this.log.info(`  ${report.dryRun ? 'would write' : 'wrote'} ${m.piPath} (${m.messages} messages) from ${m.codexPath}`);
    }
    for (const s of report.skipped) {
      this.log.info(`  skipped ${s.codexSessionId}: ${s.reason} (${s.piPath})`);
    }
    for (const i of report.issues) {
      this.log.warn(`  could not read ${i.jsonlPath}: ${i.error}`);
    }
  }
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function summariseReasons(report: MigrationReport): string {
  const reasons = new Map<string, number>();
  for (const s of report.skipped) {
    reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + 1);
  }
  return plainText([...reasons].map(([reason, n]) => (n > 1 ? `${reason} ×${n}` : reason)).join('; '));
}
