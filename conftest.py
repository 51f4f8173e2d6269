"""Root conftest: keep run outputs and the Lean project out of collection."""

collect_ignore = ["lean_env", "reports"]
