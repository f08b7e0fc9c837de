"""The resolver's indexes decide exactly what the five methods' scans would, and its log is bounded.

``ScanResolver`` below is the resolver of the module docstring read literally: the acronym method
scans every canonical name, containment and the near miss scan every candidate of the mention's
blocks and every surface of each. The indexed :class:`Resolver` must give the same record for
every mention, learn the same aliases, and leave the same tables, on the demo corpus, the water
corpus and generated mentions.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmesh.core.canonical import file_bytes
from contextmesh.demo.knowledge import build_world
from contextmesh.formats.resolver_file import _RECORD_FIELDS, dump_resolver, load_resolver, resolver_to_dict
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build
from contextmesh.knowledge.resolve import LOG_LIMIT, MARGIN, ResolutionRecord, Resolver, block_keys
from contextmesh.knowledge.text import normalize, words

WATER = Path(__file__).resolve().parents[1] / "data" / "corpora" / "water" / "docs"


class ScanResolver(Resolver):
    """Methods 3-5 by scanning, as the module docstring defines them."""

    def _decide(self, mention: str) -> ResolutionRecord:
        normalized = normalize(mention)
        if not normalized:
            return self._dropped(mention, normalized, "has no words")
        hit = self.aliases.get(normalized)
        if hit is not None:
            return self._resolved(mention, normalized, hit, "alias", 1.0)
        owners = self._squashed.get(normalized.replace(" ", ""), [])
        if len(owners) == 1:
            return self._resolved(mention, normalized, owners[0], "squashed", 1.0)
        if len(words(mention)) == 1 and 2 <= len(mention) <= 6 and mention.isupper() and mention.isalnum():
            initials = mention.lower()
            matches = [
                eid
                for eid, name in self.canonical.items()
                if "".join(t[0] for t in normalize(name).split()) == initials
            ]
            if len(matches) == 1:
                return self._resolved(mention, normalized, matches[0], "acronym", 1.0)
        candidates: dict[str, None] = {}
        for key in block_keys(normalized):
            for eid in self.blocks.get(key, ()):
                candidates.setdefault(eid)
        if not candidates:
            return self._dropped(mention, normalized, "no entity shares a blocking key with it")
        tokens = set(normalized.split())
        if len(normalized.split()) >= 2:
            containing = [
                eid for eid in candidates if any(tokens <= set(a.split()) for a in self._by_entity.get(eid, []))
            ]
            if len(containing) == 1:
                return self._resolved(mention, normalized, containing[0], "containment", 1.0)
        return self._scan_near_miss(mention, normalized, list(candidates))

    def _scan_near_miss(self, mention: str, normalized: str, candidates: list[str]) -> ResolutionRecord:
        width = len(normalized.split())
        best: dict[str, float] = {}
        for eid in candidates:
            for alias in self._by_entity.get(eid, []):
                pairs = zip(normalized.split(), alias.split(), strict=False)
                if len(alias.split()) != width or any(
                    a[0] != b[0] or (a != b and SequenceMatcher(None, a, b).ratio() < 0.75) for a, b in pairs
                ):
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


def _pair(resolver: Resolver) -> tuple[Resolver, Resolver]:
    """The indexed resolver and the scanning one, both restored from ``resolver``'s tables, empty logs."""
    parts = (resolver.canonical.items(), resolver.aliases.items(), resolver.blocks.items(), ())
    return Resolver.restore(resolver.threshold, *parts), ScanResolver.restore(resolver.threshold, *parts)


def _assert_same_on(resolver: Resolver, texts: list[str], mentions: list[str]) -> None:
    indexed, scanning = _pair(resolver)
    for text in texts:
        assert indexed.find_mentions(text) == scanning.find_mentions(text), text
    for mention in mentions:
        assert indexed.resolve(mention) == scanning.resolve(mention), mention
    assert indexed.log == scanning.log
    assert list(indexed.aliases.items()) == list(scanning.aliases.items())  # the same aliases learned
    assert list(indexed._by_entity.items()) == list(scanning._by_entity.items())


def test_the_demo_corpus_resolves_exactly_as_the_scans_do() -> None:
    world = build_world(0)
    resolver = world.result.resolver
    texts = [span.text for _, span in world.corpus.spans()]
    mentions = [record.mention for record in resolver.log]
    assert len(mentions) > 500 and {r.method for r in resolver.log} >= {"alias", "near_miss", "dropped"}
    _assert_same_on(resolver, texts, mentions)


def test_the_water_corpus_resolves_exactly_as_the_scans_do() -> None:
    corpus, _ = read_folder([WATER])
    built = build(corpus)
    texts = [span.text for _, span in corpus.spans()]
    mentions = [record.mention for record in built.resolver.log]
    assert len(mentions) > 1000
    _assert_same_on(built.resolver, texts, mentions)


_NAMES = st.lists(
    st.text(alphabet="abcdeimnoprst ", min_size=2, max_size=18).filter(lambda s: normalize(s) != ""),
    min_size=1,
    max_size=12,
    unique_by=normalize,
)


@settings(max_examples=150, deadline=None)
@given(names=_NAMES, mentions=st.lists(st.text(alphabet="abcdeimnoprstAIMPS -", max_size=16), max_size=12))
def test_generated_mentions_resolve_exactly_as_the_scans_do(names: list[str], mentions: list[str]) -> None:
    # A small alphabet makes shared blocks, shared first letters, near ties and acronyms common.
    registered = Resolver()
    for index, name in enumerate(names):
        registered.register(f"entity:{index}", name)
    _assert_same_on(registered, mentions, mentions)


def test_the_log_keeps_the_most_recent_records_and_the_file_round_trips() -> None:
    resolver = Resolver()
    resolver.register("entity:pg", "pgvector")
    for index in range(LOG_LIMIT + 25):
        resolver.resolve(f"banana {index}")
    assert len(resolver.log) == LOG_LIMIT
    assert resolver.log[0].mention == "banana 25"  # the oldest 25 fell out, oldest first
    assert resolver.log[-1].mention == f"banana {LOG_LIMIT + 24}"
    resolver.find_mentions("pgvector and more pgvector")
    assert len(resolver.log) == LOG_LIMIT
    assert resolver.log[-1].entity_id == "entity:pg"
    data = dump_resolver(resolver)
    assert dump_resolver(load_resolver(data)) == data


def test_a_longer_log_from_an_earlier_writer_is_read_and_keeps_its_most_recent_records() -> None:
    # Writers before the bound wrote every record; such a file stays readable (same v2 shape).
    resolver = Resolver()
    resolver.register("entity:pg", "pgvector")
    document = resolver_to_dict(resolver)
    records = [resolver._decide(f"kiwi {index}") for index in range(LOG_LIMIT + 3)]
    document["log"] = [{name: getattr(r, name) for name in _RECORD_FIELDS} for r in records]
    restored = load_resolver(file_bytes(document))
    assert restored.log == records[3:]
