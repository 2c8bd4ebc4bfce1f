"""Measured lessons: small experiments that each isolate one effect the chapters teach.

Each module times one thing and nothing else (divergence, coalescing, host
copies, the NumPy baseline), so that a chapter can say "measured" instead of
"believe me". ``python -m demos bench lessons --output DIR`` runs them all and
writes ``DIR/lessons.json`` with the hardware recorded; the reference run ships
as ``demos/results/lessons.json``.

In a chapter, each module's ``live()`` runs the lesson at a size chosen from the
GPU at hand and its ``TABLE`` is what :func:`demos.live.side_by_side` prints
beside the reference; :mod:`.distance_live` does the same for the distance
matrix comparisons of chapters 3, 4 and 4a.
"""
