import math

from numba import cuda

BLOCK = (32, 8)  # 32 columns on x, 8 rows on y


def distance_on_device(x, y, kernel):
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)  # host -> GPU, once each
    d_out = cuda.device_array((x.shape[0], y.shape[0]), dtype=x.dtype)  # made on the GPU
    grid = (math.ceil(y.shape[0] / BLOCK[0]), math.ceil(x.shape[0] / BLOCK[1]))
    kernel[grid, BLOCK](d_x, d_y, d_out)
    return d_out.copy_to_host()  # GPU -> host, once
