import sys

from pimem.cli import main

# The guard matters: sync's worker processes (spawn) import this module as __mp_main__.
if __name__ == "__main__":
    sys.exit(main())
