"""Instructor tooling."""
