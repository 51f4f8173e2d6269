"""The fresh reviewer: a new read-only session that sees only the statement and the candidate.

It must end with exactly one ``REVIEW_VERDICT: APPROVE|REJECT`` line and one ``REVIEW_SHA256: <hex>``
line; anything else is a rejection. Its verdict binds to the digest it names.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .model import Task

_VERDICT = re.compile(r"^\s*REVIEW_VERDICT:\s*(\S+)\s*$", re.M)
_SHA = re.compile(r"^\s*REVIEW_SHA256:\s*(\S+)\s*$", re.M)


@dataclass(frozen=True)
class Review:
    approved: bool
    digest: str
    reason: str
    text: str


def parse_review(text: str) -> Review:
    verdicts = _VERDICT.findall(text)
    digests = _SHA.findall(text)
    if len(verdicts) != 1 or len(digests) != 1:
        return Review(False, "", f"reviewer must give exactly one verdict line and one digest line "
                                 f"(got {len(verdicts)} and {len(digests)})", text)
    verdict, digest = verdicts[0], digests[0].lower()
    if verdict not in ("APPROVE", "REJECT"):
        return Review(False, "", f"unknown verdict {verdict!r}", text)
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        return Review(False, "", f"malformed digest {digest!r}", text)
    return Review(verdict == "APPROVE", digest, "" if verdict == "APPROVE" else "reviewer rejected", text)


def reviewer_prompt(task: Task, digest: str) -> str:
    return (
        f"You are reviewing a submitted proof of `{task.theorem_name}` in the file `{task.candidate_name}` "
        f"in the current directory; the problem as given is in `STATEMENT.{task.candidate_name.rsplit('.', 1)[-1]}`.\n"
        "It already compiles and passed automatic checks. Read both files and judge whether the candidate "
        "proves the original statement faithfully: the statement, definitions and answer are unchanged in "
        "meaning, and nothing is assumed that the problem does not give. Do not modify any file.\n"
        "End your reply with exactly these two lines:\n"
        "REVIEW_VERDICT: APPROVE   (or REVIEW_VERDICT: REJECT, followed earlier by your reasons)\n"
        f"REVIEW_SHA256: <the SHA-256 of {task.candidate_name} as you read it>\n"
        f"(For reference, the submitted file's SHA-256 is {digest}; recompute it, e.g. with sha256sum.)\n")


def prepare_review_dir(root: Path, task: Task, candidate: bytes) -> Path:
    """A fresh directory with the statement and a copy of the candidate: never the actor's workspace."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / task.candidate_name).write_bytes(candidate)
    (root / f"STATEMENT.{task.candidate_name.rsplit('.', 1)[-1]}").write_text(task.template, encoding="utf-8")
    return root
