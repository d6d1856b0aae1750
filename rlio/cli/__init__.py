"""The ``rlio`` command: a thin shell over the public API, one module per subcommand.

Each subcommand module defines ``register(sub)``, which adds its parser (help text, defaults,
examples, exit codes) and sets its handler. :mod:`rlio.cli.main` assembles them.
"""

from rlio.cli.main import main

__all__ = ["main"]
