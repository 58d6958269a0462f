// Settings of the extension (contributes.configuration in package.json) and what the server gets from them.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { configuredDbPath, type WorkspaceContext } from './launch';
import { SOURCE_NAME, type PimemInitializationOptions } from './protocol';

export const SECTION = 'pimem';

export interface PimemSettings {
  python: string;
  dbPath: string;
  autoSync: boolean;
  hoverEnabled: boolean;
  recallLimit: number;
  /** pimem.sources.<name>: false turns a source off (every source the server knows is on by default). */
  sources: Record<string, boolean>;
  /** Mask secrets in what the editor's agents get (the pimem_recall tool, the MCP server). */
  redactSecrets: boolean;
  /** Offer `pimem mcp` to the editor's agents when an installed pimem has the MCP SDK. */
  offerMcpServer: boolean;
}

/** Settings whose change needs a new server process (they are sent as initializationOptions or argv). */
export const RESTART_SETTINGS = ['pimem.python', 'pimem.dbPath', 'pimem.autoSync', 'pimem.sources'];

export function readSettings(): PimemSettings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const limit = c.get<number>('recall.limit', 20);
  return {
    python: restricted(c, 'python').trim(),
    dbPath: restricted(c, 'dbPath').trim(),
    autoSync: c.get<boolean>('autoSync', true),
    hoverEnabled: c.get<boolean>('hover.enabled', true),
    recallLimit: Number.isInteger(limit) ? Math.min(50, Math.max(1, limit)) : 20,
    sources: sourceSwitches(c.get<unknown>('sources')),
    // user settings only: a workspace must not be able to send its reader's secrets to a model
    redactSecrets: c.inspect<unknown>('agents.redactSecrets')?.globalValue !== false,
    offerMcpServer: c.get<boolean>('agents.mcpServer', true),
  };
}

/** The booleans of `pimem.sources` (one per source name; anything else is left out). */
export function sourceSwitches(value: unknown): Record<string, boolean> {
  const switches: Record<string, boolean> = {};
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [name, enabled] of Object.entries(value as Record<string, unknown>)) {
      if (SOURCE_NAME.test(name) && typeof enabled === 'boolean') {
        switches[name] = enabled;
      }
    }
  }
  return switches;
}

/**
 * A setting listed in package.json's `restrictedConfigurations`. VS Code already ignores workspace values of
 * those in an untrusted workspace; reading only the user value there does not depend on that.
 */
function restricted(c: vscode.WorkspaceConfiguration, key: string): string {
  const value = vscode.workspace.isTrusted ? c.get<unknown>(key) : c.inspect<unknown>(key)?.globalValue;
  return typeof value === 'string' ? value : '';
}

/** Trust and folders of the open workspace, for src/launch.ts. */
export function workspaceContext(): WorkspaceContext {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  return { trusted: vscode.workspace.isTrusted, folders };
}

/** "~/x" → "<home>/x"; other values unchanged. */
export function expandHome(p: string): string {
  if (p === '~') {
    return os.homedir();
  }
  if (p.startsWith('~/') || p.startsWith('~\\')) {
    return path.join(os.homedir(), p.slice(2));
  }
  return p;
}

/** The options sent to the server, and what was wrong with the settings (the default is used instead). */
export function initializationOptions(
  settings: PimemSettings,
  workspace: WorkspaceContext,
): { options: PimemInitializationOptions; problems: string[] } {
  const options: PimemInitializationOptions = {
    autoSync: settings.autoSync,
    sources: { ...settings.sources },
    hover: 'off', // the client shows hovers on selections itself (src/hover.ts)
  };
  const problems: string[] = [];
  if (settings.dbPath.length > 0) {
    const choice = configuredDbPath(expandHome(settings.dbPath), workspace);
    if (choice.ok) {
      options.dbPath = choice.path;
    } else {
      problems.push(`"pimem.dbPath" ${choice.problem}; using the default store`);
    }
  }
  return { options, problems };
}

export function openSetting(id: string): Thenable<unknown> {
  return vscode.commands.executeCommand('workbench.action.openSettings', id);
}
