// Fills bundled/ with the pimem server (../server/pimem) and its dependencies for one target platform of
// the extension (a `vsce package --target` name), the way Microsoft's python-tools extension template does:
// `pip install --target`.
//   bundled/libs/                    pimem and the pure-Python dependencies (requirements.txt): any platform
//   bundled/platform/<target>/cp3XY/ the platform wheels (requirements-platform.txt) for that CPython version
// The extension runs launcher/launch.py, which puts bundled/libs and the running interpreter's
// bundled/platform/<target>/cp3XY on sys.path (and nothing else from a bundle of another platform).
// Uses the machine's python3 (override with PIMEM_BUNDLE_PYTHON) only to run pip: pip runs isolated (-I: not the
// current directory or PYTHON* variables on sys.path) from this folder, and only installs wheels
// (--only-binary: no package's setup.py is run), chosen by --platform/--python-version, never by this machine.
//
//   node scripts/bundle-server.mjs [--target linux-x64]     (default: this machine's target)
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const client = join(here, '..');
const repo = join(client, '..');
const python = process.env.PIMEM_BUNDLE_PYTHON ?? 'python3';

/** The packages built: vsce target → pip platform tags (pip also accepts older manylinux/macOS tags below
 *  these). macOS 11 is the oldest that VS Code still runs on; manylinux2014 is glibc 2.17. */
export const TARGETS = {
  'linux-x64': ['manylinux2014_x86_64'],
  'linux-arm64': ['manylinux2014_aarch64'],
  'darwin-x64': ['macosx_11_0_x86_64'],
  'darwin-arm64': ['macosx_11_0_arm64'],
  'win32-x64': ['win_amd64'],
};
/** The CPython versions the platform wheels are bundled for (pimem needs 3.11 or newer). Another version
 *  runs the server without them: no orjson/zstandard, and no watchdog where its wheel is compiled (macOS). */
export const PYTHON_VERSIONS = ['3.11', '3.12', '3.13', '3.14'];

/** This machine's target, as `vsce package --target` and the launcher name it. */
export function hostTarget() {
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
  const target = `${process.platform}-${arch}`;
  if (!(target in TARGETS)) {
    throw new Error(`no package is built for this machine (${process.platform} ${process.arch}); targets: ${Object.keys(TARGETS).join(', ')}`);
  }
  return target;
}

const normalize = (name) => name.toLowerCase().replace(/[-_.]+/g, '-');
const requirementNames = (lines) => lines.filter((l) => /^[a-z]/i.test(l)).map((l) => normalize(l.split('==')[0].trim()));

