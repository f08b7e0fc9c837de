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

No method scans the entities. Each looks up an index derived from the tables (never stored, rebuilt
by replaying the aliases on restore): the acronym method an initials table, containment the
intersection of per-word surface sets, the near miss the surfaces with the mention's first letters
(a word pair that does not share its first letter never pairs up, so no other surface can score)
or, when they are fewer, the aliases of the entities in the mention's blocks;
the blocking keys then only filter what the index found, and rank it in the order a scan of the
blocks would have met it. The cost of a resolution follows the size of what matches, not the
number of entities.

Invariants:

1. A mention resolves to at most one entity, and only through one of the five methods above.
2. Every call to :meth:`Resolver.resolve` appends one record to the log, resolved or dropped; the
   log keeps the most recent :data:`LOG_LIMIT` records (older ones are dropped, oldest first).
3. Resolution is deterministic: candidates are examined in block order, the order in which a scan
   of the mention's blocks (keys in order, members in order) first meets them.
4. The indexes decide exactly what the scans of the five methods' definitions would: the same
   entity, method, score and reason for every mention.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import islice

from contextmesh.core.errors import IdentityError
from contextmesh.knowledge.text import STOPWORDS, normalize, words

__all__ = [
    "LOG_LIMIT",
    "MARGIN",
    "THRESHOLD",
    "WORD_FLOOR",
    "Mention",
    "ResolutionRecord",
    "Resolver",
    "block_keys",
]

THRESHOLD = 0.62
WORD_FLOOR = 0.75
MARGIN = 0.05
# The log is saved with every commit; unbounded, it made a long-lived session's every commit
# slower (2,000 asks took the resolver file from 176 KB to 1.35 MB). The most recent resolutions
# are what the health signal reads; the demo's and the water corpus's builds stay well inside.
LOG_LIMIT = 2048
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


