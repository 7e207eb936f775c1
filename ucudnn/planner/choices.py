"""The planner's option vocabularies and defaults, in a module that imports nothing, so that
the `ucudnn` command can describe its options (`--help`) without loading the planner."""

SOLVERS = ("highs", "cbc")  # WD's integer-programming solvers, the default first
DEFAULT_TIME_LIMIT_S = 60.0  # how long WD's solver may run
# --time-limit, seconds: from a nanosecond (which stops the solver at once) to a day.
TIME_LIMIT_RANGE_S = (1e-9, 86_400.0)
WORKSPACE_SHARING = ("divided", "shared")  # how a total workspace serves the kernels
FAST, EXHAUSTIVE = "fast", "exhaustive"
SEARCHES = (FAST, EXHAUSTIVE)  # how first use measures the candidates
DEFAULT_OVERHEAD_TEXT = "1GiB+10%"  # tune's headroom (see ucudnn.planner.memory)
