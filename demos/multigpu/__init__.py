"""Chapter 6: using several GPUs from Python.

One small module per scenario, each of which runs with no GPU (NumPy, Dask on
CPU workers, or the CUDA simulator), with one GPU and with several:

* :mod:`.splitting`      how work is cut into per-device pieces (pure NumPy logic)
* :mod:`.process_pool`   one GPU per process (``CUDA_VISIBLE_DEVICES`` per worker)
* :mod:`.dask_workers`   the same function on a Dask (CUDA) cluster
* :mod:`.mpi_sum`        mpi4py, CUDA-aware or staged through the host
* :mod:`.device_threads` several GPUs in one process, one thread per device, managed memory
* :mod:`.matvec`, :mod:`.reduce`  split mat-vec and sum, with the crossover size
* :mod:`.lorenz`         a parameter sweep: Lorenz ensemble, RK4, one thread per trajectory
* :mod:`.tiles`, :mod:`.pipeline`, :mod:`.data_parallel`  deep-learning style parallelism
"""
