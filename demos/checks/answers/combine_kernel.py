combine_kernel = {
    "in_params": "T x2_i, T xy, T y2_j",  # in the order the arrays are passed
    "out_params": "T d",  # T: the same type as the inputs
    "operation": "d = x2_i - 2 * xy + y2_j",  # runs once per entry (i, j): one pass, no temporaries
}
