# The students' mode's own Python (beside this file): the Validate that retries
# (course_validate.py) and the job's time limit for the lab page
# (course_time_limit.py), both turned on in jupyter_server_config.d/, and kernels whose
# Unix sockets keep short paths (course_kernels.py; the transport is set in
# jupyter_server_config.json).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
c = get_config()  # noqa: F821 (the config loader provides it)
c.MappingKernelManager.kernel_manager_class = "course_kernels.CourseKernelManager"
