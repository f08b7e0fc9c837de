"""RESOLVE: one id per real thing, and a dropped mention rather than a wrong merge.

A :class:`Resolver` holds canonical names, an alias table (normalised surface form → entity id),
blocking keys (which entities a mention is even compared with) and a log of every resolution.
``resolve`` tries, in order, and stops at the first that decides:

1. **alias** — the normalised mention is in the alias table;
2. **squashed** — equal to exactly one alias once spaces are removed (``pg_vector`` = ``pgvector``);
3. **acronym** — a single upper-case word equal to the initials of exactly one canonical name;
4. **containment** — two or more words, all inside the words of exactly one entity's name or alias;
5. **near miss** — among entities sharing a blocking key, an alias with the same number of words,
   whose words pair up one by one (same first letter, each pair's difflib ratio at least
   :data:`WORD_FLOOR`), scoring at least :data:`THRESHOLD` over the whole form and ahead of every
   other entity's best by :data:`MARGIN`. The word pairing is what keeps ``shard count`` away from
   ``shard map`` and ``vectors`` away from ``pgvector``: a typo survives it, a different word does not.

Anything else is dropped with its reason. Methods 2–5 teach the alias table the new surface form
(a learned alias), without adding blocking keys: blocks record how an alias arrived, which is why
the resolver file persists them instead of rebuilding them.

Invariants:

1. A mention resolves to at most one entity, and only through one of the five methods above.
2. Every call to :meth:`Resolver.resolve` appends one record to the log, resolved or dropped.
3. Resolution is deterministic: candidates are examined in registration order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher

from contextmesh.core.errors import IdentityError
from contextmesh.knowledge.text import STOPWORDS, normalize, words

__all__ = ["MARGIN", "THRESHOLD", "WORD_FLOOR", "Mention", "ResolutionRecord", "Resolver", "block_keys"]

THRESHOLD = 0.62
WORD_FLOOR = 0.75
MARGIN = 0.05
_MAX_GRAM = 4


@dataclass(frozen=True)
class ResolutionRecord:
    """One resolution attempt: what was asked, what it became (or why it was dropped)."""

    mention: str
    normalized: str
    entity_id: str | None
    label: str | None
    method: str
    score: float
    reason: str | None

    @property
    def resolved(self) -> bool:
        """True when the mention became an entity id."""
        return self.entity_id is not None


@dataclass(frozen=True)
class Mention:
    """A span of words in a text and how it resolved."""

    start: int
    end: int
    record: ResolutionRecord


def block_keys(normalized: str) -> list[str]:
    """Blocking keys of a normalised name: each word's first four letters, and the squashed prefix."""
    keys = [token[:4] for token in normalized.split() if len(token) >= 3]
    squashed = normalized.replace(" ", "")
    if len(squashed) >= 3:
        keys.append("~" + squashed[:4])
    return list(dict.fromkeys(keys))


def _words_pair_up(left: str, right: str) -> bool:
    for a, b in zip(left.split(), right.split(), strict=True):
        if a[0] != b[0] or (a != b and SequenceMatcher(None, a, b).ratio() < WORD_FLOOR):
            return False
    return True


def _initials(normalized: str) -> str:
    return "".join(token[0] for token in normalized.split() if token)


