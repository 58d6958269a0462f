"""The MCP adapter (``pimem mcp``): the only package that imports the MCP SDK (tests/test_layers.py).

The SDK is a dependency of the ``pimem`` Python package but not of the VS Code extension's bundled
server, so nothing outside this package may need it, and this ``__init__`` imports nothing from it.
"""
