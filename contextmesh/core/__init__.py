"""Layer 1, the core: errors, canonical bytes, ids, the ontology, strict records, the graph."""
