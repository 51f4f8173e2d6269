"""Errors of pytest-forall, each meaning one thing to the user."""

from __future__ import annotations


class ForallError(Exception):
    """Base class."""


class UsageError(ForallError):
    """Bad option, manifest or environment: stops the run with a message naming the source."""
