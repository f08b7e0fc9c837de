"""File formats: a strict loader and a writer for each versioned format ContextMesh writes."""
