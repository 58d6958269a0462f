"""The scripted history of a few small repositories and its ground truth per line (issue 23's benchmark).

A history is a list of steps over the files of some projects: an agent turn (one edit tool call with
exact old/new text, whole lines), a person's edit (change a line, add, delete, move a block, reindent
a block, revert a file to the last commit), a commit. ``History`` applies them to a model in which
every line carries its origin, so the final files come with the truth:

- an agent edit is applied as a line diff of its old and new text: lines its new text changes or
  adds are written by that turn; lines it repeats unchanged (context an Edit's ``old_string`` had to
  include to be unique, a ``Write`` of a whole file) keep the origin they had;
- a line a person changes is human, even where an agent wrote it before; a line moved or reindented
  by a person keeps its origin (the issue asks attribution to be tolerant of both), marked as such;
- a revert restores the lines of the last commit with the origins they had then.

``make_script`` draws a seeded history in which every case of the issue occurs: edits by Pi, Claude
Code and Codex over several turns and sessions, people editing in between, moves, reindents,
reverts, the same line written by two conversations, and files no agent ever touches.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass, field
from typing import Any

AGENTS = ("claude", "pi", "codex")


@dataclass(frozen=True)
class Origin:
    """Who wrote a line as it is: ``turn`` is the tag of an agent turn (``T0001``), or None for a person."""

    turn: str | None
    agent: str | None = None


HUMAN = Origin(None)


@dataclass
class Line:
    text: str
    origin: Origin
    moved: bool = False
    reindented: bool = False
    over_agent: bool = False  # a person rewrote a line an agent had written


@dataclass
class Turn:
    """One agent turn: its tag (first word of its prompt), agent, session key, and the edits it makes."""

    tag: str
    agent: str
    session: str
    edits: list[dict[str, Any]] = field(default_factory=list)  # {path, old (None: write), new, exists}


class History:
    """Files as lists of ``Line``; every step keeps the origins right."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = {p: [Line(t, HUMAN) for t in text.splitlines()] for p, text in files.items()}
        self.committed: dict[str, list[Line]] = self.snapshot()

    def snapshot(self) -> dict[str, list[Line]]:
        return {p: [_copy(x) for x in lines] for p, lines in self.files.items()}

    def text(self, path: str) -> str:
        return "".join(x.text + "\n" for x in self.files.get(path, []))

    def commit(self) -> None:
        self.committed = self.snapshot()

    # --- agent ------------------------------------------------------------------------------------------

    def agent_edit(self, turn: Turn, path: str, start: int, end: int, new: list[str]) -> None:
        """Replace lines [start, end) by ``new`` with the agent's edit tool; records the call's exact
        old/new text (widened by whole lines until ``old`` occurs once in the file, as Edit needs)."""
        lines = self.files.setdefault(path, [])
        exists = bool(lines) or path in self.committed
        if not lines:
            turn.edits.append({"path": path, "old": None, "new": "".join(t + "\n" for t in new), "exists": exists})
            self.files[path] = [Line(t, Origin(turn.tag, turn.agent)) for t in new]
            return
        texts = [x.text for x in lines]
        lo, hi, up = start, end, True
        whole = "".join(t + "\n" for t in texts)
        while not (_unique_at(texts, lo, hi) and any(t.strip() for t in texts[lo:hi])
                   and whole.count("".join(t + "\n" for t in texts[lo:hi])) == 1):
            if lo == 0 and hi == len(texts):
                break
            # widen by whole lines, alternately above (an insertion anchors on the line above) and below
            if (up and lo > 0) or hi == len(texts):
                lo -= 1
            else:
                hi += 1
            up = not up
        old = "".join(t + "\n" for t in texts[lo:hi])
        new_full = texts[lo:start] + new + texts[end:hi]
        # no unique span at all: the whole file is rewritten (Codex patches every line of it)
        whole_file = lo == 0 and hi == len(texts) and turn.agent != "codex"
        turn.edits.append({"path": path, "old": None if whole_file else old,
                           "new": "".join(t + "\n" for t in new_full), "exists": True})
        self.files[path] = lines[:lo] + _diff_lines(lines[lo:hi], new_full, Origin(turn.tag, turn.agent)) + lines[hi:]

    def agent_write(self, turn: Turn, path: str, new: list[str]) -> None:
        """The agent writes the whole file (Write/write/an apply_patch of every line)."""
        lines = self.files.get(path, [])
        exists = bool(lines)
        turn.edits.append({"path": path, "old": self.text(path) if exists else None,
                           "new": "".join(t + "\n" for t in new), "exists": exists})
        if turn.agent != "codex":
            turn.edits[-1]["old"] = None  # Claude Code Write / Pi write carry only the new content
        self.files[path] = _diff_lines(lines, new, Origin(turn.tag, turn.agent))

    # --- a person -------------------------------------------------------------------------------------

    def human_replace(self, path: str, start: int, end: int, new: list[str]) -> None:
        lines = self.files[path]
        self.files[path] = lines[:start] + [Line(t, HUMAN) for t in new] + lines[end:]

    def human_move(self, path: str, start: int, end: int, dest: int) -> None:
        """Cut lines [start, end) and paste them before line ``dest`` of what remains."""
        lines = self.files[path]
        block = lines[start:end]
        rest = lines[:start] + lines[end:]
        for x in block:
            x.moved = True
        self.files[path] = rest[:dest] + block + rest[dest:]

    def human_reindent(self, path: str, start: int, end: int, indent: str) -> None:
        for x in self.files[path][start:end]:
            if x.text.strip():
                x.text = indent + x.text
                x.reindented = True

    def human_revert(self, path: str) -> None:
        """``git checkout -- path``: the file as last committed, with the origins it had then."""
        self.files[path] = [_copy(x) for x in self.committed.get(path, [])]

    # --- truth ----------------------------------------------------------------------------------------

    def truth(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for path, lines in sorted(self.files.items()):
            out[path] = [{"line": i, "text": x.text, "turn": x.origin.turn, "agent": x.origin.agent,
                          "moved": x.moved, "reindented": x.reindented, "overAgent": x.over_agent}
                         for i, x in enumerate(lines)]
        return out


def _copy(x: Line) -> Line:
    return Line(x.text, x.origin, x.moved, x.reindented, x.over_agent)


def _unique_at(texts: list[str], lo: int, hi: int) -> bool:
    """The block [lo, hi) occurs at one place only, counted by whole lines (a substring count can be
    fooled by a line that ends with another)."""
    n = hi - lo
    block = texts[lo:hi]
    return sum(1 for i in range(len(texts) - n + 1) if texts[i : i + n] == block) == 1


def _diff_lines(old: list[Line], new: list[str], origin: Origin) -> list[Line]:
    """``new`` as lines: those equal to a line of ``old`` in the diff keep that line's origin."""
    out: list[Line] = []
    matcher = difflib.SequenceMatcher(a=[x.text for x in old], b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(old[i1:i2])
        else:
            out.extend(Line(t, origin) for t in new[j1:j2])
    return out


# --- a seeded script -------------------------------------------------------------------------------------

PY_TEMPLATES = (
    "{i}total_{n} = sum(item.price_{n} for item in items)",
    "{i}if not record_{n}.get('sku_{n}'):",
    "{i}    raise ValueError('missing sku {n}')",
    "{i}cache_{n}[key] = load_{n}(key, timeout={k})",
    "{i}log.info('stock %s for %s', count_{n}, name_{n})",
    "{i}return round(value_{n} * (1 - rate_{n}), 2)",
    "{i}for row_{n} in rows:",
    "{i}result_{n}.append(normalize_{n}(row_{n}))",
    "",
    "{i}return result",
)
TS_TEMPLATES = (
    "{i}const total{n} = items.reduce((s, it) => s + it.price{n}, 0);",
    "{i}if (!cart{n}.items.length) {{",
    "{i}  throw new Error('empty cart {n}');",
    "{i}}}",
    "{i}const label{n} = formatPrice{n}(total{n}, '{k}');",
    "{i}cache{n}.set(key, await fetchPrice{n}(key));",
    "{i}return {{ total: total{n}, label: label{n} }};",
    "",
    "{i}return result;",
)

PROJECTS: dict[str, dict[str, str]] = {
    "inventory": {
        "README.md": "# inventory\n\nStock levels and price reports for the shop.\n\nRun `python -m inventory`.\n",
        "inventory/store.py": "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef load_stock(rows):\n"
                              "    result = []\n    for row in rows:\n        result.append(row)\n    return result\n",
        "inventory/report.py": "from inventory.store import load_stock\n\n\ndef report(rows):\n"
                               "    stock = load_stock(rows)\n    return '\\n'.join(str(s) for s in stock)\n",
        "inventory/legacy.py": "# Kept for the old importer; nobody edits this file.\n\n\ndef old_total(items):\n"
                               "    return sum(i.price for i in items)\n",
    },
    "webui": {
        "README.md": "# webui\n\nThe cart and checkout pages.\n",
        "src/cart.ts": "export interface Item {\n  sku: string;\n  price: number;\n}\n\n"
                       "export function total(items: Item[]): number {\n  let result = 0;\n"
                       "  for (const it of items) {\n    result += it.price;\n  }\n"
                       "  return result;\n}\n",
        "src/format.ts": "export function formatPrice(value: number): string {\n  return value.toFixed(2);\n}\n",
        "src/legacy.ts": "// The old checkout; no agent touches it.\nexport const LEGACY = true;\n",
    },
}
NEVER_AGENT = {"inventory/inventory/legacy.py", "webui/src/legacy.ts", "inventory/README.md", "webui/README.md"}


class Script:
    """A seeded history: ``steps`` (what the generators replay) and the ``History`` it leads to."""

    def __init__(self, seed: int, sessions_per_agent: int, turns_per_session: int) -> None:
        self.rng = random.Random(seed)
        self.history = History(initial_files())
        self.steps: list[dict[str, Any]] = [{"kind": "commit", "message": "initial import"}]
        self.turns: list[Turn] = []
        self.counter = 0
        self.deleted_agent_lines: list[tuple[str, str]] = []  # (path, text) an agent wrote, a person deleted
        order = [(a, s) for s in range(sessions_per_agent) for a in AGENTS]
        for agent, s in order:
            project = self.rng.choice(sorted(PROJECTS))
            for _ in range(turns_per_session):
                self.agent_turn(agent, f"{agent}-{s}", project)
                for _ in range(self.rng.choice((0, 1, 1, 2))):
                    self.human_step(project)
                if self.rng.random() < 0.3:
                    self.commit()
        self.commit()

    def fresh(self, path: str, count: int, indent: str) -> list[str]:
        templates = TS_TEMPLATES if path.endswith(".ts") else PY_TEMPLATES
        out = []
        for _ in range(count):
            self.counter += 1
            out.append(self.rng.choice(templates).format(i=indent, n=self.counter, k=self.rng.randint(1, 99)))
        return out

    def agent_files(self, project: str) -> list[str]:
        return sorted(p for p in self.history.files if p.startswith(project + "/") and p not in NEVER_AGENT)

    def agent_turn(self, agent: str, session: str, project: str) -> None:
        turn = Turn(f"T{len(self.turns) + 1:04d}", agent, session)
        h, rng = self.history, self.rng
        files = self.agent_files(project)
        roll = rng.random()
        if roll < 0.08 or not files:  # a new file
            ext = ".ts" if project == "webui" else ".py"
            path = f"{project}/{'src' if ext == '.ts' else 'inventory'}/gen_{len(self.turns) + 1}{ext}"
            h.agent_write(turn, path, [*self.fresh(path, rng.randint(4, 9), ""), ""])
        elif roll < 0.14:  # a whole-file rewrite keeping most lines (Write of a file it read)
            path = rng.choice(files)
            texts = [x.text for x in h.files[path]]
            at = rng.randint(0, len(texts))
            h.agent_write(turn, path, texts[:at] + self.fresh(path, rng.randint(1, 3), "    ") + texts[at:])
        elif roll < 0.22 and any(p in files for p, _ in self.deleted_agent_lines):
            # the same line written again, by another conversation, after a person deleted it
            candidates = [i for i, (p, _) in enumerate(self.deleted_agent_lines) if p in files]
            path, text = self.deleted_agent_lines.pop(rng.choice(candidates))
            at = rng.randint(1, max(1, len(h.files[path])))
            h.agent_edit(turn, path, at, at, [text])
        else:
            path = rng.choice(files)
            n = len(h.files[path])
            start = rng.randint(0, max(0, n - 1))
            end = min(n, start + rng.choice((0, 1, 1, 2, 3)))
            indent = _indent_of(h.files[path][start].text if start < n else "")
            h.agent_edit(turn, path, start, end, self.fresh(path, rng.randint(1, 5), indent))
        if rng.random() < 0.25 and files:  # a second edit in the same turn, another file of the project
            path = rng.choice(files)
            if h.files.get(path):
                at = rng.randint(0, len(h.files[path]))
                h.agent_edit(turn, path, at, at, self.fresh(path, rng.randint(1, 3), ""))
        if turn.edits:
            self.turns.append(turn)
            self.steps.append({"kind": "agent", "tag": turn.tag, "agent": agent, "session": session,
                               "project": project, "edits": turn.edits})

    def human_step(self, project: str) -> None:
        h, rng = self.history, self.rng
        path = rng.choice(sorted(p for p in h.files if p.startswith(project + "/")))
        lines = h.files[path]
        n = len(lines)
        roll = rng.random()
        agent_rows = [i for i, x in enumerate(lines) if x.origin.turn and x.text.strip()]
        if roll < 0.25 and agent_rows:  # a person rewrites a line an agent wrote
            i = rng.choice(agent_rows)
            h.human_replace(path, i, i + 1, [lines[i].text.rstrip() + "  # checked by hand"
                                             if not path.endswith(".ts") else lines[i].text.rstrip() + " // checked"])
            h.files[path][i].over_agent = True
        elif roll < 0.4 and agent_rows:  # a person deletes an agent line (another conversation may write it again)
            i = rng.choice(agent_rows)
            self.deleted_agent_lines.append((path, lines[i].text))
            h.human_replace(path, i, i + 1, [])
        elif roll < 0.55 and n > 4:  # move a block within the file (mostly agent lines)
            start = rng.choice(agent_rows) if agent_rows and rng.random() < 0.8 else rng.randint(0, n - 2)
            end = min(n, start + rng.randint(2, 5))
            dest = rng.randint(0, n - (end - start))
            h.human_move(path, start, end, dest)
        elif roll < 0.7 and n > 2:  # reindent a block (mostly agent lines)
            start = rng.choice(agent_rows) if agent_rows and rng.random() < 0.8 else rng.randint(0, n - 1)
            h.human_reindent(path, start, min(n, start + rng.randint(2, 6)), "    " if path.endswith(".py") else "  ")
        elif roll < 0.8:  # revert the file to the last commit
            h.human_revert(path)
        else:  # a person writes new lines
            at = rng.randint(0, n)
            self.counter += 1
            h.human_replace(path, at, at, [f"# note {self.counter} by hand" if not path.endswith(".ts")
                                           else f"// note {self.counter} by hand"])
        self.steps.append({"kind": "human", "path": path, "files": {path: h.text(path)}})

    def commit(self) -> None:
        self.history.commit()
        self.steps.append({"kind": "commit", "message": f"step {len(self.steps)}"})


def _indent_of(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def apply_step(files: dict[str, str], step: dict[str, Any]) -> list[str]:
    """Replay one step on plain file texts (what the agents and the person do on disk); the paths changed."""
    if step["kind"] == "human":
        files.update(step["files"])
        return list(step["files"])
    if step["kind"] != "agent":
        return []
    for e in step["edits"]:
        if e["old"] is None or e["path"] not in files:
            files[e["path"]] = e["new"]
        else:
            files[e["path"]] = files[e["path"]].replace(e["old"], e["new"], 1)
    return [e["path"] for e in step["edits"]]


def initial_files() -> dict[str, str]:
    return {f"{proj}/{p}": t for proj, fs in PROJECTS.items() for p, t in fs.items()}
