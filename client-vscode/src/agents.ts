// Pi Memory for the editor's agents (Copilot's agent mode and any other user of vscode.lm): the language-model
// tool `pimem_recall`, answered by the language server's `pimem/agentRecall` (the agents' recall_memory, secrets
// masked), and, where the editor can take one, `pimem mcp` as an MCP server when an installed pimem has the MCP
// SDK. Both APIs are feature-probed: some editors built from VS Code lack them.
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { agentRecallParams, invocationMessage, RECALL_TOOL, toolFailureMessage, type ToolFailure } from './agentTool';
import { initializationOptions, readSettings, workspaceContext } from './config';
import { checkLaunch } from './launch';
import { findPimem, MCP_PROBE, MCP_PROVIDER_ID, mcpServerLaunch } from './mcpLaunch';
import { AgentRecallRequest, ErrorCodes } from './protocol';
import type { PimemServer } from './server';

/** Settings that change what the MCP server definition is. */
export const MCP_SETTINGS = ['pimem.agents.mcpServer', 'pimem.agents.redactSecrets', 'pimem.dbPath'];

/** Registers what the editor offers; logs what it could not. */
export function registerAgentTools(server: PimemServer, extensionPath: string, log: vscode.LogOutputChannel): vscode.Disposable[] {
  const disposables: vscode.Disposable[] = [];
  const lm = (vscode as { lm?: Partial<typeof vscode.lm> }).lm;
  if (typeof lm?.registerTool === 'function') {
    disposables.push(lm.registerTool(RECALL_TOOL, new RecallTool(server)));
  } else {
    log.info(`This editor has no language-model tool API (vscode.lm.registerTool): #pimemRecall is not offered.`);
  }
  const mcp = mcpApi();
  if (mcp !== undefined) {
    const provider = new PimemMcpProvider(mcp.definition, extensionPath, log);
    disposables.push(provider, mcp.register(MCP_PROVIDER_ID, provider));
  } else {
    log.info('This editor cannot take MCP servers from extensions (vscode.lm.registerMcpServerDefinitionProvider).');
  }
  return disposables;
}

/** `pimem_recall`: recall_memory over the language server. Works inside a chat and outside one. */
class RecallTool implements vscode.LanguageModelTool<unknown> {
  constructor(private readonly server: PimemServer) {}

  prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<unknown>): vscode.PreparedToolInvocation {
    return { invocationMessage: invocationMessage(options.input) };
  }

  async invoke(
    options: vscode.LanguageModelToolInvocationOptions<unknown>,
    token: vscode.CancellationToken,
  ): Promise<vscode.LanguageModelToolResult> {
    const params = agentRecallParams(options.input, readSettings().redactSecrets);
    let markdown: string;
    try {
      markdown = (await this.server.request(AgentRecallRequest, params, token)).markdown;
    } catch (error) {
      if (token.isCancellationRequested || (error as { code?: unknown }).code === ErrorCodes.RequestCancelled) {
        throw new vscode.CancellationError();
      }
      throw new Error(toolFailureMessage(classify(error, this.server)), { cause: error });
    }
    return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(markdown)]);
  }
}

function classify(error: unknown, server: PimemServer): ToolFailure {
  const message = error instanceof Error ? error.message : String(error);
  if ((error as { code?: unknown }).code === ErrorCodes.InvalidParams) {
    return { kind: 'input', message };
  }
  return server.current.kind === 'running' ? { kind: 'failed', message } : { kind: 'notRunning', message };
}

// ---- the MCP server ---------------------------------------------------------------------------------------
// VS Code 1.101 API, declared here because engines.vscode (^1.95) predates it; used only when present.

interface McpStdioDefinition {
  cwd?: vscode.Uri;
}
type McpStdioDefinitionClass = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => McpStdioDefinition;
interface McpProvider {
  readonly onDidChangeMcpServerDefinitions: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): Promise<McpStdioDefinition[]>;
}
interface McpApi {
  definition: McpStdioDefinitionClass;
  register(id: string, provider: McpProvider): vscode.Disposable;
}

