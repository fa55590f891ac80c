"""Protocol models: one module or package per protocol, each exposing `spec` (a harness.model.Spec)."""
