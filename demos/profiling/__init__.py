"""Profiling and asynchrony (chapter 4a): timelines from CUDA events, counted syncs, ncu tables.

:mod:`~demos.profiling.timeline` records and reads timelines,
:mod:`~demos.profiling.sync_counter` is an array module that counts implicit
host transfers (the ``profiling`` assignment grades with it),
:mod:`~demos.profiling.bench` measures the chapter's lessons on a GPU,
:mod:`~demos.profiling.live` shows them beside the reference in the chapter, and
:mod:`~demos.profiling.ncu` drives and reads Nsight Compute. Shipped results
are read with :mod:`demos.shipped_results` and GPU time taken with
:mod:`demos.gpu_timer`, as everywhere in the package.
"""
