"""Documented planner calls as users write them: numpy integers where integers go, and sizes
as text. `tests/test_typed_calls.py` type-checks this file with mypy --strict and runs it."""

from __future__ import annotations

import numpy as np

from ucudnn import ConvProblem
from ucudnn.planner import baseline, builtin_network, make_plan_wd, make_plan_wr, plan_wr
from ucudnn.planner.networks import load_network
from ucudnn.planner.synthetic import model_table, model_tables
from ucudnn.planner.tune import tune

batch = np.int64(16)

problem = ConvProblem.create(
    batch, np.int64(3), np.int32(8), (np.int64(32), np.int64(32)), np.int64(3),
    padding=np.int64(1), stride=(np.int64(1), 1), dilation=np.int64(1),
)  # fmt: skip
assert problem.with_batch(np.int64(4)).batch == 4
shaped = ConvProblem.from_shapes((batch, 3, 32, 32), (np.int64(8), 3, 3, 3), padding="same")
assert shaped == problem

table = model_table("conv1", "forward", problem, policy=[np.int64(1), np.int64(8)])
assert plan_wr(table, "64MiB").batch == 16
assert baseline(table, np.int64(64 << 20)) is not None

graph = load_network("resnet18", batch=batch, image_size=np.int64(64))
assert builtin_network("alexnet", np.int64(8), image_size=np.uint16(224)).layers()
tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
wr = make_plan_wr(tables, "64MiB", policy=(np.int64(1), np.int64(4), np.int64(16)))
wd = make_plan_wd(tables, "512MiB", alignment=np.int64(256))
assert wr.workspace_bytes <= 64 << 20 and wd.workspace_bytes <= 512 << 20
assert make_plan_wr(tables, np.int64(64 << 20)).workspace_bytes == wr.workspace_bytes

tuned = tune(graph, tables, "2GiB", batches=[np.int64(8), np.int64(16)], policy=[np.int64(1), 4])
assert tuned.best.batch in (8, 16)
assert tune(graph, tables, np.int64(2 << 30), alignment=np.int64(256), overhead="0").best.plan
