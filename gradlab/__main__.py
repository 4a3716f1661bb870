"""``python -m gradlab ...``: the ``gradlab`` command (``python -m gradlab lab`` opens the course)."""
import sys

from .cli import main

sys.exit(main())
