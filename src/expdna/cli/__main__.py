"""``python -m expdna.cli``: the ``expdna`` command."""

from expdna.cli import main

main()
