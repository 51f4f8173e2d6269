"""pytest-forall: proofs as pytest items."""

from pytest_forall.core.model import (
           FAILED,
           INFRA,
           OUTCOMES,
           RULES_ONLY,
           STATEMENT_FALSE,
           STRICT,
           Budget,
           Layer,
           Task,
           Usage,
           Verdict,
)

__all__ = ["FAILED", "INFRA", "OUTCOMES", "RULES_ONLY", "STATEMENT_FALSE", "STRICT", "Budget", "Layer", "Task",
           "Usage", "Verdict"]
__version__ = "0.1.0"
