"""Shared, pure views of a Features document that rules, lint and doctor checks all need."""
