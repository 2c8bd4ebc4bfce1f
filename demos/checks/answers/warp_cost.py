def warp_cost(lane_branch, branch_steps):
    """Steps one warp needs: every distinct branch its lanes take runs once, one after another."""
    return sum(branch_steps[branch] for branch in set(lane_branch))
