"""Pairwise Arena: ``python app.py [--config FILE] [--db URL] [--host H] [--port P]``.

Only wires things together: the program is :mod:`arena.app` (also ``pairlab arena``).
"""

import sys

from arena.app import main

if __name__ == "__main__":
    sys.exit(main())
