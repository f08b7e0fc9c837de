"""Helpers for tests and benchmarks: seeded synthetic graphs. Not used by the engine itself."""

from contextmesh.testing.generate import TYPE_MIX, generate_graph, plant_closure

__all__ = ["TYPE_MIX", "generate_graph", "plant_closure"]
