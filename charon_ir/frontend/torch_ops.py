"""Opaque torch ops that keep a model's structure through tracing.

Traced on fake tensors, attention would decompose into bmm + softmax and an MoE
layer would branch on which experts got tokens (a data-dependent loop). Each is
replaced by custom ops with a fake (shape-only) implementation and an autograd
formula, so aot_autograd records one op forward and one backward, which the
converter maps to `sim.attention`, `sim.moe_dispatch`, ... Importing this module
registers the ops (torch.library), HF's attention and experts implementations
named "charon", and so must happen inside frontend functions only.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

IMPLEMENTATION = "charon"
"""Name under which the attention and experts functions are registered in HF."""


class _ServingState(threading.local):
    """What a serving step's attention does with the KV cache: nothing (training),
    write it (prefill), or read the cached context and append (decode)."""

    mode: str = "train"
    context: int = 0


SERVING = _ServingState()


@contextmanager
def serving(mode: str, context: int = 0) -> Iterator[None]:
    old = (SERVING.mode, SERVING.context)
    SERVING.mode, SERVING.context = mode, context
    try:
        yield
    finally:
        SERVING.mode, SERVING.context = old


def _shape_only(name: str) -> Callable[[Callable[..., Any]], Any]:
    """Define the custom op `name` whose implementation is also its fake: it only
    makes outputs of the right shapes (the frontend runs it on fake tensors
    alone), and tracing records it as one node."""

    def define(fn: Callable[..., Any]) -> Any:
        op = torch.library.custom_op(name, mutates_args=())(fn)
        op.register_fake(fn)
        return op

    return define


# ---------------------------------------------------------------------------
# Attention: q [b, sq, hq, d], k/v [b, skv, hkv, d] (GQA kept, never repeated)
# ---------------------------------------------------------------------------


@_shape_only("charon::attention")
def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool, window: int, chunk: int) -> Tensor:
    """`window` > 0: a query sees only the `window` latest keys (itself
    included; HF's `sliding_window`); `chunk` > 0: a query sees the keys of its
    own chunk of `chunk` tokens (Llama 4's `attention_chunk_size`); 0 and 0:
    every key the mask allows."""
    return q.new_empty((*q.shape[:-1], v.shape[-1]))


@_shape_only("charon::attention_backward")
def attention_backward(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, grad_out: Tensor, causal: bool, window: int, chunk: int
) -> tuple[Tensor, Tensor, Tensor]:
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _attention_setup(ctx, inputs, output):
    q, k, v, causal, window, chunk = inputs
    ctx.save_for_backward(q, k, v, output)
    ctx.causal, ctx.window, ctx.chunk = causal, window, chunk


def _attention_grad(ctx, grad_out):
    q, k, v, out = ctx.saved_tensors
    dq, dk, dv = attention_backward(q, k, v, out, grad_out, ctx.causal, ctx.window, ctx.chunk)
    return dq, dk, dv, None, None, None


attention.register_autograd(_attention_grad, setup_context=_attention_setup)


# ---------------------------------------------------------------------------
# Collectives of model code that parallelises itself (Megatron-Core's tensor
# parallelism): one rank's view, `axis` the mesh axis (`tp`) of the group. The
# model code states the backward (its autograd functions call these again, with
# grad mode off); the gather and the scatter also carry each other as their
# autograd formula, for the frontend's own traced code (Megatron-Core's MoE
# layer under tp). On fake tensors they only give the shape.
# ---------------------------------------------------------------------------


@_shape_only("charon::all_reduce")
def all_reduce(x: Tensor, axis: str) -> Tensor:
    """The sum (or max) of `x` over the group, on every rank."""
    return torch.empty_like(x)


def _resized(x: Tensor, dim: int, times: int = 1, over: int = 1) -> list[int]:
    out = list(x.shape)
    out[dim] = out[dim] * times // over
    return out


@_shape_only("charon::all_gather")
def all_gather(x: Tensor, axis: str, dim: int, group_size: int) -> Tensor:
    """The ranks' `x` concatenated along `dim`."""
    return x.new_empty(_resized(x, dim, times=group_size))


@_shape_only("charon::reduce_scatter")
def reduce_scatter(x: Tensor, axis: str, dim: int, group_size: int) -> Tensor:
    """The sum of the ranks' `x`, each rank keeping its 1/group_size along `dim`."""
    return x.new_empty(_resized(x, dim, over=group_size))


def _collective_setup(ctx, inputs, output):
    ctx.axis, ctx.dim, ctx.group_size = inputs[1:]


def _all_gather_grad(ctx, grad):
    return reduce_scatter(grad, ctx.axis, ctx.dim, ctx.group_size), None, None, None


def _reduce_scatter_grad(ctx, grad):
    return all_gather(grad, ctx.axis, ctx.dim, ctx.group_size), None, None, None


all_gather.register_autograd(_all_gather_grad, setup_context=_collective_setup)
reduce_scatter.register_autograd(_reduce_scatter_grad, setup_context=_collective_setup)


# ---------------------------------------------------------------------------
# KV cache of a serving step
# ---------------------------------------------------------------------------


@_shape_only("charon::kv_cache_write")
def kv_cache_write(k: Tensor, v: Tensor) -> None:
    return None


@_shape_only("charon::kv_cache_read")
def kv_cache_read(k_new: Tensor, v_new: Tensor, context: int) -> tuple[Tensor, Tensor]:
    return _cache_shaped(k_new, context), _cache_shaped(v_new, context)


def _cache_shaped(new: Tensor, context: int) -> Tensor:
    b, s, h, d = new.shape
    return new.new_empty((b, context, h, d))


def attend(q: Tensor, k: Tensor, v: Tensor, causal: bool = True, window: int = 0, chunk: int = 0) -> Tensor:
    """Attention on [b, s, heads, d] tensors, through the KV cache when serving."""
    if SERVING.mode in ("prefill", "decode"):
        if SERVING.mode == "decode":
            context = SERVING.context
            if window:
                # a sliding-window layer's cache keeps its window's tokens only
                # (HF's sliding-window cache layers)
                context = min(context, window)
            elif chunk:
                # the new token (position context - 1) reads its own chunk's keys
                context = (context - 1) % chunk + 1
            k_all, v_all = kv_cache_read(k, v, context)
        else:
            k_all, v_all = k, v
        kv_cache_write(k, v)
        k, v = k_all, v_all
    return attention(q, k, v, causal, window, chunk)


def hf_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """HF AttentionInterface entry: query [b, hq, s, d], key/value [b, hkv, s, d];
    returns ([b, s, hq, dv], None) like HF's own implementations. The mask is
    ignored: every supported model is causal and we never pack sequences; a
    sliding-window layer says its window (`sliding_window`, as HF's own kernels
    are told it); a chunked one (Llama 4) is told by its mask only, so its chunk
    is read from the layer's kind in the config."""
    window = kwargs.get("sliding_window") or 0
    out = attend(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), True, int(window),
                 _chunk_of(module))
    return out, None


def _chunk_of(module) -> int:
    """The attention chunk of an HF attention module: its config's
    `attention_chunk_size` where its layer is a "chunked_attention" one."""
    config = getattr(module, "config", None)
    types = getattr(config, "layer_types", None)
    index = getattr(module, "layer_idx", None)
    if not types or not isinstance(index, int) or index >= len(types) or types[index] != "chunked_attention":
        return 0
    return int(getattr(config, "attention_chunk_size", None) or 0)


def sdpa_replacement(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Stand-in for F.scaled_dot_product_attention while tracing a user's module."""
    if attn_mask is not None:
        return _ORIGINAL_SDPA(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    return attend(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), is_causal).transpose(1, 2)


_ORIGINAL_SDPA = F.scaled_dot_product_attention


# ---------------------------------------------------------------------------
# Mixture of experts: dispatch tokens to per-expert buffers, combine them back
# ---------------------------------------------------------------------------


def expert_capacity(tokens: int, top_k: int, experts: int) -> int:
    """Tokens per expert under balanced routing (rounded up)."""
    return max(1, math.ceil(tokens * top_k / experts))


@_shape_only("charon::moe_dispatch")
def moe_dispatch(x: Tensor, indices: Tensor, experts: int) -> Tensor:
    return x.new_empty((experts, expert_capacity(x.shape[0], indices.shape[1], experts), x.shape[1]))


@_shape_only("charon::moe_dispatch_backward")
def moe_dispatch_backward(grad: Tensor, indices: Tensor) -> Tensor:
    return grad.new_empty((indices.shape[0], grad.shape[2]))


@_shape_only("charon::moe_combine")
def moe_combine(expert_out: Tensor, indices: Tensor, weights: Tensor) -> Tensor:
    return expert_out.new_empty((indices.shape[0], expert_out.shape[2]))


@_shape_only("charon::moe_combine_backward")
def moe_combine_backward(
    grad: Tensor, expert_out: Tensor, indices: Tensor, weights: Tensor
) -> tuple[Tensor, Tensor]:
    return torch.empty_like(expert_out), torch.empty_like(weights)


def _dispatch_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])


