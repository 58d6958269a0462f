// "Resume in terminal": the agent's own program and arguments for a session, built from the row's validated
// fields, never from a string a shell would parse. Pure (no `vscode` import), unit-tested under Node.
//
// Why not the server's `resumeCommand` typed into a shell (Terminal.sendText): that string is POSIX shell
// syntax (`cd -- '<cwd>' && claude --resume <uuid>`), which the user's shell (fish, PowerShell, cmd, …) may
// read otherwise, and typing it runs whatever the shell makes of it. Here the terminal's process IS the agent
// (createTerminal {shellPath, shellArgs, cwd}): the arguments reach it as they are, and the folder is a
// path, not text to quote. The same rules as the server's (docs/lsp-extensions.md, resumeCommand) decide
// what may be resumed: UUIDs for Claude Code and Codex, an absolute path free of control characters for Pi.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isInsideAny } from './launch';
import type { Source } from './protocol';
import { folderName, plainText } from './render';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// OpenCode's session ids: "ses_", 12 hex digits of time, 14 base-62 characters (the server's rule too).
const OPENCODE_SESSION_ID = /^ses_[0-9A-Za-z]{12,40}$/;
const MAX_PATH = 4096;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export interface ResumeTarget {
  source: Source;
  sessionId: string; // "<source>:<native id>"
  cwd: string;
  jsonlPath: string;
}

export interface ResumeCommand {
  /** The agent's executable name, looked up on PATH (findExecutable). */
  program: 'claude' | 'codex' | 'pi' | 'gemini' | 'opencode' | 'copilot';
  args: string[];
  /** The session's folder, when it is a usable absolute path. */
  cwd: string | undefined;
}

function usablePath(p: string): boolean {
  return p.length > 0 && p.length <= MAX_PATH && path.isAbsolute(p) && !CONTROL.test(p);
}

/** The program and arguments that resume `target`, or undefined when its ids are not of the agent's shape. */
export function resumeCommand(target: ResumeTarget): ResumeCommand | undefined {
  const prefix = `${target.source}:`;
  if (!target.sessionId.startsWith(prefix)) {
    return undefined;
  }
  const id = target.sessionId.slice(prefix.length);
  const cwd = usablePath(target.cwd) ? target.cwd : undefined;
  switch (target.source) {
    case 'claude':
      // Claude Code finds a session by the folder it ran in: without it there is nothing to resume
      return UUID.test(id) && cwd !== undefined ? { program: 'claude', args: ['--resume', id], cwd } : undefined;
    case 'codex':
      return UUID.test(id) ? { program: 'codex', args: ['resume', id], cwd } : undefined;
    case 'pi':
      return usablePath(target.jsonlPath) ? { program: 'pi', args: ['--session', target.jsonlPath], cwd } : undefined;
    case 'gemini':
      // Gemini CLI finds a session only among its project folder's (SessionSelector.findSession)
      return UUID.test(id) && cwd !== undefined ? { program: 'gemini', args: ['--resume', id], cwd } : undefined;
    case 'opencode':
      return OPENCODE_SESSION_ID.test(id) ? { program: 'opencode', args: ['--session', id], cwd } : undefined;
    case 'copilot-cli':
      // --resume takes an optional value: one argument, as the CLI itself prints it
      return UUID.test(id) ? { program: 'copilot', args: [`--resume=${id}`], cwd } : undefined;
    default:
      return undefined;
  }
}

/** Where VS Code keeps this window's chat sessions: the parents of the extension's own storage folders. */
export interface ChatStorage {
  /** `<User>/workspaceStorage/<this workspace>` (dirname of ExtensionContext.storageUri); none in an empty window. */
  workspace: string | undefined;
  /** `<User>/globalStorage` (dirname of ExtensionContext.globalStorageUri): an empty window's sessions are below. */
  global: string | undefined;
}

/** What "Resume" does for a session: its agent in a terminal, VS Code's own chat, or pimem's conversation view. */
export type ResumeAction =
  | { kind: 'terminal'; command: ResumeCommand }
  | { kind: 'chat'; sessionId: string; uriPath: string }
  | { kind: 'conversation' };

/**
 * How `target` can be continued. A Copilot Chat session is opened in VS Code's chat when this window's chat
 * service can restore it: VS Code reads a local session only from the window's own store (ChatService
 * acquireOrRestoreLocalSession: `chatSessions/<id>.jsonl` of this workspace, or `emptyWindowChatSessions/` in an
 * empty window), by the session URI `vscode-chat-session://local/<base64url(id)>` (LocalChatSessionUri). Any
 * other Copilot Chat session (another workspace's, or known from a transcript only) and every Cursor
 * conversation (no command opens one by id) is shown in pimem's conversation view. Undefined: nothing to offer.
 */
export function resumeAction(target: ResumeTarget & { resumeCommand: string | null }, storage: ChatStorage, separator = path.sep): ResumeAction | undefined {
  if (target.source === 'copilot-chat' || target.source === 'cursor') {
    if (target.source === 'copilot-chat') {
      const id = target.sessionId.startsWith('copilot-chat:') ? target.sessionId.slice('copilot-chat:'.length) : '';
      if (UUID.test(id) && isOwnChatLog(target.jsonlPath, id, storage, separator)) {
        return { kind: 'chat', sessionId: id, uriPath: `/${Buffer.from(id, 'utf8').toString('base64url')}` };
      }
    }
    return { kind: 'conversation' };
  }
  const command = target.resumeCommand === null ? undefined : resumeCommand(target);
  return command === undefined ? undefined : { kind: 'terminal', command };
}

