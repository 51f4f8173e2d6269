"""Read-only binds into the sandbox, as options give them: parsed and checked where no sandbox is imported.

``--forall-sandbox-ro PATH[:INSIDE]`` (ini ``forall_sandbox_ro``) and ``forall verify --sandbox-ro`` are checked
here once, at configure time, and read again by every prover backend (:func:`option_binds`), so the plugin, the
command line and the backends agree on one syntax. :mod:`pytest_forall.isolation.sandbox` uses the same inside-path
rules for every policy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

#: Where the sandbox's own files (init script, proxy socket) live inside.
RUN_DIR_INSIDE = "/run/forall"
#: Inside paths a policy may not mount over: the skeleton the sandbox itself depends on.
RESERVED_INSIDE = ("/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/tmp", "/run")
#: The prover's writable build directory inside (``SandboxPolicy.workspace_inside`` of every prover call).
PROVER_WORKSPACE_INSIDE = "/workspace"
#: The options key holding the extra binds, as normalized ``HOST:INSIDE`` strings.
OPTION = "sandbox_ro"


def check_inside_path(inside: str) -> None:
    """ValueError unless ``inside`` is an absolute, normalized path the sandbox does not reserve for itself."""
    path = PurePosixPath(inside)
    if not path.is_absolute() or ".." in path.parts or str(path) != inside:
        raise ValueError(f"inside path must be absolute and normalized: {inside!r}")
    if inside in RESERVED_INSIDE or any(path.is_relative_to(d) for d in ("/proc", "/dev", RUN_DIR_INSIDE)):
        raise ValueError(f"inside path {inside!r} is reserved by the sandbox")


def parse_ro_binds(specs: Iterable[str], base: Path) -> list[str]:
    """``PATH[:INSIDE]`` specs as normalized ``HOST:INSIDE`` strings (``PATH`` relative to ``base``, ``INSIDE``
    defaulting to it). ValueError naming the spec: a host path that does not exist, an inside path that is
    relative, not normalized, reserved, or inside the prover's workspace (a bind there would shadow the build)."""
    parsed = []
    for spec in specs:
        text = str(spec).strip()
        if not text:
            continue
        host_text, _, inside = text.partition(":")
        if not host_text:
            raise ValueError(f"{text!r}: no host path before the ':' (PATH[:INSIDE])")
        host = Path(os.path.normpath(base / Path(host_text).expanduser()))
        if not host.exists():
            raise ValueError(f"{text!r}: {host} does not exist")
        inside = inside or str(host)
        try:
            check_inside_path(inside)
        except ValueError as exc:
            raise ValueError(f"{text!r}: {exc}") from None
        if PurePosixPath(inside).is_relative_to(PROVER_WORKSPACE_INSIDE):
            raise ValueError(f"{text!r}: inside path {inside!r} is the prover's build directory")
        parsed.append(f"{host}:{inside}")
    return parsed


def option_binds(options: Mapping[str, Any]) -> tuple[tuple[Path, str], ...]:
    """The extra read-only ``(host, inside)`` binds of a backend's options (already checked at configure time)."""
    value = options.get(OPTION) or []
    specs = [value] if isinstance(value, str) else list(value)
    return tuple((Path(host), inside) for host, _, inside in
                 (spec.partition(":") for spec in parse_ro_binds(specs, Path.cwd())))