def _dispatch_grad(ctx, grad):
    (indices,) = ctx.saved_tensors
    return moe_dispatch_backward(grad, indices), None, None


def _combine_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _combine_grad(ctx, grad):
    expert_out, indices, weights = ctx.saved_tensors
    grad_out, grad_weights = moe_combine_backward(grad, expert_out, indices, weights)
    return grad_out, None, grad_weights


moe_dispatch.register_autograd(_dispatch_grad, setup_context=_dispatch_setup)
moe_combine.register_autograd(_combine_grad, setup_context=_combine_setup)


def hf_experts(self, hidden_states: Tensor, top_k_index: Tensor, top_k_weights: Tensor) -> Tensor:
    """HF ExpertsInterface entry for experts stored as stacked 3-D weights
    (gate_up_proj [E, 2I, h], down_proj [E, h, I]; [E, h, 2I] and [E, I, h] when
    `is_transposed`, as GPT-OSS; up_proj for ungated experts; [E, out] biases when
    `has_bias`): every expert runs one batched matmul on its balanced share of the
    tokens."""
    gated = getattr(self, "has_gate", True)
    transposed = getattr(self, "is_transposed", False)
    biased = getattr(self, "has_bias", False)
    first = self.gate_up_proj if gated else self.up_proj
    x = moe_dispatch(hidden_states, top_k_index, first.shape[0])
    h = _expert_linear(x, first, getattr(self, "gate_up_proj_bias" if gated else "up_proj_bias", None) if biased else None, transposed)
    h = self._apply_gate(h) if gated else self.act_fn(h)
    out = _expert_linear(h, self.down_proj, self.down_proj_bias if biased else None, transposed)
    if getattr(self, "has_post_expert_norm", False):
        out = self.post_expert_norm(out)
    return moe_combine(out, top_k_index, top_k_weights.to(out.dtype))