class Resolver:
    """Canonical names, aliases (registered and learned), blocking keys and a resolution log."""

    def __init__(self, threshold: float = THRESHOLD) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, float) or not 0.0 < threshold <= 1.0:
            raise IdentityError(f"a resolver threshold is a float in (0, 1], not {threshold!r}")
        self.threshold = threshold
        self.canonical: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.blocks: dict[str, list[str]] = {}
        self.log: list[ResolutionRecord] = []
        # Derived from ``aliases`` (rebuilt on load, never stored): reverse and squashed lookups.
        self._by_entity: dict[str, list[str]] = {}
        self._squashed: dict[str, list[str]] = {}

    def add_alias(self, normalized: str, entity_id: str) -> str:
        """Point a normalised surface form at an entity unless it already means one; return the owner."""
        if entity_id not in self.canonical:
            raise IdentityError(f"cannot alias '{normalized}' to '{entity_id}': no such entity is registered")
        owner = self.aliases.setdefault(normalized, entity_id)
        if owner == entity_id and normalized not in self._by_entity.get(entity_id, ()):
            self._by_entity.setdefault(entity_id, []).append(normalized)
            owners = self._squashed.setdefault(normalized.replace(" ", ""), [])
            if entity_id not in owners:
                owners.append(entity_id)
        return owner

    @classmethod
    def restore(
        cls,
        threshold: float,
        canonical: Iterable[tuple[str, str]],
        aliases: Iterable[tuple[str, str]],
        blocks: Iterable[tuple[str, list[str]]],
        log: Iterable[ResolutionRecord],
    ) -> Resolver:
        """Rebuild a resolver from its persisted parts (``contextmesh.formats.resolver_file`` checks them first).

        Aliases are replayed in order through :meth:`add_alias`, so the derived reverse and squashed
        indexes come out exactly as the live resolver built them; blocks are taken as given, never rebuilt.
        """
        resolver = cls(threshold)
        resolver.canonical = dict(canonical)
        for normalized, entity_id in aliases:
            owner = resolver.add_alias(normalized, entity_id)
            if owner != entity_id:
                raise IdentityError(f"the alias '{normalized}' is restored twice, for '{owner}' and '{entity_id}'")
        resolver.blocks = {key: list(members) for key, members in blocks}
        resolver.log = list(log)
        return resolver

    # -- registration ---------------------------------------------------------------------

    def register(self, entity_id: str, name: str, aliases: tuple[str, ...] | list[str] = ()) -> None:
        """Add a canonical entity with its registered aliases and their blocking keys.

        Every surface form is checked before anything is stored, so a refusal leaves no trace.
        """
        if entity_id in self.canonical and self.canonical[entity_id] != name:
            raise IdentityError(
                f"entity id '{entity_id}' is already registered as '{self.canonical[entity_id]}'; "
                f"refusing to register '{name}' under it"
            )
        surfaces = [(surface, normalize(surface)) for surface in (name, *aliases)]
        for surface, normalized in surfaces:
            owner = self.aliases.get(normalized)
            if normalized and owner is not None and owner != entity_id:
                raise IdentityError(
                    f"the surface form '{surface}' already resolves to '{owner}'; refusing to let it also mean "
                    f"'{entity_id}'"
                )
        self.canonical[entity_id] = name
        for _, normalized in surfaces:
            if not normalized:
                continue
            self.add_alias(normalized, entity_id)
            for key in block_keys(normalized):
                members = self.blocks.setdefault(key, [])
                if entity_id not in members:
                    members.append(entity_id)

    # -- resolution -----------------------------------------------------------------------

    def resolve(self, mention: str, *, learn: bool = True) -> ResolutionRecord:
        """Resolve one surface form, log the outcome, and return the record."""
        record = self._decide(mention)
        if learn and record.entity_id is not None and record.method != "alias":
            self.add_alias(record.normalized, record.entity_id)
        self.log.append(record)
        return record

    def _decide(self, mention: str) -> ResolutionRecord:
        normalized = normalize(mention)
        if not normalized:
            return self._dropped(mention, normalized, "has no words")
        hit = self.aliases.get(normalized)
        if hit is not None:
            return self._resolved(mention, normalized, hit, "alias", 1.0)
        squashed = normalized.replace(" ", "")
        owners = self._squashed.get(squashed, [])
        if len(owners) == 1:
            return self._resolved(mention, normalized, owners[0], "squashed", 1.0)
        surface_words = words(mention)
        if len(surface_words) == 1 and 2 <= len(mention) <= 6 and mention.isupper() and mention.isalnum():
            matches = [eid for eid, name in self.canonical.items() if _initials(normalize(name)) == mention.lower()]
            if len(matches) == 1:
                return self._resolved(mention, normalized, matches[0], "acronym", 1.0)
        candidates = self._candidates(normalized)
        if not candidates:
            return self._dropped(mention, normalized, "no entity shares a blocking key with it")
        tokens = normalized.split()
        if len(tokens) >= 2:
            containing = [
                eid for eid in candidates if any(set(tokens) <= set(alias.split()) for alias in self._surfaces(eid))
            ]
            if len(containing) == 1:
                return self._resolved(mention, normalized, containing[0], "containment", 1.0)
        return self._near_miss(mention, normalized, candidates)

    def _near_miss(self, mention: str, normalized: str, candidates: list[str]) -> ResolutionRecord:
        width = len(normalized.split())
        best: dict[str, float] = {}
        for eid in candidates:
            for alias in self._surfaces(eid):
                if len(alias.split()) != width or not _words_pair_up(normalized, alias):
                    continue
                score = SequenceMatcher(None, normalized, alias).ratio()
                if score > best.get(eid, -1.0):
                    best[eid] = score
        if not best:
            return self._dropped(mention, normalized, "no candidate alias pairs up with it word by word")
        ranked = sorted(best.items(), key=lambda item: -item[1])
        winner, score = ranked[0]
        label = self.canonical[winner]
        if score < self.threshold:
            return self._dropped(
                mention, normalized, f"best candidate '{label}' scored {score:.2f}, below {self.threshold:.2f}"
            )
        if len(ranked) > 1 and score - ranked[1][1] < MARGIN:
            other = self.canonical[ranked[1][0]]
            return self._dropped(
                mention, normalized, f"'{label}' ({score:.2f}) and '{other}' ({ranked[1][1]:.2f}) are too close to call"
            )
        return self._resolved(mention, normalized, winner, "near_miss", round(score, 4))

    def _candidates(self, normalized: str) -> list[str]:
        found: dict[str, None] = {}
        for key in block_keys(normalized):
            for eid in self.blocks.get(key, ()):
                found.setdefault(eid)
        return list(found)

    def _surfaces(self, entity_id: str) -> list[str]:
        return self._by_entity.get(entity_id, [])

    def _resolved(self, mention: str, normalized: str, eid: str, method: str, score: float) -> ResolutionRecord:
        return ResolutionRecord(mention, normalized, eid, self.canonical[eid], method, score, None)

    def _dropped(self, mention: str, normalized: str, reason: str) -> ResolutionRecord:
        return ResolutionRecord(mention, normalized, None, None, "dropped", 0.0, reason)

    # -- mentions in running text ---------------------------------------------------------

    def find_mentions(self, text: str, *, learn: bool = True) -> tuple[list[Mention], list[ResolutionRecord]]:
        """Longest-first resolution of word n-grams in ``text``.

        Returns the resolved mentions and one dropped record for every content word no n-gram
        starting at it resolved.
        """
        tokens = words(text)
        mentions: list[Mention] = []
        dropped: list[ResolutionRecord] = []
        index = 0
        while index < len(tokens):
            if tokens[index].lower() in STOPWORDS:
                index += 1
                continue
            taken = None
            for size in range(min(_MAX_GRAM, len(tokens) - index), 0, -1):
                gram = tokens[index : index + size]
                if gram[-1].lower() in STOPWORDS:
                    continue
                record = self._decide(" ".join(gram)) if size > 1 else None
                if record is None or not record.resolved:
                    continue
                taken = (size, record)
                break
            if taken is None:
                record = self.resolve(tokens[index], learn=learn)
                if record.resolved:
                    mentions.append(Mention(index, index + 1, record))
                else:
                    dropped.append(record)
                index += 1
                continue
            size, record = taken
            self.log.append(record)
            if learn and record.entity_id is not None and record.method != "alias":
                self.add_alias(record.normalized, record.entity_id)
            mentions.append(Mention(index, index + size, record))
            index += size
        return mentions, dropped
