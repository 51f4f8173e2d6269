"""The fresh reviewer: a new read-only session that sees only the statement and the candidate.

It must end with exactly one ``REVIEW_VERDICT: APPROVE|REJECT`` line and one ``REVIEW_SHA256: <hex>``
line; anything else is a rejection. Its verdict binds to the digest it names.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from pytest_forall.core.model import Task

_VERDICT = re.compile(r"^\s*REVIEW_VERDICT:\s*(\S+)\s*$", re.MULTILINE)
_SHA = re.compile(r"^\s*REVIEW_SHA256:\s*(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Review:
    approved: bool
    digest: str
    reason: str
    text: str


def parse_review(text: str) -> Review:
    """The verdict of a reviewer's final message; anything but the exact two-line ending is a rejection.

    Exactly one verdict line and one digest line may occur, and they must be the message's last two
    non-empty lines: a verdict buried in the middle (quoted, or followed by second thoughts) counts for nothing.
    """
    verdicts = _VERDICT.findall(text)
    digests = _SHA.findall(text)
    if len(verdicts) != 1 or len(digests) != 1:
        return Review(False, "", f"reviewer must give exactly one verdict line and one digest line "
                                 f"(got {len(verdicts)} and {len(digests)})", text)
    ending = [line for line in text.splitlines() if line.strip()][-2:]
    if not all(_VERDICT.fullmatch(line) or _SHA.fullmatch(line) for line in ending):
        return Review(False, "", "the verdict and digest lines are not the last two lines of the review", text)
    verdict, digest = verdicts[0], digests[0].lower()
    if verdict not in ("APPROVE", "REJECT"):
        return Review(False, "", f"unknown verdict {verdict!r}", text)
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        return Review(False, "", f"malformed digest {digest!r}", text)
    return Review(verdict == "APPROVE", digest, "" if verdict == "APPROVE" else "reviewer rejected", text)


def reviewer_prompt(task: Task, digest: str) -> str:
    """Only the statement and the candidate: the reviewer never sees the actor's conversation or earlier reviews."""
    statement = f"STATEMENT.{task.candidate_name.rsplit('.', 1)[-1]}"
    return (
        f"You are reviewing a submitted proof of `{task.theorem_name}` in the file `{task.candidate_name}` "
        f"in the current directory; the problem exactly as it was given is in `{statement}`.\n"
        "The candidate already compiled and passed automatic checks (frozen statement, axiom audit). Read both "
        "files and judge whether the candidate proves the original statement faithfully: the statement, "
        "definitions and any answer value are unchanged in meaning, nothing is assumed that the problem does "
        "not give, and no trick (redefined notation, shadowed names, changed scopes) makes it prove something "
        "easier. Check also whether the proof works only because the statement's hypotheses contradict each "
        "other (it derives False from them): judge faithfulness as above either way, but if so, say it in your "
        "reasons on a line starting with `VACUOUS:` naming the hypotheses; a vacuous statement is a defect of the "
        "benchmark, which the actor can prove with a checked vacuity certificate. You cannot and must not modify "
        "any file.\n"
        f"The SHA-256 of `{task.candidate_name}` as submitted is {digest}.\n"
        "Give your reasons first. Then end your reply with exactly these two lines and nothing after them:\n"
        "REVIEW_VERDICT: APPROVE   (or: REVIEW_VERDICT: REJECT)\n"
        f"REVIEW_SHA256: <the SHA-256 of the {task.candidate_name} you judged>\n")


def prepare_review_dir(root: Path, task: Task, candidate: bytes) -> Path:
    """A fresh directory with the statement and a copy of the candidate: never the actor's workspace."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / task.candidate_name).write_bytes(candidate)
    (root / f"STATEMENT.{task.candidate_name.rsplit('.', 1)[-1]}").write_text(task.template, encoding="utf-8")
    return root
