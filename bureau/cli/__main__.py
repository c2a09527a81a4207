"""``python -m bureau.cli``: the ``bureau`` command (how ``serve --workers N`` starts its
other processes, and how tests run it)."""

import sys

from bureau.cli import main

if __name__ == "__main__":
    sys.exit(main())
