"""The verifier's static layers (no prover needed): ``syntax_screen``, ``frozen_statement``, ``shadowing_guard``.

Each entry point returns exactly those three :class:`~pytest_forall.model.Layer` objects, in that order.
"""

from .lean import lean_static_layers
from .rocq import rocq_static_layers

__all__ = ["lean_static_layers", "rocq_static_layers"]