def llama4_moe(self, hidden_states: Tensor) -> tuple[Tensor, Tensor]:
    """Llama4TextMoe's forward as the model runs, not as HF computes it (HF sends
    every token through every expert, the unpicked ones scaled by a zero score):
    the router's top-k with sigmoid scores, each expert on its balanced share of
    the tokens (gate_up_proj [E, h, 2I], down_proj [E, I, h]), and the shared
    expert on every token. HF scales an expert's input by its score, we its
    output: the same elementwise work."""
    x = hidden_states.reshape(-1, self.hidden_dim)
    logits = F.linear(x, self.router.weight)
    top_values, top_index = torch.topk(logits, self.top_k, dim=1)
    scores = torch.sigmoid(top_values.float()).to(x.dtype)
    experts = self.experts
    routed = moe_dispatch(x, top_index, experts.gate_up_proj.shape[0])
    gate, up = torch.bmm(routed, experts.gate_up_proj).chunk(2, dim=-1)
    routed = torch.bmm(up * experts.act_fn(gate), experts.down_proj)
    return self.shared_expert(x) + moe_combine(routed, top_index, scores), logits


def _expert_linear(x: Tensor, weight: Tensor, bias: Tensor | None, transposed: bool) -> Tensor:
    """x [E, C, in] through each expert's weight ([E, out, in], or [E, in, out]
    when transposed) and bias [E, out]."""
    out = torch.bmm(x, weight if transposed else weight.transpose(1, 2))
    return out if bias is None else out + bias.unsqueeze(1)


def register_hf_implementations() -> None:
    """Make "charon" a valid attn_implementation and experts_implementation."""
    from transformers import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, hf_attention)
    try:
        from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS
    except ImportError:  # a transformers without the experts interface
        return
    ALL_EXPERTS_FUNCTIONS.register(IMPLEMENTATION, hf_experts)
