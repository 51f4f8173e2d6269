"""The verifier's static layers (no prover needed): ``syntax_screen``, ``frozen_statement``, ``shadowing_guard``.

Each entry point returns exactly those three :class:`~pytest_forall.core.model.Layer` objects, in that order.
"""

from pytest_forall.lang.lean.screen import lean_static_layers
from pytest_forall.lang.rocq.screen import rocq_static_layers

__all__ = ["lean_static_layers", "rocq_static_layers"]
