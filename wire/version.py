"""poolq's version, written once: ``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``),
``poolq --version`` prints it, ``from poolq import __version__`` re-exports it, and cached
OpenVINO plans carry it. It sits in ``wire`` (the lowest layer) so every layer may read it."""

__version__ = "0.1.0"
