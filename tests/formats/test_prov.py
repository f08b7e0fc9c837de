"""contextmesh/formats/prov.py: the demo loop's ledger as PROV-O JSON-LD, read back as RDF with rdflib."""

from __future__ import annotations

import json

import pytest
import rdflib
from rdflib.namespace import PROV, RDF

from contextmesh.core.canonical import file_bytes
from contextmesh.demo.execute import Walkthrough, run_walkthrough
from contextmesh.formats.prov import prov_document

# rdflib's own JSON-LD parser builds a ConjunctiveGraph internally and warns about it (its deprecation,
# not ours); nothing here uses the deprecated class.
pytestmark = pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")

CM = rdflib.Namespace("urn:contextmesh:vocab#")
BASE = "urn:contextmesh:session:2ff00f21-ef01-45ee-873a-75371bcbba39/"


@pytest.fixture(scope="module")
def demo() -> Walkthrough:
    return run_walkthrough()


@pytest.fixture(scope="module")
def graph(demo: Walkthrough) -> rdflib.Graph:
    document = prov_document(demo.runner.ledger, demo.runner.graph, plan=demo.runner.name, base=BASE)
    return rdflib.Graph().parse(data=json.dumps(document), format="json-ld")


def node(node_id: str) -> rdflib.URIRef:
    return rdflib.URIRef(f"{BASE}node/{node_id}")


def test_every_fallen_node_and_the_rejected_assumption_were_invalidated_by_the_disproof(
    demo: Walkthrough, graph: rdflib.Graph
) -> None:
    disproof = rdflib.URIRef(f"{BASE}disproof/11")
    assert (disproof, RDF.type, CM.Disproof) in graph and (disproof, RDF.type, PROV.Activity) in graph
    receipt = demo.runner.ledger.receipts()[0]
    fallen = {item["id"] for item in receipt["invalidated"]} | {receipt["ground"]["assumption_id"]}
    assert {str(s).removeprefix(f"{BASE}node/") for s in graph.subjects(PROV.wasInvalidatedBy, disproof)} == fallen
    assert (disproof, PROV.used, node(receipt["evidence_id"])) in graph
    assert (disproof, PROV.wasAssociatedWith, rdflib.URIRef(f"{BASE}key/auth.audit.advisory.v1")) in graph


def test_each_fallen_node_carries_its_reason_chain(graph: rdflib.Graph) -> None:
    routes = node("decision:secure-authentication-routes-v1-4677c3")
    (qualified,) = graph.objects(routes, PROV.qualifiedInvalidation)
    assert (qualified, RDF.type, PROV.Invalidation) in graph
    (chain,) = graph.objects(qualified, CM.reasonChain)
    assert str(chain).endswith("<-depends_on- routes (secure-authentication)")


def test_the_re_runs_were_informed_by_the_disproof_and_generated_the_new_decisions(graph: rdflib.Graph) -> None:
    informed = {str(s).removeprefix(f"{BASE}run/") for s in graph.subjects(PROV.wasInformedBy, None)}
    assert informed == {"22", "24", "26"}  # hashing, routes and rate_limit in round 3
    new_hashing = node("decision:secure-authentication-hashing-v2-87bc58")
    assert (new_hashing, PROV.wasGeneratedBy, rdflib.URIRef(f"{BASE}run/22")) in graph
    assert (
        rdflib.URIRef(f"{BASE}run/22"),
        PROV.used,
        node("assumption:bcrypt-has-no-open-advisory-v2-04c258"),
    ) in graph
    assert (new_hashing, PROV.wasInvalidatedBy, None) not in graph


def test_runs_use_what_their_upstream_decisions_produced(graph: rdflib.Graph) -> None:
    routes_run = rdflib.URIRef(f"{BASE}run/24")
    assert (routes_run, PROV.used, node("entity:password-hasher-605979")) in graph
    assert (routes_run, PROV.wasAssociatedWith, rdflib.URIRef(f"{BASE}key/auth.routes.v1")) in graph
    assert len(set(graph.subjects(RDF.type, PROV.Activity))) == 9  # eight runs and one disproof


def test_the_document_is_the_same_bytes_every_time(demo: Walkthrough) -> None:
    first = prov_document(demo.runner.ledger, demo.runner.graph, plan=demo.runner.name)
    second = prov_document(run_walkthrough().runner.ledger, run_walkthrough().runner.graph, plan=demo.runner.name)
    assert file_bytes(first) == file_bytes(second)
