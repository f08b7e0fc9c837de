"""What a question asks for, read from its wording: the relations it names and the kind of node it wants.

A question that says "replaced" asks across a ``supersedes`` edge, "contradicts" or "disputes"
across ``contradicts``, "depends on" or "rests on" across ``depends_on`` (or a decision's
``derived_from`` to the claims it rests on), and so on. :func:`read_intent` turns that wording into
an :class:`Intent`: the edge types the answer should be reached over, the node type asked for
("which decision…", "what assumption…", "what evidence…"), whether the question asks *why*, and
the cue words themselves — they describe the relation, not the thing asked about, so they are
left out of the lexical evidence.

The cues are ordinary English relation words, matched on stems; none names a thing in any corpus.
They are the common wordings of each edge's meaning in GRAPH.md ("hinges on", "underlies",
"backs", "overrode"…; ADR 0036). Wording that only *leans* towards a relation ("what led to X",
"what must hold for X") is kept in :attr:`Intent.leaning`: the walk prefers that relation's edges,
but the strict relations' rule (an answer only across the relation) does not apply to it.

Invariant: a pure function of the question's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextmesh.knowledge.text import content_stems

__all__ = ["Intent", "read_intent"]

# (pattern, edge types it asks across). Patterns run over the lower-cased question. A "~" marks an
# edge that points the other way from the verb: "X is supported by C" is stored as X derived_from C.
# The words are the ordinary English for each edge's meaning in GRAPH.md ("brought the target into
# being", "if the target turns out false, the source falls with it", "cannot both be true"...).
_RELATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        r"\b(replac(e|ed|es|ing)|supersed(e|ed|es|ing)|took over from|instead of|newer|succeed(ed|s)?|"
        r"overr(ide|ides|ode|idden)|overturn(s|ed)?|in place of)\b",
        ("supersedes",),
    ),
    (
        r"\b(contradict(s|ed|ing)?|disput(e|ed|es|ing)|goes against|go against|went against|refut(e|ed|es)|"
        r"disprov(e|ed|es)|conflicts? with|at odds|inconsistent with|disagree(s|d)? with|clash(es|ed)? with|"
        r"undermin(e|es|ed)|prov(e|ed|es) wrong|belie[sd]?)\b",
        ("contradicts",),
    ),
    (r"\bshow(ed|s|n)? that\b.*\b(not|never|no longer)\b", ("contradicts",)),
    (
        r"\b(cite[sd]?|citing|point(s|ed)? to|refer(s|red)? to|quot(e|es|ed)|implement(s|ed)?|"
        r"referenc(e|es|ed|ing))\b",
        ("cites",),
    ),
    # "Based on" reads as "rests on" (a decision's assumptions and claims) as often as a citation.
    (r"\b(based on|builds? on|built on|draws? on)\b", ("depends_on", "derived_from", "cites")),
    (
        r"\b(depend(s|ed|ing)? on|rest(s|ed)? on|rel(y|ies|ied) on|take[sn]? for granted|presuppos(e|es|ed)|"
        r"hinge[sd]? on|premised on|predicated on|contingent on|conditional on|fall(s)? with|stands? or falls?)\b",
        ("depends_on", "derived_from"),
    ),
    # "A underlies D" is stored as D depends_on A: the verb points the other way.
    (r"\b(underl(ie|ies|ay|ying)|underpin(s|ned|ning)?|lies under)\b", ("~depends_on", "~derived_from")),
    (r"\b(has|have|had) to be done before|\bprerequisite\b|\bneed(s|ed)? first\b", ("depends_on",)),
    (
        r"\b(produc(e|ed|es|ing)|brought\b.*\binto being|creat(e|ed|es)|gave rise to|introduc(e|ed|es)|"
        r"brought about|spawn(s|ed)?)\b",
        ("produces",),
    ),
    (
        r"\b(support(s|ed|ing)?|back(s|ed|ing)?( up)?|argu(e|es|ed) for|in favou?r of|corroborat(e|es|ed)|"
        r"bolster(s|ed)?|reinforc(e|es|ed)|strengthen(s|ed)?|speaks? for|case for)\b",
        ("supports", "~derived_from"),
    ),
    (
        r"\b(justif(y|ies|ied)|stands? behind|warrant(s|ed)?|vindicat(e|es|ed)|grounds for|allowed to stand)\b",
        ("~justified_by", "supports"),
    ),
    (
        r"\b(taken from|derived from|comes? from|came from|behind the|in the document|the document|drawn from|"
        r"extracted from)\b",
        ("derived_from",),
    ),
)
# Wording that leans towards a relation without naming it ("what led to X", "what must hold for X"):
# the walk prefers the relation's edges, but an answer off them is not barred (the strict
# relations' rule, :data:`~contextmesh.knowledge.confidence.STRICT_RELATIONS`, does not apply).
_LEANINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\b(led to|lead to|leads to|result(ed|s)? in|set up|gave us|came out of|come out of)\b", ("produces",)),
    (r"\b(must (hold|be true)|ha(s|ve) to (hold|be true)|needs? to (hold|be true)|falls?)\b", ("depends_on",)),
)
_TYPES: tuple[tuple[str, str], ...] = (
    (r"\b(which|what) (\w+ )?decisions?\b|\bdecision (was|did)\b", "decision"),
    (r"\bassum\w*|\btake[sn]? for granted\b|\bpresuppos\w*", "assumption"),
    (r"\bevidence\b", "evidence"),
    (r"\b(which|what) (\w+ )?(claims?|statements?)\b", "claim"),
)
_WHY = re.compile(r"^\s*why\b|\bwhat (made|caused|led to)\b|\bhow come\b", re.IGNORECASE)
_PAST = re.compile(
    r"\b(originally|initially|previously|used to|at first|early|earlier|old|former(ly)?|"
    r"before \w+ \w+ (grew|changed|rose|fell))\b"
)
_CUE_WORDS = (
    "replace replaced superseded supersede supersedes contradict contradicts contradicted dispute disputes "
    "disputed refute refuted disprove disproved cite cites cited point points implement implements implemented "
    "based builds draws depend depends rest rests "
    "rely relies produce produced produces bring brought create created decision decisions assumption "
    "assumptions evidence claim claims statement statements override overrides overrode overridden overturn "
    "overturned "
    "undermine undermines undermined inconsistent clash clashes disagree disagrees reference references "
    "referenced hinge hinges premised predicated contingent conditional underlie underlies underlying "
    "underpin underpins spawn spawned corroborate corroborates bolster reinforce reinforces vindicate"
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
    asks_for_source: bool | None = None
    inverted: frozenset[str] = frozenset()
    leaning: frozenset[str] = frozenset()

    def direction_fits(self, edge_type: str, answer_is_source: bool) -> bool:
        """True unless the wording says which end of the relation it wants and this is the other end."""
        if self.asks_for_source is None:
            return True
        wanted = self.asks_for_source != (edge_type in self.inverted)
        return wanted == answer_is_source

    @property
    def relational(self) -> bool:
        """True when the question names a relation to walk across."""
        return bool(self.edges)


def read_intent(question: str) -> Intent:
    """The :class:`Intent` of ``question`` (see the module docstring)."""
    text = question.lower()
    edges: list[str] = []
    inverted: set[str] = set()
    for pattern, types in _RELATIONS:
        if re.search(pattern, text):
            for marked in types:
                name = marked.lstrip("~")
                if name not in edges:
                    edges.append(name)
                    if marked.startswith("~"):
                        inverted.add(name)
    leaning: set[str] = set()
    for pattern, types in _LEANINGS:
        if re.search(pattern, text):
            leaning.update(name for name in types if name not in edges)
            edges.extend(name for name in types if name not in edges)
    node_type = next((kind for pattern, kind in _TYPES if re.search(pattern, text)), None)
    cues = frozenset(stem for stem in content_stems(question) if stem in _CUES)
    return Intent(
        tuple(edges),
        node_type,
        bool(_WHY.search(question)),
        bool(_PAST.search(text)),
        cues,
        _asks_for_source(text),
        frozenset(inverted),
        frozenset(leaning),
    )


def _asks_for_source(text: str) -> bool | None:
    """Which end of the relation the question wants, from where its verb stands.

    "What replaced X?", "Which report contradicts X?" — the relation's verb follows the question
    word (and at most two words naming a kind): the question asks for its subject, the edge's
    source. "What does X supersede?", "…that a later report disputes?" — something stands between
    them: it asks for the object, the edge's target. No relation verb: no preference.
    """
    for pattern, _ in (*_RELATIONS, *_LEANINGS):
        found = re.search(pattern, text)
        if found is None:
            continue
        before = text[: found.start()].split()
        # The clause asking starts at its question word, wherever the sentence starts: "if the
        # assumption is wrong, which decisions fall?" asks for what falls.
        asking = [i for i, word in enumerate(before) if word in {"what", "which", "who"}]
        if asking and before[0] not in {"what", "which", "who"}:
            before = before[asking[-1] :]
        if before and before[0] in {"what", "which", "who"} and len(before) <= 3:
            return not any(word in {"does", "did", "do", "is", "was", "were", "are", "has", "have"} for word in before)
        return False
    return None
