"""Hidden-test verdicts decided in the grader's process, out of the student's reach.

:mod:`.hidden_tests` runs a test cell's hidden part here; :mod:`.api` is what
it is written with; :mod:`.proxies` stand in for the student's functions (run
in their kernel, answering with plain data) and kernels (checked by
:mod:`.kernel_source`, run by :mod:`.kernel_runner` in a simulator sandboxed
beside the notebook's kernel); :mod:`.originality` tells course code copied under other names.
"""

#: The environment variable with the course secret that seeds the hidden inputs:
#: read by the grader only; the kernel is started without it.
SECRET_VARIABLE = "COURSE_GRADING_SECRET"
