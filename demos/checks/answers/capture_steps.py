from demos.asynchrony.overlap import gpu_modules

cp, cupyx = gpu_modules()  # CuPy on a GPU; without one, the stand-in that records graphs


def capture_steps(x, steps):
    s = cp.cuda.Stream(non_blocking=True)  # the null stream cannot be captured
    with s:
        s.begin_capture()
        for _ in range(steps):
            x *= 0.5  # in place: the graph keeps writing into x at every launch
            x += 1.0
        graph = s.end_capture()
    return graph
