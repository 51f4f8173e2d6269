"""Resume state of one item, kept outside the workspace and authenticated with the run secret.

A run that stops early (infra failure, Ctrl-C, a killed worker) leaves the item's progress here: the
sample and round it reached, the compiles, reviews, tokens and spend so far, the actor's session
handle, the prompt it was about to receive and the last verdict. ``--forall-resume RUN`` reads it back
so budgets keep counting and the same agent session continues.

The file carries an HMAC-SHA256 over the task id, the workspace path and the canonical JSON payload,
keyed by the run secret (``reports/<run>/.secret``, never in a workspace). State that does not verify
(edited, copied from another item or run, unreadable) is moved aside as ``state.json.quarantined-<n>``
and the item starts afresh: progress is lost, but nothing forged is trusted.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.actor import SessionHandle
from pytest_forall.core.model import Usage
from pytest_forall.core.progress import write_json_atomic


def load_secret(path: Path, new: bytes | None = None) -> bytes:
    """The secret kept in ``path`` (mode 0600); whichever process comes first (under a lock) writes ``new``
    (default: 32 random bytes), so a secret chosen before its file could be written is the one kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(32) if new is None else new)
        return path.read_bytes()

STATE_VERSION = 1
#: What the next step of an unfinished item is: an actor turn, or a review of the candidate on disk.
ACTOR_PHASE = "actor"
REVIEW_PHASE = "review"


@dataclass
class ItemState:
    """Progress of one item across runs; every counter is cumulative for the item unless named per sample."""

    sample: int = 0
    rounds: int = 0
    sample_rounds: int = 0
    compiles: int = 0
    sample_compiles: int = 0
    reviews: int = 0
    wall_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    frontend: str = ""
    actor: SessionHandle | None = None
    sessions: list[str] = field(default_factory=list)
    phase: str = ACTOR_PHASE
    #: the prompt the actor gets next (resent after an infra failure cut a turn short)
    prompt: str = ""
    last_reason: str = ""
    last_digest: str = ""
    last_verdict: str = ""
    last_review: str = ""
    #: the outcome this run ended with ("" while running); infra marks the item resumable
    outcome: str = ""
    #: why the item (or, while it runs, the last sample) stopped: a key of ``outcomes.STOPS``
    stop: str = ""
    infra: str = ""

    def start_sample(self, sample: int) -> None:
        self.sample, self.sample_rounds, self.sample_compiles = sample, 0, 0
        self.actor, self.phase, self.prompt = None, ACTOR_PHASE, ""

    def to_wire(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.to_wire()
        data["actor"] = None if self.actor is None else asdict(self.actor)
        return data

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> ItemState:
        values = dict(data)
        values["usage"] = Usage(**values.get("usage") or {})
        actor = values.get("actor")
        values["actor"] = SessionHandle(**actor) if actor else None
        return cls(**values)


class StateStore:
    """Reads and writes one item's ``state.json`` with its HMAC; quarantines what fails the check."""

    def __init__(self, path: Path, secret: bytes, task_id: str, workspace: Path) -> None:
        self.path = path
        self.secret = secret
        self.task_id, self.workspace = task_id, workspace
        #: whether the file may exist (known after :meth:`load` and :meth:`save`): state written over it, or none
        self.present = True

    @functools.cached_property
    def binding(self) -> str:
        """What the HMAC binds the state to: the item and its workspace (resolved when a state is first read or
        written; an item that keeps none never pays for it)."""
        return f"{self.task_id}\0{self.workspace.resolve()}"

    def _mac(self, payload: str) -> str:
        return hmac.new(self.secret, f"{self.binding}\0{payload}".encode(), hashlib.sha256).hexdigest()

    def save(self, state: ItemState) -> None:
        payload = json.dumps({"version": STATE_VERSION, "state": state.to_wire()}, sort_keys=True)
        write_json_atomic(self.path, {"payload": payload, "hmac": self._mac(payload)})
        self.present = True

    def load(self) -> tuple[ItemState | None, str]:
        """(state, "") when there is valid state; (None, why) after quarantining bad state; (None, "") if none."""
        self.present = self.path.exists()
        if not self.present:
            return None, ""
        try:
            envelope = json.loads(self.path.read_text(encoding="utf-8"))
            payload, mac = str(envelope["payload"]), str(envelope["hmac"])
            if not hmac.compare_digest(mac, self._mac(payload)):
                raise ValueError("HMAC does not match (edited, or state of another item, workspace or run)")
            data = json.loads(payload)
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"state version {data.get('version')!r} is not {STATE_VERSION}")
            return ItemState.from_wire(data["state"]), ""
        except (OSError, ValueError, KeyError, TypeError) as exc:
            moved = self._quarantine()
            self.present = False
            return None, f"{exc.__class__.__name__}: {exc}; moved to {moved.name}"

    def _quarantine(self) -> Path:
        number = 1
        while (target := self.path.with_name(f"{self.path.name}.quarantined-{number}")).exists():
            number += 1
        self.path.replace(target)
        return target
