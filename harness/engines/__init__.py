"""Engines: each explores a harness.model.Model and never imports a spec."""
