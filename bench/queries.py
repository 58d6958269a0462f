"""The fixed recall query set of the benchmarks (built on the entities bench/generate.py plants)."""

from __future__ import annotations

from dataclasses import dataclass

from textpool import NO_MATCH


@dataclass(frozen=True)
class Query:
    name: str
    entities: tuple[str, ...]
    limit: int = 5
    sources: tuple[str, ...] | None = None
    cwd: str | None = None

    @property
    def filtered(self) -> bool:
        return self.sources is not None or self.cwd is not None

    def params(self) -> dict[str, object]:
        """``pimem/recall`` params."""
        params: dict[str, object] = {"entities": list(self.entities), "limit": self.limit}
        if self.sources is not None:
            params["sources"] = list(self.sources)
        if self.cwd is not None:
            params["cwd"] = self.cwd
        return params

    def cli_args(self) -> list[str]:
        """``pimem recall`` arguments (after the subcommand)."""
        args = [*self.entities, "--limit", str(self.limit), "--json"]
        for source in self.sources or ():
            args += ["--source", source]
        if self.cwd is not None:
            args += ["--cwd", self.cwd]
        return args


QUERIES: tuple[Query, ...] = (
    Query("rare identifier (5 turns)", ("zq_rare_ident_4417",)),
    Query("identifier (1%)", ("slugify_title",)),
    Query("word (0.5%)", ("flamingo",)),
    Query("word, upper-case query", ("FLAMINGO",)),
    Query("word (3%)", ("payroll",)),
    Query("very common planted word (20%)", ("cache",)),
    Query("very common natural word", ("the",)),
    Query("code word", ("return",)),
    Query("100%", ("100%",)),
    Query("a_b", ("a_b",)),
    Query("C:\\path", ("C:\\path",)),
    Query("CJK 1 char (1%)", ("锁",)),
    Query("CJK 2 chars (2%)", ("缓存",)),
    Query("CJK 1 char, very common", ("的",)),
    Query("2-char ASCII", ("go",)),
    Query("multi: word + common", ("flamingo", "cache")),
    Query("multi: 3 wildcard entities", ("payroll", "100%", "a_b")),
    Query("multi: CJK", ("缓存", "锁")),
    Query("multi: rare + very common", ("zq_rare_ident_4417", "the")),
    Query("no match", (NO_MATCH,)),
    Query("no match + common", (NO_MATCH, "payroll")),
    Query("limit 50", ("payroll",), limit=50),
    Query("source filter (codex)", ("flamingo",), sources=("codex",)),
    Query("folder filter", ("cache",), cwd="/home/dev/src/webshop"),
)

# Extra variants the correctness check (--check-only) also compares with the oracle.
CHECK_VARIANTS: tuple[dict[str, object], ...] = (
    {"limit": 1},
    {"limit": 50},
    {"sources": ("pi",)},
    {"cwd": "/home/dev/work/中文项目"},
)
