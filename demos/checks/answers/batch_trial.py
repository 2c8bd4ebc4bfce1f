batch_trial = {
    "batch_size": 256,  # eight times the tutorial's batch
    # on a CPU each step is already long, so a larger batch saves at most the little
    # per-step overhead, and once a batch's activations outgrow the caches it may even
    # lose; a large GPU, idle at batch 32, would gain many times
    "predicted_speedup": 1.0,
}