function readRequirements() {
  // Every runtime dependency of the server (pyproject.toml [project].dependencies) must be pinned in one of the
  // two files, or listed as deliberately not bundled (`# not-bundled: <name>` lines: the MCP SDK, which only
  // `pimem mcp` uses). The platform file may also pin optional ones (the `fast` extra).
  const pyproject = readFileSync(join(repo, 'pyproject.toml'), 'utf8');
  const listOf = (pattern) => [...((pattern.exec(pyproject)?.[1] ?? '').replace(/#.*$/gm, '').matchAll(/"([A-Za-z0-9_.-]+)/g))].map((m) => normalize(m[1]));
  const required = listOf(/^dependencies\s*=\s*\[([^\]]*)\]/m);
  const optional = listOf(/^fast\s*=\s*\[([^\]]*)\]/m);
  const pureLines = readFileSync(join(client, 'requirements.txt'), 'utf8').split('\n');
  const platformLines = readFileSync(join(client, 'requirements-platform.txt'), 'utf8').split('\n');
  const pure = requirementNames(pureLines);
  const platform = requirementNames(platformLines);
  const notBundled = pureLines
    .map((l) => /^#\s*not-bundled:\s*([A-Za-z0-9_.-]+)/.exec(l)?.[1])
    .filter((name) => name !== undefined)
    .map(normalize);
  const missing = required.filter((d) => !pure.includes(d) && !platform.includes(d) && !notBundled.includes(d));
  if (missing.length > 0) {
    throw new Error(`requirements.txt / requirements-platform.txt lack server dependencies from pyproject.toml: ${missing.join(', ')}`);
  }
  const stale = notBundled.filter((d) => !required.includes(d) || pure.includes(d) || platform.includes(d));
  if (stale.length > 0) {
    throw new Error(`requirements.txt: "not-bundled" names that are no dependency of pyproject.toml, or also pinned: ${stale.join(', ')}`);
  }
  const unknown = platform.filter((d) => !required.includes(d) && !optional.includes(d));
  if (unknown.length > 0) {
    throw new Error(`requirements-platform.txt pins what pyproject.toml neither requires nor offers (fast extra): ${unknown.join(', ')}`);
  }
  const pins = platformLines.filter((l) => /^[a-z]/i.test(l)).map((l) => l.trim());
  return { pureCount: pure.length, platformPins: pins, isRequired: (pin) => required.includes(normalize(pin.split('==')[0])) };
}

function pip(args) {
  execFileSync(
    python,
    ['-I', '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--root-user-action=ignore', '--no-compile',
      '--only-binary=:all:', '--no-deps', ...args],
    { stdio: ['ignore', 'inherit', 'pipe'], cwd: client },
  );
}

/** Installs the platform wheels of `target` for one CPython version into `into`; returns the pins it skipped
 *  (optional ones without a wheel there). A required one without a wheel is an error. */
function installPlatformWheels(target, version, into, pins, isRequired) {
  const tags = ['--target', into, '--implementation', 'cp', '--python-version', version, ...TARGETS[target].flatMap((p) => ['--platform', p])];
  try {
    pip([...tags, ...pins]);
    return [];
  } catch {
    // one optional package without a wheel for this platform/version fails the whole install: one at a time
  }
  rmSync(into, { recursive: true, force: true });
  const skipped = [];
  for (const pin of pins) {
    try {
      pip([...tags, pin]);
    } catch (error) {
      if (isRequired(pin)) {
        throw new Error(`no wheel of ${pin} for ${target} CPython ${version}: ${String(error.stderr ?? error).trim()}`, { cause: error });
      }
      skipped.push(pin);
    }
  }
  return skipped;
}

/** Removes what the server never loads and what names this machine: console scripts (their shebang),
 *  bytecode, and python-zstandard's cffi backend (CPython loads backend_c; cffi is not bundled). */
function prune(dir) {
  rmSync(join(dir, 'bin'), { recursive: true, force: true });
  const zstd = join(dir, 'zstandard');
  if (existsSync(zstd)) {
    for (const name of readdirSync(zstd)) {
      if (name.startsWith('_cffi.')) {
        rmSync(join(zstd, name));
      }
    }
  }
}

/** Fills bundled/ for `target`; returns { target, skipped: { 'cp311': [...pins] } }. */
export function bundle(target) {
  if (!(target in TARGETS)) {
    throw new Error(`unknown target ${target}; targets: ${Object.keys(TARGETS).join(', ')}`);
  }
  const source = join(repo, 'server', 'pimem');
  if (!existsSync(join(source, '__init__.py'))) {
    throw new Error(`${source} is not a Python package`);
  }
  const { pureCount, platformPins, isRequired } = readRequirements();
  const bundled = join(client, 'bundled');
  const libs = join(bundled, 'libs');
  rmSync(bundled, { recursive: true, force: true });
  mkdirSync(libs, { recursive: true });
  console.log(`${target}: pip install --target ${libs} -r requirements.txt (with ${python})`);
  pip(['--target', libs, '-r', join(client, 'requirements.txt')]);
  prune(libs);
  cpSync(source, join(libs, 'pimem'), { recursive: true, filter: (path) => !/(__pycache__|\.pyc$)/.test(path) });
  const skipped = {};
  for (const version of PYTHON_VERSIONS) {
    const tag = `cp${version.replace('.', '')}`;
    const into = join(bundled, 'platform', target, tag);
    mkdirSync(into, { recursive: true });
    const missed = installPlatformWheels(target, version, into, platformPins, isRequired);
    prune(into);
    if (missed.length > 0) {
      skipped[tag] = missed;
      console.warn(`${target} ${tag}: no wheel of ${missed.join(', ')} (optional: the server runs without it)`);
    }
  }
  console.log(`${target}: bundled pimem, ${pureCount} pure-Python libraries, and ${platformPins.join(', ')} for CPython ${PYTHON_VERSIONS.join(', ')}`);
  return { target, skipped };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--target');
  bundle(at >= 0 ? process.argv[at + 1] : hostTarget());
}
