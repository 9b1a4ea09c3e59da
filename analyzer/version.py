"""The package's version, in the one place the build (pyproject.toml), the command's ``--version`` and
generated parser modules read it, without reading installed metadata (start-up time) and without
importing the package's ``__init__`` from inside it."""

__version__ = "0.1.0"
