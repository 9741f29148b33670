"""Backends: loaders and runners per framework."""