def _signature(normalized: str) -> str:
    """The first letter of each word: two forms whose words pair up have the same signature."""
    return "".join(token[0] for token in normalized.split())


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
        # Derived from ``aliases`` (rebuilt on load, never stored): reverse and squashed lookups,
        # each word's surfaces, and the surfaces by the first letters of their words.
        self._by_entity: dict[str, list[str]] = {}
        self._squashed: dict[str, list[str]] = {}
        self._by_word: dict[str, set[str]] = {}
        self._by_signature: dict[str, list[str]] = {}
        # Derived from ``canonical``: entities by the initials of their name. ``canonical`` only
        # grows (a re-registration keeps the name), so entries past ``_initials_seen`` are new ones,
        # whoever added them.
        self._by_initials: dict[str, list[str]] = {}
        self._initials_seen = 0
        # Derived from ``blocks``: each member's position in its block, rebuilt whenever ``blocks``
        # is replaced (restore, or a caller assigning a copy) and kept in step by ``register``.
        self._block_pos: dict[str, dict[str, int]] = {}
        self._pos_source: dict[str, list[str]] | None = None

    def add_alias(self, normalized: str, entity_id: str) -> str:
        """Point a normalised surface form at an entity unless it already means one; return the owner."""
        if entity_id not in self.canonical:
            raise IdentityError(f"cannot alias '{normalized}' to '{entity_id}': no such entity is registered")
        owner = self.aliases.setdefault(normalized, entity_id)
        surfaces = self._by_entity.setdefault(entity_id, []) if owner == entity_id else None
        if surfaces is not None and normalized not in surfaces:
            surfaces.append(normalized)
            owners = self._squashed.setdefault(normalized.replace(" ", ""), [])
            if entity_id not in owners:
                owners.append(entity_id)
            for token in normalized.split():
                self._by_word.setdefault(token, set()).add(normalized)
            self._by_signature.setdefault(_signature(normalized), []).append(normalized)
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
        resolver.log = list(log)[-LOG_LIMIT:]
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
        positions = self._positions()
        for _, normalized in surfaces:
            if not normalized:
                continue
            self.add_alias(normalized, entity_id)
            for key in block_keys(normalized):
                members = self.blocks.setdefault(key, [])
                at = positions.setdefault(key, {})
                if entity_id not in at:
                    at[entity_id] = len(members)
                    members.append(entity_id)

    # -- resolution -----------------------------------------------------------------------

    def resolve(self, mention: str, *, learn: bool = True) -> ResolutionRecord:
        """Resolve one surface form, log the outcome, and return the record."""
        record = self._decide(mention)
        if learn and record.entity_id is not None and record.method != "alias":
            self.add_alias(record.normalized, record.entity_id)
        self._log(record)
        return record

    def _log(self, record: ResolutionRecord) -> None:
        self.log.append(record)
        if len(self.log) > LOG_LIMIT:
            del self.log[: len(self.log) - LOG_LIMIT]

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
            matches = self._initials_of(mention.lower())
            if len(matches) == 1:
                return self._resolved(mention, normalized, matches[0], "acronym", 1.0)
        keys = block_keys(normalized)
        if not any(self.blocks.get(key) for key in keys):
            return self._dropped(mention, normalized, "no entity shares a blocking key with it")
        tokens = normalized.split()
        if len(tokens) >= 2:
            containing = self._containing(tokens, keys)
            if len(containing) == 1:
                return self._resolved(mention, normalized, containing[0], "containment", 1.0)
        return self._near_miss(mention, normalized, keys)

    def _initials_of(self, initials: str) -> list[str]:
        """Entities whose name's normal form has these initials, in registration order."""
        if self._initials_seen != len(self.canonical):
            for entity_id, name in islice(self.canonical.items(), self._initials_seen, None):
                self._by_initials.setdefault(_initials(normalize(name)), []).append(entity_id)
            self._initials_seen = len(self.canonical)
        return self._by_initials.get(initials, [])

    def _containing(self, tokens: list[str], keys: list[str]) -> list[str]:
        """Candidates with one surface holding every token; stops at two (only one decides)."""
        postings = sorted((self._by_word.get(token, set()) for token in set(tokens)), key=len)
        found = postings[0].intersection(*postings[1:]) if postings[0] else set()
        owners: dict[str, None] = {}
        for surface in found:
            owner = self.aliases[surface]
            if owner not in owners and self._rank(owner, keys) is not None:
                owners[owner] = None
                if len(owners) > 1:
                    break
        return list(owners)

    def _near_miss_candidates(self, signature: str, keys: list[str]) -> Iterable[str]:
        """The aliases with this signature whose entities may share a block key with the mention.

        Either index decides it: the surfaces with the signature (filtered by block later), or the
        aliases of the blocks' members (filtered by signature here), whichever is smaller. A
        one-word typo's signature is its first letter, shared by a 26th of every one-word surface,
        so the signature alone grew with the entity count; the mention's blocks usually do not.
        """
        by_signature = self._by_signature.get(signature, ())
        members = [self.blocks.get(key, ()) for key in keys]
        if sum(map(len, members)) >= len(by_signature):
            return by_signature
        seen: dict[str, None] = {}
        for block in members:
            for entity_id in block:
                for alias in self._by_entity.get(entity_id, ()):
                    if alias not in seen and _signature(alias) == signature:
                        seen[alias] = None
        return seen

    def _near_miss(self, mention: str, normalized: str, keys: list[str]) -> ResolutionRecord:
        best: dict[str, float] = {}
        rank: dict[str, tuple[int, int]] = {}
        for alias in self._near_miss_candidates(_signature(normalized), keys):
            owner = self.aliases[alias]
            if owner not in rank:
                at = self._rank(owner, keys)
                if at is None:
                    continue
                rank[owner] = at
            if not _words_pair_up(normalized, alias):
                continue
            score = SequenceMatcher(None, normalized, alias).ratio()
            if score > best.get(owner, -1.0):
                best[owner] = score
        if not best:
            return self._dropped(mention, normalized, "no candidate alias pairs up with it word by word")
        # Best score first; equal scores in block order, as a scan of the candidates would rank them.
        ranked = sorted(best.items(), key=lambda item: (-item[1], rank[item[0]]))
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

    def _rank(self, entity_id: str, keys: list[str]) -> tuple[int, int] | None:
        """Where a scan of ``keys``' blocks first meets the entity, or ``None`` if it shares none."""
        positions = self._positions()
        for index, key in enumerate(keys):
            at = positions.get(key)
            if at is not None and entity_id in at:
                return index, at[entity_id]
        return None

    def _positions(self) -> dict[str, dict[str, int]]:
        if self._pos_source is not self.blocks:
            self._block_pos = {
                key: {entity_id: at for at, entity_id in reversed(list(enumerate(members)))}
                for key, members in self.blocks.items()
            }
            self._pos_source = self.blocks
        return self._block_pos

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
            self._log(record)
            if learn and record.entity_id is not None and record.method != "alias":
                self.add_alias(record.normalized, record.entity_id)
            mentions.append(Mention(index, index + size, record))
            index += size
        return mentions, dropped