function isOwnChatLog(jsonlPath: string, id: string, storage: ChatStorage, separator: string): boolean {
  const candidates = [
    ...(storage.workspace === undefined ? [] : [[storage.workspace, 'chatSessions']]),
    // an empty window (no workspace storage) keeps its sessions in the global storage
    ...(storage.workspace !== undefined || storage.global === undefined ? [] : [[storage.global, 'emptyWindowChatSessions']]),
  ];
  return candidates.some((parts) => [`${id}.jsonl`, `${id}.json`].some((name) => jsonlPath === [...parts, name].join(separator)));
}

/** The label of a row's resume button for `action`. */
export function resumeLabel(action: ResumeAction | undefined): string {
  return action?.kind === 'chat' ? 'Open in Copilot Chat' : 'Resume in terminal';
}

/**
 * `pi --session <file>` for the Pi session file "Continue in Pi" wrote (or found written before), in the Codex
 * session's folder when that is a usable path; undefined for a file path no resume command may name.
 */
export function piResume(piPath: string, folder: string): ResumeCommand | undefined {
  return usablePath(piPath) ? { program: 'pi', args: ['--session', piPath], cwd: usablePath(folder) ? folder : undefined } : undefined;
}

/** What `vscode.window.createTerminal` gets: the terminal's own process is the agent, its arguments as they are. */
export interface ResumeTerminalOptions {
  name: string;
  shellPath: string;
  shellArgs: string[];
  cwd?: string;
}

/** How a resume goes: a terminal running the agent, or why not (then the user can copy the command). */
export type ResumePlan =
  | { kind: 'terminal'; options: ResumeTerminalOptions }
  | { kind: 'notOnPath' }
  | { kind: 'batchFile' }
  | { kind: 'folderGone' };

/**
 * The terminal that resumes `command` with `executable` (findExecutable's answer). No shell reads anything: the
 * stored ids, paths and folder are arguments and the working directory, never text typed into a shell.
 */
export function planResume(command: ResumeCommand, executable: string | undefined, isDirectory: (p: string) => boolean): ResumePlan {
  if (executable === undefined) {
    return { kind: 'notOnPath' };
  }
  if (!argumentsPassIntact(executable, command.args)) {
    return { kind: 'batchFile' };
  }
  let cwd = command.cwd;
  if (cwd !== undefined && !isDirectory(cwd)) {
    if (command.program === 'claude' || command.program === 'gemini') {
      return { kind: 'folderGone' }; // Claude Code and Gemini CLI resume a session only in its folder
    }
    cwd = undefined; // else the terminal would not start
  }
  return {
    kind: 'terminal',
    options: {
      // a terminal's name may render $(icon) syntax: plainText breaks it
      name: plainText(`${programLabel(command.program)}: ${cwd === undefined ? 'resume' : folderName(cwd)}`, 60),
      shellPath: executable,
      shellArgs: [...command.args],
      ...(cwd === undefined ? {} : { cwd }),
    },
  };
}

export interface ExecutableProbe {
  isExecutableFile(file: string): boolean;
  realpath(file: string): string;
}

const nodeProbe: ExecutableProbe = {
  isExecutableFile(file) {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  },
  realpath: (file) => fs.realpathSync.native(file),
};

/**
 * The first `name` on `pathEnv` that is an executable file, skipping relative entries and anything inside a
 * workspace folder (a repository must not be able to plant the `claude` that gets run). On Windows each
 * PATHEXT extension is tried.
 */
export function findExecutable(
  name: string,
  pathEnv: string,
  folders: readonly string[],
  probe: ExecutableProbe = nodeProbe,
  platform: string = process.platform,
  pathExt: string = process.env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD',
): string | undefined {
  const delimiter = platform === 'win32' ? ';' : ':';
  const names = platform === 'win32' ? pathExt.split(';').filter((e) => e.length > 0).map((e) => name + e.toLowerCase()) : [name];
  for (const dir of pathEnv.split(delimiter)) {
    if (dir.length === 0 || !path.isAbsolute(dir)) {
      continue;
    }
    for (const candidate of names.map((n) => path.join(dir, n))) {
      if (probe.isExecutableFile(candidate) && !isInsideAny(candidate, folders, (p) => probe.realpath(p))) {
        return candidate;
      }
    }
  }
  return undefined;
}

const PROGRAM_LABELS: Record<ResumeCommand['program'], string> = {
  claude: 'Claude Code',
  codex: 'Codex',
  pi: 'Pi',
  gemini: 'Gemini CLI',
  opencode: 'OpenCode',
  copilot: 'Copilot CLI',
};

/** "Claude Code", "Codex", "Pi", …: how the program is named in messages. */
export function programLabel(program: ResumeCommand['program']): string {
  return PROGRAM_LABELS[program];
}

/**
 * Whether `args` reach `executable` as they are. A Windows `.cmd`/`.bat` (how npm installs `claude` and `codex`
 * there) is run by cmd.exe, which reads its command line as syntax: an argument with a cmd.exe metacharacter,
 * a quote or a space (a Pi session path can hold any of them) is then refused, and the user can copy the command.
 */
export function argumentsPassIntact(executable: string, args: readonly string[]): boolean {
  return !/\.(cmd|bat)$/i.test(executable) || args.every((a) => !/[\s&|<>^%!"()]/.test(a));
}
