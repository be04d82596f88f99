"""``python -m poolq.worker``: the ``poolq`` command line."""

from poolq.worker.cli import main

main()
