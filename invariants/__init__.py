"""Properties per protocol: `invariants/<name>.py` registers invariants on `specs.<name>.spec`."""
