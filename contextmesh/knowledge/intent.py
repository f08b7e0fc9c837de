"""What a question asks for, read from its wording: the relations it names and the kind of node it wants.

A question that says "replaced" asks across a ``supersedes`` edge, "contradicts" or "disputes"
across ``contradicts``, "depends on" or "rests on" across ``depends_on`` (or a decision's
``derived_from`` to the claims it rests on), and so on. :func:`read_intent` turns that wording into
an :class:`Intent`: the edge types the answer should be reached over, the node type asked for
("which decision…", "what assumption…", "what evidence…"), whether the question asks *why*, and
the cue words themselves — they describe the relation, not the thing asked about, so they are
left out of the lexical evidence.

The cues are ordinary English relation words, matched on stems; none names a thing in any corpus.

Invariant: a pure function of the question's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextmesh.knowledge.text import content_stems

__all__ = ["Intent", "read_intent"]

# (pattern, edge types it asks across). Patterns run over the lower-cased question.
_RELATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\b(replac\w*|supersed\w*|took over from|instead of|newer|succeed\w*)\b", ("supersedes",)),
    (
        r"\b(contradict\w*|disput\w*|goes against|go against|refut\w*|disprov\w*|conflict\w*|at odds)\b",
        ("contradicts",),
    ),
    (r"\bshow(ed|s|n)? that\b.*\b(not|never|no longer)\b", ("contradicts",)),
    (r"\b(cite[sd]?|citing|point(s|ed)? to|refer(s|red)? to|quot(e|es|ed))\b", ("cites",)),
    (r"\b(depend\w*|rest(s|ed)? on|rel(y|ies|ied) on|take[sn]? for granted|presuppos\w*)\b", ("depends_on", "derived_from")),
    (r"\b(has|have|had) to be done before|\bprerequisite\b|\bneed(s|ed)? first\b", ("depends_on",)),
    (r"\b(produc\w*|brought\b.*\binto being|creat(e|ed|es)|gave rise to|introduc\w*)\b", ("produces",)),
    (r"\b(support\w*|back(s|ed)? up|argu\w* for|in favour of|in favor of)\b", ("supports", "derived_from")),
    (r"\b(justif\w*|stands? behind|warrant\w*)\b", ("justified_by", "supports")),
    (r"\b(taken from|derived from|comes? from|behind the|in the document|the document)\b", ("derived_from",)),
)
_TYPES: tuple[tuple[str, str], ...] = (
    (r"\b(which|what) (\w+ )?decisions?\b|\bdecision (was|did)\b", "decision"),
    (r"\bassum\w*|\btake[sn]? for granted\b|\bpresuppos\w*", "assumption"),
    (r"\bevidence\b", "evidence"),
    (r"\b(which|what) (\w+ )?(claims?|statements?)\b", "claim"),
)
_WHY = re.compile(r"^\s*why\b|\bwhat (made|caused|led to)\b|\bhow come\b", re.IGNORECASE)
_PAST = re.compile(r"\b(originally|previously|used to|at first|earlier|old|former(ly)?|once)\b")
_CUE_WORDS = (
    "replace replaced superseded supersede supersedes contradict contradicts contradicted dispute disputes "
    "disputed refute refuted disprove disproved cite cites cited point points depend depends rest rests "
    "rely relies produce produced produces bring brought create created support supports supported back "
    "justify justifies justified stand stands behind decision decisions assumption assumptions evidence claim "
    "claims statement statements"
)
_CUES = frozenset(content_stems(_CUE_WORDS))


@dataclass(frozen=True)
class Intent:
    """The relations a question asks across, the node type it wants, and its cue stems."""

    edges: tuple[str, ...] = ()
    node_type: str | None = None
    causal: bool = False
    past: bool = False
    cues: frozenset[str] = frozenset()

    @property
    def relational(self) -> bool:
        """True when the question names a relation to walk across."""
        return bool(self.edges)


def read_intent(question: str) -> Intent:
    """The :class:`Intent` of ``question`` (see the module docstring)."""
    text = question.lower()
    edges: list[str] = []
    for pattern, types in _RELATIONS:
        if re.search(pattern, text):
            edges.extend(t for t in types if t not in edges)
    node_type = next((kind for pattern, kind in _TYPES if re.search(pattern, text)), None)
    cues = frozenset(stem for stem in content_stems(question) if stem in _CUES)
    return Intent(tuple(edges), node_type, bool(_WHY.search(question)), bool(_PAST.search(text)), cues)
