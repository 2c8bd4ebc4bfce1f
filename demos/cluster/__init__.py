"""Chapter 6 beyond one node: the sum, mat-vec and Lorenz examples on a cluster.

Two ways to spread one of chapter 6's examples over the GPUs of several nodes,
both splitting the work exactly as on one node and both checking the gathered
answer against the one-node NumPy result:

* :mod:`.work`       the examples cut into parts (which part, on which GPU, checked how)
* :mod:`.dask_jobs`  Dask workers started as batch jobs by dask-jobqueue's
  ``SLURMCluster`` or ``LSFCluster``, one worker per GPU
  (``python -m demos cluster dask``)
* :mod:`.mpi_ranks`  one MPI rank per GPU, started by ``srun`` or ``mpiexec``
  (``python -m demos cluster mpi``)
* :mod:`.links`      published bandwidths of the links between GPUs, in a node and between nodes
"""