function mcpApi(): McpApi | undefined {
  const lm = (vscode as { lm?: { registerMcpServerDefinitionProvider?: unknown } }).lm;
  const register = lm?.registerMcpServerDefinitionProvider;
  const definition = (vscode as { McpStdioServerDefinition?: unknown }).McpStdioServerDefinition;
  if (typeof register !== 'function' || typeof definition !== 'function') {
    return undefined;
  }
  return {
    definition: definition as McpStdioDefinitionClass,
    register: (id, provider) => (register as (id: string, p: McpProvider) => vscode.Disposable).call(lm, id, provider),
  };
}

/**
 * Offers `<python> -I -u -m pimem mcp` for the first `pimem` on PATH whose interpreter has the MCP SDK (checked
 * once per set of settings, isolated, from the extension folder); nothing otherwise. The store and redaction
 * follow the extension's settings, so agents see what the editor sees.
 */
class PimemMcpProvider implements McpProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly subscriptions: vscode.Disposable[];
  private definitions: Promise<McpStdioDefinition[]> | undefined;
  readonly onDidChangeMcpServerDefinitions = this.changed.event;

  constructor(
    private readonly definitionClass: McpStdioDefinitionClass,
    private readonly extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions = [
      this.changed,
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (MCP_SETTINGS.some((key) => e.affectsConfiguration(key))) {
          this.refresh();
        }
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.refresh()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.refresh()),
    ];
  }

  provideMcpServerDefinitions(): Promise<McpStdioDefinition[]> {
    this.definitions ??= this.discover();
    return this.definitions;
  }

  dispose(): void {
    for (const d of this.subscriptions) {
      d.dispose();
    }
  }

  private refresh(): void {
    this.definitions = undefined;
    this.changed.fire();
  }

  private async discover(): Promise<McpStdioDefinition[]> {
    const settings = readSettings();
    if (!settings.offerMcpServer) {
      this.log.info('pimem mcp is not offered to the editor\'s agents ("pimem.agents.mcpServer" is off).');
      return [];
    }
    const workspace = workspaceContext();
    const found = findPimem(process.env.PATH ?? '', workspace.folders);
    for (const skipped of found.skipped) {
      this.log.warn(`Not using ${skipped} for the MCP server.`);
    }
    if (!found.ok) {
      this.log.info(`pimem mcp is not offered to the editor's agents: ${found.reason}.`);
      return [];
    }
    const version = await probeMcp(found.python, this.extensionPath);
    if (!version.ok) {
      this.log.info(
        `pimem mcp is not offered to the editor's agents: ${found.executable} (${found.python}) ${version.problem} ` +
          "(install pimem with pip to get it; the extension's own server does not include the MCP SDK).",
      );
      return [];
    }
    const { options } = initializationOptions(settings, workspace);
    const launch = mcpServerLaunch(this.extensionPath, found.python, { dbPath: options.dbPath, redact: settings.redactSecrets });
    const definition = new this.definitionClass('Pi Memory', launch.command, launch.args, {}, version.version);
    definition.cwd = vscode.Uri.file(launch.cwd);
    this.log.info(
      `Offering pimem ${version.version}'s MCP server to the editor's agents: ${launch.command} ${launch.args.join(' ')} ` +
        `(from ${found.executable}; working directory ${launch.cwd})`,
    );
    return [definition];
  }
}

function probeMcp(python: string, extensionPath: string): Promise<{ ok: true; version: string } | { ok: false; problem: string }> {
  const launch = checkLaunch(extensionPath, python, MCP_PROBE);
  return new Promise((resolve) => {
    execFile(launch.command, launch.args, { cwd: launch.cwd, timeout: 20_000, windowsHide: true }, (error, stdout) => {
      const version = stdout.trim();
      if (error === null && /^[\w.+-]{1,40}$/.test(version)) {
        resolve({ ok: true, version });
      } else if ((error as { code?: unknown } | null)?.code === 3) {
        resolve({ ok: false, problem: 'has no MCP SDK' });
      } else {
        resolve({ ok: false, problem: 'could not be checked' });
      }
    });
  });
}
