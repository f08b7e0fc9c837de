"""Layer 3, belief: assumptions, invalidation, decisions, evidence, time, reconstruction."""
