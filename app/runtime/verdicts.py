"""What a reviewer says of an answer: keep it, revise it, replace it with the server's own words, or ask again.

The answer review (app/runtime/review.py) asks every reviewer of the agent about the same text and
applies their verdicts by one rule, whatever order the skills were configured in:
- `ask`: the model is asked again with the feedback (every reviewer's feedback that asked, together),
  while the answer's retry budget lasts; otherwise the verdict's `otherwise` applies;
- `replace`: the server's own answer takes the place of the model's (an unfinished answer, the honest
  "the documents do not answer this"); several replacements are shown one after the other;
- `revise`: a function of the text that changes a part of it (citations linked, a sentence marked);
  revisions apply in the order of their `phase`, then the reviewer's name;
- `keep`: nothing to change.
Every verdict may add to the answer's metadata (`meta`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["keep", "revise", "replace", "ask"]


@dataclass(frozen=True)
class Verdict:
    kind: Kind = "keep"
    # replace: the text shown instead of the model's answer.
    text: str | None = None
    # revise: what turns the answer into the revised one (it is given the text as the earlier revisions left it).
    revise: Callable[[str], str] | None = None
    phase: int = 50
    # ask: what the model is told; `otherwise` applies when it cannot be asked again.
    feedback: str = ""
    otherwise: Verdict | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def keep(cls, meta: dict[str, Any] | None = None) -> Verdict:
        return cls("keep", meta=dict(meta or {}))

    @classmethod
    def replaced(cls, text: str, meta: dict[str, Any] | None = None) -> Verdict:
        return cls("replace", text=text, meta=dict(meta or {}))

    @classmethod
    def revised(cls, revise: Callable[[str], str], phase: int = 50, meta: dict[str, Any] | None = None) -> Verdict:
        return cls("revise", revise=revise, phase=phase, meta=dict(meta or {}))

    @classmethod
    def ask_again(cls, feedback: str, otherwise: Verdict, meta: dict[str, Any] | None = None) -> Verdict:
        return cls("ask", feedback=feedback, otherwise=otherwise, meta=dict(meta or {}))

    def settled(self) -> Verdict:
        """Return the verdict that applies when the model cannot be asked again."""
        if self.kind != "ask":
            return self
        fallback = self.otherwise or Verdict.keep()
        return Verdict(fallback.kind, fallback.text, fallback.revise, fallback.phase,
                       meta={**self.meta, **fallback.meta})
