"""Benchmarks behind ``python -m demos bench ...``; shared recording helpers in :mod:`.record`."""
