"""Bridges between the Python model and the formal tools (TLC, z3)."""
