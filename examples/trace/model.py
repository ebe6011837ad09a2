"""The model of ``examples/trace``: a block of an MLP, an attention layer and a
mixture of experts, small enough to train on a CPU in milliseconds a step.

The mixture of experts sends each token to its top 2 of 4 experts and adds
their weighted outputs into the token's residual with one scatter-add
(``example::scatter_add``, a custom op: one kernel, as a GPU's atomics
kernel is). Float addition is not associative: the order in which the adds
land on a row decides its last bits. With ``unordered`` set (``MoE.unordered``),
the kernel adds in an order drawn from the operating system's randomness,
never seeded, as a GPU's atomics land in whatever order the threads reach
them: two runs then differ in the last bits of some rows, from the first
step where it is set. Unset, the adds land in index order: two runs are
bit-identical.
"""

from __future__ import annotations

import random

import torch
from torch import nn

_OS_RANDOM = random.SystemRandom()  # never seeded: the nondeterminism of the example


@torch.library.custom_op("example::scatter_add", mutates_args=())
def scatter_add(
    base: torch.Tensor, index: torch.Tensor, src: torch.Tensor, unordered: bool
) -> torch.Tensor:
    """``base`` with row ``index[i]`` of it plus ``src[i]``, for every i: in
    index order, or (``unordered``) in an order nobody seeded."""
    out = base.clone()
    if unordered:
        order = list(range(len(index)))
        _OS_RANDOM.shuffle(order)
        perm = torch.tensor(order, dtype=torch.long)
        index, src = index[perm], src[perm]
    return out.index_add_(0, index, src)


@scatter_add.register_fake
def _(base: torch.Tensor, index: torch.Tensor, src: torch.Tensor, unordered: bool) -> torch.Tensor:
    return torch.empty_like(base)


def _backward(ctx: object, grad: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor, None]:
    index = ctx.index  # type: ignore[attr-defined]
    return grad, None, grad.index_select(0, index), None


def _setup(ctx: object, inputs: tuple[object, ...], output: object) -> None:
    ctx.index = inputs[1]  # type: ignore[attr-defined]


scatter_add.register_autograd(_backward, setup_context=_setup)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        y = att.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class MoE(nn.Module):
    """Top-2 of ``n_experts`` MLPs, combined into the residual by ``scatter_add``."""

    def __init__(self, dim: int, n_experts: int = 4) -> None:
        super().__init__()
        self.router = nn.Linear(dim, n_experts)
        self.experts = nn.ModuleList(MLP(dim) for _ in range(n_experts))
        self.unordered = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        flat = x.reshape(b * t, d)
        weights, chosen = self.router(flat).softmax(-1).topk(2, dim=-1)
        index, parts = [], []
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if len(token):
                index.append(token)
                parts.append(expert(flat[token]) * weights[token, slot, None])
        out = scatter_add(flat, torch.cat(index), torch.cat(parts), self.unordered)
        return out.reshape(b, t, d)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)
        self.moe = MoE(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return self.moe(x)


class Model(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.head(x)
