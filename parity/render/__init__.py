"""Reporters: the results table rendered for people (markdown, terminal) and for CI (JUnit, JSON)."""
