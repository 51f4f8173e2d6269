"""Errors and warnings of pytest-forall, each meaning one thing to the user."""

from __future__ import annotations

import pytest


class ForallError(Exception):
    """Base class."""


class UsageError(ForallError):
    """Bad option, manifest or environment: stops the run with a message naming the source."""


class ForallWarning(pytest.PytestWarning):
    """Something the user should know that does not stop the run."""
