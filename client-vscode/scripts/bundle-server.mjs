// Fills bundled/libs with the pimem server (../server/pimem) and its pure-Python dependencies, the way
// Microsoft's python-tools extension template does: `pip install --target`. Uses the machine's python3
// (override with PIMEM_BUNDLE_PYTHON). The extension runs launcher/launch.py, which puts bundled/libs on sys.path.
// pip runs isolated (-I: not the current directory or PYTHON* variables on sys.path) from this folder, and only
// installs wheels (--only-binary: no package's setup.py is run).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const client = join(here, '..');
const repo = join(client, '..');
const libs = join(client, 'bundled', 'libs');
const python = process.env.PIMEM_BUNDLE_PYTHON ?? 'python3';

const source = join(repo, 'server', 'pimem');
if (!existsSync(join(source, '__init__.py'))) {
  throw new Error(`${source} is not a Python package`);
}
// Every runtime dependency of the server (pyproject.toml [project].dependencies) must be pinned here,
// or listed as deliberately not bundled (`# not-bundled: <name>` lines: the MCP SDK, which only
// `pimem mcp` uses).
const normalize = (name) => name.toLowerCase().replace(/[-_.]+/g, '-');
const pyproject = readFileSync(join(repo, 'pyproject.toml'), 'utf8');
const deps = /^dependencies\s*=\s*\[([^\]]*)\]/m.exec(pyproject)?.[1] ?? '';
const wanted = [...deps.replace(/#.*$/gm, '').matchAll(/"([A-Za-z0-9_.-]+)/g)].map((m) => normalize(m[1]));
const requirementLines = readFileSync(join(client, 'requirements.txt'), 'utf8').split('\n');
const pinned = requirementLines
  .filter((l) => /^[a-z]/i.test(l))
  .map((l) => normalize(l.split('==')[0].trim()));
const notBundled = requirementLines
  .map((l) => /^#\s*not-bundled:\s*([A-Za-z0-9_.-]+)/.exec(l)?.[1])
  .filter((name) => name !== undefined)
  .map(normalize);
const missing = wanted.filter((d) => !pinned.includes(d) && !notBundled.includes(d));
if (missing.length > 0) {
  throw new Error(`requirements.txt lacks server dependencies from pyproject.toml: ${missing.join(', ')}`);
}
const stale = notBundled.filter((d) => !wanted.includes(d) || pinned.includes(d));
if (stale.length > 0) {
  throw new Error(`requirements.txt: "not-bundled" names that are no dependency of pyproject.toml, or also pinned: ${stale.join(', ')}`);
}
rmSync(join(client, 'bundled'), { recursive: true, force: true });
mkdirSync(libs, { recursive: true });
const requirements = join(client, 'requirements.txt');
console.log(`pip install --target ${libs} -r ${requirements} (with ${python})`);
execFileSync(
  python,
  ['-I', '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--root-user-action=ignore', '--no-compile', '--only-binary=:all:',
    '--no-deps', '--target', libs, '-r', requirements],
  { stdio: 'inherit', cwd: client },
);
rmSync(join(libs, 'bin'), { recursive: true, force: true }); // console scripts with this machine's shebang
cpSync(source, join(libs, 'pimem'), {
  recursive: true,
  filter: (path) => !/(__pycache__|\.pyc$)/.test(path),
});
const listed = readFileSync(requirements, 'utf8').split('\n').filter((l) => /^[a-z]/i.test(l)).length;
console.log(`bundled pimem and ${listed} libraries into ${libs}`);
