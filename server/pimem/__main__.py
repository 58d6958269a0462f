import sys

from pimem.cli import main

sys.exit(main())
