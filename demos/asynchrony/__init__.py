"""Chapter 4a's hands-on asynchrony: streams and events by hand, CUDA graphs, managed memory.

:mod:`~demos.asynchrony.overlap` gives a chapter CuPy (or, without a GPU, the
stand-in that logs what went to which stream), the chunk of work to overlap,
and reads a timeline of CUDA events for what overlapped;
:mod:`~demos.asynchrony.waits` logs, in the host's order, the steps a pipeline
opens and every wait of the host (what the streams check judges the waits by);
:mod:`~demos.asynchrony.streams_bench` measures the students' pipeline and a
graph of many small kernels (``python -m demos bench streams``);
:mod:`~demos.asynchrony.managed` measures managed memory with and without
prefetching (``python -m demos bench managed``); :mod:`~demos.asynchrony.live`
shows both beside the reference. Kept apart from :mod:`demos.profiling`, whose
shipped reference names that folder as the code it measured.
"""
