"""Measured lessons: small experiments that each isolate one effect the chapters teach.

Each module times one thing and nothing else (divergence, coalescing, host
copies, the NumPy baseline), so that a chapter can say "measured" instead of
"believe me". ``python -m demos bench lessons --output DIR`` runs them all and
writes ``DIR/lessons.json`` with the hardware recorded; the reference run ships
as ``demos/results/lessons.json``.
"""
