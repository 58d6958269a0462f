"""pimem: the memory of past AI-coding conversations (Pi, Claude Code, Codex CLI).

The package is layered (see ARCHITECTURE.md): ``store``, ``importers``, ``sync``, ``recall``,
``migrate`` are plain Python services; only ``pimem.lsp`` knows about pygls and lsprotocol.
"""

__version__ = "0.1.0"
