from demos.asynchrony.overlap import gpu_modules

cp, cupyx = gpu_modules()  # CuPy on a GPU; without one, the stand-in that logs streams


def streamed_work(data, work, n_streams, timeline):
    chunks = data.shape[0]
    host_in = cupyx.empty_pinned(data.shape, data.dtype)  # page-locked: copy engines read it
    host_in[...] = data
    host_out = cupyx.empty_pinned(data.shape, data.dtype)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(n_streams)]
    for k in range(chunks):
        s = streams[k % n_streams]  # neighbouring chunks on different streams
        with s:
            x = cp.empty(data.shape[1:], data.dtype)
            with timeline.step("copy in", s):
                x.set(host_in[k], stream=s)
            with timeline.step("kernel", s):
                y = work(x)
            with timeline.step("copy out", s):
                y.get(out=host_out[k], stream=s, blocking=False)
    for s in streams:  # one wait per stream, after everything is queued
        s.synchronize()
    return host_out
