"""A small PyTorch training loop that records its state with fastdiff's Recorder.

    python examples/train/train.py [--steps 8] [--seed-shuffle] [--run DIR]

It fits a two-layer network to a synthetic regression task, on the CPU. The
data, the initial weights and the batches all come from seeded generators,
so two runs should be bit-identical. They are not: each batch is split into
micro-batches whose gradients are accumulated (``loss.backward()`` adds into
``.grad``) in an order that Python's ``random.shuffle`` picks, and Python's
``random`` is seeded from the operating system at start-up. Float addition
is not associative, so the accumulated gradients differ in their last bits
from run to run, and the weights drift apart from there on.

``fastdiff rerun -n 3 -- python examples/train/train.py`` finds it: the first
divergent step, with the gradients diverging first (by rounding-size
amounts) while the batch they were computed from is equal. With
``--seed-shuffle`` the shuffle has a seed of its own, and rerun finds the job
deterministic.

Each step records, in this order: the batch (``batch.x``, ``batch.y``), the
loss, every gradient (``grad.<parameter>``), every parameter after the
optimizer step (``param.<parameter>``) and the first layer's weights in
bfloat16 as a mixed-precision forward pass would use them
(``param_bf16.fc1.weight``). The run folder is ``--run``, else
``$FASTDIFF_RUN`` (set by ``fastdiff rerun`` for each arm).
"""

from __future__ import annotations

import argparse
import random

import torch

from fastdiff import Recorder

MICRO_BATCHES = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="training steps (default 8)")
    parser.add_argument("--seed-shuffle", action="store_true", help="seed the micro-batch shuffle")
    parser.add_argument("--run", help="run folder (default: $FASTDIFF_RUN)")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)  # the example's nondeterminism is the shuffle, not threads
    data = torch.Generator().manual_seed(1)
    inputs = torch.randn(1024, 16, generator=data)
    targets = (inputs @ torch.randn(16, 1, generator=data)).tanh() + 0.1 * torch.randn(
        1024, 1, generator=data
    )
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    names = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    shuffle = random.Random(1234) if args.seed_shuffle else random  # the bug: never seeded
    batches = torch.Generator().manual_seed(2)

    with Recorder(args.run) as rec:
        for step in range(args.steps):
            idx = torch.randint(0, len(inputs), (256,), generator=batches)
            x, y = inputs[idx], targets[idx]
            rec.dump(step, "batch.x", x)
            rec.dump(step, "batch.y", y)
            optimizer.zero_grad()
            micro = list(range(MICRO_BATCHES))
            shuffle.shuffle(micro)
            total = torch.zeros(())
            for m in micro:
                part = slice(m * 64, (m + 1) * 64)
                loss = torch.nn.functional.mse_loss(model(x[part]), y[part]) / MICRO_BATCHES
                loss.backward()  # adds into .grad: the order of the additions is the shuffle's
                total = total + loss.detach()
            rec.dump(step, "loss", total)
            for name, p in zip(names, params, strict=True):
                rec.dump(step, f"grad.{name}", p.grad)
            optimizer.step()
            for name, p in zip(names, params, strict=True):
                rec.dump(step, f"param.{name}", p)
            rec.dump(step, "param_bf16.fc1.weight", params[0].to(torch.bfloat16))


if __name__ == "__main__":
    main()
