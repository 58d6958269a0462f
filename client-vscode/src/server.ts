// Starting, stopping and talking to the pimem language server over stdio: `<python> -I -u launcher/launch.py
// serve` from the extension folder (src/launch.ts), which runs the bundled server and never workspace code.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import type { Readable } from 'node:stream';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  ShowMessageNotification,
  MessageType,
  State,
  StaticFeature,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  type FeatureState,
  type RequestParam,
  type RequestType,
} from 'vscode-languageclient/node';
import { initializationOptions, openSetting, readSettings, workspaceContext } from './config';
import { serverLaunch } from './launch';
import {
  IndexChangedNotification,
  SyncStatusNotification,
  type IndexChangedParams,
  type SyncStatusParams,
} from './protocol';
import { checkInterpreter, findInterpreter, MIN_PYTHON } from './python';
import { plainText } from './render';
import { RestartPolicy } from './restartPolicy';

export type ServerState =
  | { kind: 'stopped' }
  | { kind: 'starting' }
  | { kind: 'running'; python: string; version: string }
  | { kind: 'failed'; message: string; setting?: string }; // setting: the one to fix (Show Status offers it)

const RESTART_DELAY_MS = 1000;

/**
 * vscode-languageclient shows every server-created work-done progress in the status bar by itself. This
 * extension shows sync progress from `pimem/syncStatus` instead (status bar item and a cancellable
 * notification), so the token is accepted here without a second UI. Registered after the built-in
 * progress feature, its handler replaces that feature's.
 */
class QuietWorkDoneProgress implements StaticFeature {
  constructor(private readonly client: LanguageClient) {}
  fillClientCapabilities(): void {
    // window.workDoneProgress is already declared by the built-in progress feature.
  }
  initialize(): void {
    this.client.onRequest(WorkDoneProgressCreateRequest.type, () => undefined);
  }
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {
    // nothing to clear
  }
}

/**
 * A LanguageClient whose failed starts and failed automatic restarts are reported once, by PimemServer (its
 * own notifications would repeat them, with error details that can quote paths).
 */
class PimemLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
    const reportedByPimem = message.endsWith("couldn't create connection to server.") || message === 'Restarting server failed';
    super.error(message, data, reportedByPimem ? false : showNotification);
  }
}

/** Python log lines on stderr → levels of the LogOutputChannel; `onLine` sees every line. */
function pipeStderr(input: Readable, channel: vscode.LogOutputChannel, onLine: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line) => {
    onLine(line);
    if (/\b(CRITICAL|ERROR|Traceback)\b/.test(line)) {
      channel.error(line);
    } else if (/\bWARN(ING)?\b/.test(line)) {
      channel.warn(line);
    } else if (/\bDEBUG\b/.test(line)) {
      channel.debug(line);
    } else {
      channel.info(line);
    }
  });
}

