"""Train the model of ``model.py`` under ``fastdiff.trace``, on the CPU.

    python examples/trace/train.py RUN [--level op|module] [--steps 6]
        [--unordered-from K] [--data STEP ...]

The data, the weights and the batches come from seeded generators: two runs
are bit-identical. With ``--unordered-from K``, from step K on the mixture of
experts of the second block adds its experts' outputs in an order nobody
seeded (``model.MoE.unordered``): two such runs differ from step K, born in
that scatter-add. Trace two runs and compare them, with no schema:

    python examples/trace/train.py runs/a --level op --unordered-from 3
    python examples/trace/train.py runs/b --level op --unordered-from 3
    fastdiff compare runs/a runs/b

The verdict names step 3 and the op and module it is born in,
``fwd.layers.1.moe.example.scatter_add#0``. ``--data 3`` records step 3 in
full, to see the values that differ. ``RUN`` defaults to ``$FASTDIFF_RUN``
(``fastdiff rerun`` sets it for each arm).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

import fastdiff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="run folder (default: $FASTDIFF_RUN)")
    parser.add_argument("--level", choices=("module", "op"), default="op")
    parser.add_argument("--steps", type=int, default=6, help="training steps (default 6)")
    parser.add_argument("--unordered-from", type=int, metavar="K", default=None,
                        help="from step K on, layer 1's MoE adds in an unseeded order")  # fmt: skip
    parser.add_argument("--data", type=int, nargs="*", default=(), metavar="STEP",
                        help="steps recorded in full (default: digests only)")  # fmt: skip
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)  # the nondeterminism is the scatter-add's order, not threads
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1)
    x_all = torch.randn(64, 16, 32, generator=data)
    y_all = torch.randn(64, 16, 1, generator=data)
    batches = torch.Generator().manual_seed(2)
    moe = model.layers[1].moe

    with fastdiff.trace(args.run, model=model, level=args.level, data=set(args.data)) as t:
        for step in range(args.steps):
            t.step(step)
            moe.unordered = args.unordered_from is not None and step >= args.unordered_from
            idx = torch.randint(0, len(x_all), (8,), generator=batches)
            x, y = x_all[idx], y_all[idx]
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
