"""The grading sandbox: where and how a student's kernel runs, and nothing about grading.

Its one job is to keep student code away from the grader: the isolation this
machine allows (:mod:`~grader.sandbox.isolation`, with the kernel's
:class:`~grader.sandbox.policy.Policy`), bubblewrap, sandbox user ids and
cgroups, the kernel process itself (``python -m grader.sandbox.kernel``), its
memory watcher, its environment, the flags it raises, and the copies of
untrusted folders (:mod:`~grader.sandbox.safe_files`).
"""
