// How the server process is started and which paths from settings it may use. Pure (no `vscode` import), so
// that test/unit checks it. The rule: nothing a workspace contains is imported or run. The interpreter runs
// isolated (`-I`: no current directory, script directory, PYTHON* variables or user site on sys.path) from the
// extension's own folder, and launcher/launch.py puts only the extension's bundled/libs in front.
import * as path from 'node:path';
import spec from './serverLaunch.json';

/** A process to start: executable, arguments, working directory. */
export interface ProcessLaunch {
  command: string;
  args: string[];
  cwd: string;
}

/** What the extension knows about the open workspace when it starts the server. */
export interface WorkspaceContext {
  trusted: boolean;
  /** File-system paths of the workspace folders, first one first. */
  folders: readonly string[];
}

export type PathChoice = { ok: true; path: string } | { ok: false; problem: string };

/** `<python> -I -u <extension>/launcher/launch.py serve`, run from the extension folder (src/serverLaunch.json). */
export function serverLaunch(extensionPath: string, python: string): ProcessLaunch {
  return { command: python, args: [...spec.flags, path.join(extensionPath, spec.script), ...spec.args], cwd: extensionPath };
}

/** The interpreter check (`-c code`) with the same flags and working directory as the server. */
export function checkLaunch(extensionPath: string, python: string, code: string): ProcessLaunch {
  return { command: python, args: [...spec.flags, '-c', code], cwd: extensionPath };
}

/**
 * The interpreter named by `pimem.python` (after `~` expansion): a command name is looked up on PATH, an absolute
 * path is taken as it is, and a relative path is resolved against the first workspace folder in a trusted
 * workspace only (elsewhere it would depend on a working directory the user never chose).
 */
export function configuredInterpreter(value: string, workspace: WorkspaceContext): PathChoice {
  if (!/[\\/]/.test(value) || path.isAbsolute(value)) {
    return { ok: true, path: value };
  }
  return relativeToWorkspace(value, workspace, 'an interpreter');
}

/** `pimem.dbPath` (after `~` expansion): absolute, or relative to the first folder of a trusted workspace. */
export function configuredDbPath(value: string, workspace: WorkspaceContext): PathChoice {
  return path.isAbsolute(value) ? { ok: true, path: value } : relativeToWorkspace(value, workspace, 'a store');
}

function relativeToWorkspace(value: string, workspace: WorkspaceContext, what: string): PathChoice {
  const folder = workspace.folders[0];
  if (workspace.trusted && folder !== undefined) {
    return { ok: true, path: path.resolve(folder, value) };
  }
  return { ok: false, problem: `is a relative path, which names ${what} only in a trusted workspace with a folder` };
}

/**
 * Whether `file` lies inside one of `folders`, comparing the paths as given and with symlinks resolved: a
 * virtual environment's `python` is usually a symlink out of the workspace, yet running it reads the
 * workspace's pyvenv.cfg and site-packages (whose .pth files run code).
 */
export function isInsideAny(file: string, folders: readonly string[], realpath: (p: string) => string): boolean {
  const variants = (p: string): string[] => {
    const resolved = path.resolve(p);
    let real = resolved;
    try {
      real = realpath(resolved);
    } catch {
      // a path that does not exist has no other spelling
    }
    return real === resolved ? [resolved] : [resolved, real];
  };
  const roots = folders.flatMap(variants);
  return variants(file).some((candidate) => roots.some((root) => isWithin(candidate, root)));
}

function isWithin(candidate: string, root: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}