export class PimemServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private state: ServerState = { kind: 'stopped' };
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  /** Serialises start/stop so that overlapping restarts cannot leave two servers running. */
  private queue: Promise<void> = Promise.resolve();
  private readonly exits = new RestartPolicy();
  /** True from an unexpected exit until the automatic restart is running or has failed. */
  private restarting = false;
  /** Last non-empty stderr line of the server, quoted when it fails to start. */
  private lastStderr = '';
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly indexChangedEmitter = new vscode.EventEmitter<IndexChangedParams>();
  private readonly syncStatusEmitter = new vscode.EventEmitter<SyncStatusParams>();

  readonly onDidChangeState = this.stateEmitter.event;
  readonly onIndexChanged = this.indexChangedEmitter.event;
  readonly onSyncStatus = this.syncStatusEmitter.event;

  constructor(
    private readonly extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get current(): ServerState {
    return this.state;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(): Promise<void> {
    this.exits.reset();
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  /** Restart after settings settle (several settings often change at once). */
  scheduleRestart(reason = 'Settings changed'): void {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.log.info(`${reason}: restarting the Pi Memory server.`);
      void this.restart();
    }, RESTART_DELAY_MS);
  }

  /** Sends a request to the running server; rejects with a readable Error when there is none. */
  async request<P, R>(type: RequestType<P, R, void>, params: P, token?: vscode.CancellationToken): Promise<R> {
    if (this.state.kind === 'starting') {
      await this.queue; // a command run right after start-up waits for the server instead of failing
    }
    const client = this.client;
    if (client === undefined || this.state.kind !== 'running') {
      throw new Error(this.notRunningMessage());
    }
    return client.sendRequest(type, params as RequestParam<P>, token);
  }

  /** Cancels a running sync through its work-done progress token (`pimem/syncStatus.token`). */
  cancelSync(token: string): void {
    void this.client?.sendNotification(WorkDoneProgressCancelNotification.type, { token });
  }

  showLog(): void {
    this.log.show(true);
  }

  dispose(): void {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
    }
    void this.stop();
    this.stateEmitter.dispose();
    this.indexChangedEmitter.dispose();
    this.syncStatusEmitter.dispose();
  }

  private notRunningMessage(): string {
    switch (this.state.kind) {
      case 'starting':
        return 'The Pi Memory server is still starting.';
      case 'failed':
        return `The Pi Memory server is not running: ${this.state.message}`;
      default:
        return 'The Pi Memory server is not running.';
    }
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.stateEmitter.fire(state);
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step, step);
    return this.queue;
  }

  private async doStart(): Promise<void> {
    if (this.client !== undefined) {
      return;
    }
    this.setState({ kind: 'starting' });
    this.restarting = false;
    const settings = readSettings();
    const workspace = workspaceContext();
    const interpreter = await findInterpreter(settings.python, workspace, this.log);
    const check =
      interpreter.problem !== undefined
        ? { ok: false as const, problem: interpreter.problem }
        : await checkInterpreter(interpreter.command, this.extensionPath);
    if (!check.ok) {
      const message =
        `Pi Memory needs Python ${MIN_PYTHON.join('.')} or newer to run its server, but "${interpreter.command}" ` +
        `(from ${interpreter.origin}) ${check.problem}. Set "pimem.python" to a suitable interpreter.`;
      this.log.error(message);
      this.setState({ kind: 'failed', message: `no usable Python (${interpreter.command} ${check.problem})`, setting: 'pimem.python' });
      void vscode.window.showErrorMessage(plainText(message, 600), 'Open Setting').then((choice) => {
        if (choice === 'Open Setting') {
          void openSetting('pimem.python');
        }
      });
      return;
    }

    const libs = path.join(this.extensionPath, 'bundled', 'libs');
    if (!fs.existsSync(libs)) {
      this.log.warn(`${libs} is missing: the interpreter must have pimem installed itself.`);
    }
    const { options, problems } = initializationOptions(settings, workspace);
    for (const problem of problems) {
      this.log.warn(problem);
      void vscode.window.showWarningMessage(`Pi Memory: ${problem}.`);
    }
    const launch = serverLaunch(this.extensionPath, interpreter.command);
    const serverOptions: ServerOptions = {
      // No `transport`: plain stdio (TransportKind.stdio would append a --stdio argument). No PYTHONPATH:
      // `-I` ignores it; the launcher finds bundled/libs by itself.
      command: launch.command,
      args: launch.args,
      options: { cwd: launch.cwd },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: options,
      stdioOptions: {
        stdout: () => undefined, // stdout is the JSON-RPC wire
        stderr: (input, channel) => {
          pipeStderr(input, channel, (line) => {
            if (line.trim().length > 0) {
              this.lastStderr = line.trim();
            }
          });
        },
      },
      initializationFailedHandler: (error) => {
        this.log.error(`The Pi Memory server failed to initialize: ${String(error)}`);
        return false;
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => this.onClosed(),
      },
    };
    const client = new PimemLanguageClient('pimem', 'Pi Memory', serverOptions, clientOptions);
    client.registerFeature(new QuietWorkDoneProgress(client));
    client.onNotification(IndexChangedNotification, (p) => this.indexChangedEmitter.fire(p));
    client.onNotification(SyncStatusNotification, (p) => this.syncStatusEmitter.fire(p));
    // Replaces vscode-languageclient's handler, which shows the server's text as it is.
    client.onNotification(ShowMessageNotification.type, (p) => this.showServerMessage(p.type, p.message));
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running && this.state.kind !== 'running') {
        this.restarting = false;
        this.setState({ kind: 'running', python: interpreter.command, version: check.version });
      } else if (e.newState === State.StartFailed && this.restarting) {
        this.restarting = false;
        this.onRestartFailed();
      } else if (e.newState === State.Stopped && this.state.kind === 'running') {
        this.setState({ kind: 'failed', message: 'the server stopped (see the Pi Memory log)' });
      }
    });
    this.client = client;
    this.lastStderr = '';
    this.log.info(
      `Starting the Pi Memory server: ${launch.command} ${launch.args.join(' ')} ` +
        `(Python ${check.version}, from ${interpreter.origin}; working directory ${launch.cwd})`,
    );
    this.log.info(`initializationOptions: ${JSON.stringify(options)}`);
    try {
      await client.start();
      this.setState({ kind: 'running', python: interpreter.command, version: check.version });
    } catch (error) {
      const message = this.lastStderr.length > 0 ? this.lastStderr : error instanceof Error ? error.message : String(error);
      this.log.error(`The Pi Memory server did not start: ${message}`);
      this.client = undefined;
      this.setState({ kind: 'failed', message: 'the server did not start (see the Pi Memory log)' });
      void client.dispose().catch(() => undefined);
      void vscode.window
        .showErrorMessage(`The Pi Memory server did not start: ${plainText(message)}`, 'Show Log')
        .then((choice) => choice === 'Show Log' && this.showLog());
    }
  }

  /** `window/showMessage` from the server: logged, and shown as plain text (no links, no icons). */
  private showServerMessage(type: MessageType, message: string): void {
    const text = plainText(message);
    if (type === MessageType.Error) {
      this.log.error(message);
      void vscode.window.showErrorMessage(text);
    } else if (type === MessageType.Warning) {
      this.log.warn(message);
      void vscode.window.showWarningMessage(text);
    } else {
      this.log.info(message);
      void vscode.window.showInformationMessage(text);
    }
  }

  /**
   * The server's connection closed without a stop from this side (it crashed, was killed, or exited on input
   * it could not read). It is restarted; the user hears of it once per burst of exits, in fixed words.
   */
  private onClosed(): { action: CloseAction; handled: boolean } {
    if (this.state.kind !== 'running') {
      // Exited while starting: doStart() (or onRestartFailed) reports the failure once.
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    const decision = this.exits.onExit(Date.now());
    if (decision.restart) {
      this.log.warn('The Pi Memory server exited unexpectedly; restarting it.');
      this.restarting = true;
      this.setState({ kind: 'starting' });
      if (decision.tellUser) {
        void vscode.window
          .showWarningMessage('The Pi Memory server stopped unexpectedly and was restarted.', 'Show Log')
          .then((choice) => choice === 'Show Log' && this.showLog());
      }
      return { action: CloseAction.Restart, handled: true };
    }
    const minutes = Math.round(this.exits.windowMs / 60_000);
    this.log.error(`The Pi Memory server exited ${decision.exits} times in ${minutes} minutes; not restarting it.`);
    this.setState({ kind: 'failed', message: 'the server keeps exiting (see the Pi Memory log)' });
    this.offerRestart('The Pi Memory server keeps exiting and was not restarted.');
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /** The automatic restart after an unexpected exit did not come up. */
  private onRestartFailed(): void {
    const detail = this.lastStderr.length > 0 ? `: ${this.lastStderr}` : '';
    this.log.error(`The Pi Memory server could not be restarted${detail}`);
    this.setState({ kind: 'failed', message: 'the server could not be restarted (see the Pi Memory log)' });
    this.offerRestart('The Pi Memory server stopped and could not be restarted (see the Pi Memory log).');
  }

  private offerRestart(message: string): void {
    void vscode.window.showErrorMessage(message, 'Show Log', 'Restart').then((choice) => {
      if (choice === 'Show Log') {
        this.showLog();
      } else if (choice === 'Restart') {
        void this.restart();
      }
    });
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.dispose(5000);
      } catch (error) {
        this.log.warn(`Stopping the Pi Memory server: ${String(error)}`);
      }
    }
    this.setState({ kind: 'stopped' });
  }
}

/** A one-line, user-facing description of a failed request, as plain text (server messages can quote paths). */
export function describeError(error: unknown): string {
  const message = error instanceof ResponseError || error instanceof Error ? error.message : String(error);
  return plainText(message);
}
