"""A design space: fixed settings plus axes, expanded into normalised points.

A space file (YAML) or dict names the run kind, fixed settings as scalars and
axes as lists; every combination of the axes is one point:

    kind: training            # or serving
    model: llama-3.1-70b
    gpus: 1024
    seq_len: 4096
    global_batch: 1024
    tp: [1, 2, 4, 8]          # an axis
    recompute: [none, selective, full]
    hardware: [H100-SXM5-80GB]
    nic_speed: [400Gb/s, 800Gb/s]     # hardware axes synthesise a cluster
    scale_up_domain: [8, 72]
    topology: [fat_tree, fullflat]

Keys may use `-` or `_`. A point is a plain dict of JSON scalars, every setting
of its kind; its key is a hash of its canonical JSON (less the `LATER_SETTINGS`
left at their defaults), so the same configuration has the same key in every
sweep and a results file can be resumed or shared between spaces.

Training points also carry the kernel, overlap and optimizer settings of
`charon simulate` (`fuse_attention`, `attention_kernel`, `tp_comm_overlap`,
`pipeline_scatter_gather`, `dp_bucket_mb`, `dp_overlap`,
`dp_overlap_param_gather`, `optimizer`, `unfused_grad_accumulation`) and
memory-analysis' `memory_limit_gb`, so e.g. `tp_comm_overlap: [false, true]` or
`dp_bucket_mb: [25, 100]` is an axis; and how context parallelism runs attention
(`cp_comm_type: [p2p, a2a, a2a+p2p]`, `hierarchical_cp: [2, 4]`, counted only where
cp > 1 and, for the inner group, under a2a+p2p).

A value wrong whatever the other settings are (an unknown model, GPU,
recompute policy, schedule, optimizer or attention kernel, a cluster file that
does not parse) is an input error, raised before anything runs (`check_value`).
Illegal combinations are found here too, before anything is imported or run: a
point whose parallel degrees cannot tile the GPUs, divide the model, or
schedule the batch, or that combines settings `charon simulate` rejects
(tp_comm_overlap without sequence parallelism), is returned as pruned with the
rule it breaks.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from charon_ir.api import CP_COMM_TYPES, OPTIMIZERS
from charon_ir.engines.analytic import FP8_RECIPES
from charon_ir.engines.base import ENGINES
from charon_ir.engines.compute_efficiency import ATTENTION_KERNELS, kernel_refusal
from charon_ir.errors import MAX_NESTING, CharonError, nesting_depth, read_text
from charon_ir.frameworks import FRAMEWORKS, resolve
from charon_ir.frontend.configs import MEGATRON_PREFIX, expert_count, load_config, load_megatron_config
from charon_ir.parallel.schedules import SCHEDULES, check_schedule
from charon_ir.passes.recompute import POLICIES as RECOMPUTE_POLICIES, POLICY_CHOICES
from charon_ir.serving.latency import PRECISIONS
from charon_ir.serving.scheduler import POLICIES
from charon_ir.sweep.hardware import TOPOLOGIES, nic_bandwidth, rate, size
from charon_ir.target.cluster import load_cluster
from charon_ir.target.hardware import load_gpu, resolve_gpu_name

TRAINING_DEFAULTS: dict[str, Any] = {
    "model": "",
    "hardware": "H100-SXM5-80GB",
    "gpus": 8,
    "gpus_per_node": 0,
    "cluster": "",
    "tp": 1,
    "pp": 1,
    "dp": 0,
    "cp": 1,
    "cp_comm_type": "p2p",
    "hierarchical_cp": 0,
    "ep": 1,
    "vpp": 1,
    "sequence_parallel": False,
    "zero": 0,
    "fsdp": False,
    "seq_len": 2048,
    "global_batch": 0,
    "micro_batch": 1,
    "recompute": "none",
    "precision": "bf16",
    "schedule": "",
    "fuse": True,
    "engines": "analytic",
    "fuse_attention": True,
    "attention_kernel": "",
    "tp_comm_overlap": False,
    "pipeline_scatter_gather": False,
    "dp_bucket_mb": 25,
    "dp_overlap": True,
    "dp_overlap_param_gather": False,
    "optimizer": "fused",
    "unfused_grad_accumulation": False,
    "memory_limit_gb": 0.0,
    "fp8_recipe": "delayed",
    "grad_bytes": 2,
    "fp8_params": False,
    "blocking_comm": "",
    "host_launch_s": 0.0,
    "etp": 0,
    "fused_cross_entropy": False,
    "fuse_backward": False,
    "fp8_weight_cache": False,
    "zero3_live_params": 0,
    "zero3_keep_gathered": False,
    "keep_stage_outputs": False,
    "fp32_param_shards": False,
    "expert_launches": 0.0,
    "moe_host_sync": False,
    "moe_a2a_overlap": True,
    "pp_send_overlap": True,
    "cpu_offload_layers": 0,
    "framework": "megatron-core",
}
"""Every training setting a point carries, with `charon_ir.api.TrainingConfig`'s
defaults (`engines` is its comma-separated string), and the framework whose
preset fills the settings the space leaves unset (`charon simulate`'s default:
`charon_ir.frameworks.DEFAULT_FRAMEWORK`)."""

LATER_SETTINGS = (
    "fuse_attention",
    "attention_kernel",
    "tp_comm_overlap",
    "pipeline_scatter_gather",
    "dp_bucket_mb",
    "dp_overlap",
    "dp_overlap_param_gather",
    "optimizer",
    "memory_limit_gb",
    "unfused_grad_accumulation",
    "fp8_recipe",
    "grad_bytes",
    "fp8_params",
    "blocking_comm",
    "etp",
    "fused_cross_entropy",
    "fuse_backward",
    "host_launch_s",
    "fp8_weight_cache",
    "zero3_live_params",
    "zero3_keep_gathered",
    "keep_stage_outputs",
    "fp32_param_shards",
    "expert_launches",
    "moe_host_sync",
    "moe_a2a_overlap",
    "cp_comm_type",
    "hierarchical_cp",
    "pp_send_overlap",
    "cpu_offload_layers",
)
"""Training settings a point gained after results files were first written:
`config_key` hashes one only when it differs from its default, so a point that
leaves them alone keeps the key it had before they existed and those files
still resume. A setting added from now on belongs here too."""


SERVING_DEFAULTS: dict[str, Any] = {
    "model": "",
    "hardware": "H100-SXM5-80GB",
    "gpus_per_node": 0,
    "cluster": "",
    "tp": 1,
    "pp": 1,
    "ep": 1,
    "batch": 0,
    "rate": 0.0,
    "num_requests": 0,
    "max_num_seqs": 0,
    "replicas": 1,
    "prefill_decode_split": "",
    "input_len": 1024,
    "output_len": 256,
    "precision": "bf16",
    "policy": "",
}
"""Every serving setting a point carries (`charon serve`'s; the request source
is a static `batch` or Poisson `rate` x `num_requests`, whose batch size under
continuous batching is capped by `max_num_seqs`). `prefill_decode_split`
is "" for replicas serving both phases or "P:D", P prefill and D decode
replicas (disaggregated; `replicas` is then ignored)."""

HARDWARE_AXES: dict[str, Any] = {
    "nic_speed": "",
    "scale_up_domain": 0,
    "topology": "",
    "oversubscription": 1.0,
    "peak_flops_scale": 0.0,
    "hbm_bw": "",
    "hbm_capacity": "",
    "scale_up_bw": "",
    "scale_out_bw": "",
}
"""GPU and cluster settings: the GPU axes (peak_flops_scale, hbm_bw, hbm_capacity)
derive a GPU variant, the others synthesise a cluster around the GPU
(`charon_ir.sweep.hardware`); the defaults mean "the GPU file's own"."""
LATER_HARDWARE_AXES = ("peak_flops_scale", "hbm_bw", "hbm_capacity", "scale_up_bw", "scale_out_bw")
"""Hardware axes added after results files were first written: keyed only when set
(as `LATER_SETTINGS`)."""

SPACE_SETTINGS = ("kind", "name", "objective", "gpu_hour_cost", "top")
"""Keys of a space file that describe the sweep rather than a point."""

DEFAULT_GPU_HOUR_COST = {
    "A100": 1.8,
    "H100": 3.0,
    "H200": 3.7,
    "H800": 3.0,
    "H20": 1.6,
    "B200": 5.0,
    "GB200": 6.0,
    "MI300X": 2.8,
}
"""Rough on-demand cloud dollars per GPU hour by GPU family, used for the cost
axis of the Pareto frontier unless the space gives `gpu_hour_cost`."""


@dataclass(frozen=True)
class Point:
    """One configuration of a space: its settings, key, and why it was pruned
    ("" when it is legal)."""

    config: dict[str, Any]
    key: str
    pruned: str = ""


@dataclass
class Space:
    """A parsed space: what kind of run, the fixed settings and the axes."""

    kind: str
    fixed: dict[str, Any]
    axes: dict[str, list[Any]]
    name: str = "sweep"
    gpu_hour_cost: dict[str, float] = field(default_factory=dict)
    top: int = 10
    where: str = ""
    """The file it was read from ("" for none): errors in its values name it."""
    flag_keys: frozenset[str] = frozenset()
    """Settings given on the command line over the file's (their errors name no file)."""

    @property
    def size(self) -> int:
        n = 1
        for values in self.axes.values():
            n *= len(values)
        return n

    def points(self) -> list[Point]:
        """Every distinct normalised point, in expansion order, with the illegal
        ones marked (not dropped: the sweep reports them)."""
        return list(self.iter_points())

    def iter_points(self) -> Iterator[Point]:
        """The points of `points()`, one at a time (a 10^6-point space takes
        minutes to enumerate: `--limit` takes the first ones as they come). The
        values are checked before the first point is yielded."""
        defaults = point_defaults(self.kind)
        names = list(self.axes)
        seen: set[str] = set()
        model_info: dict[str, ModelShape | None] = {}
        for key, values in [*((k, [v]) for k, v in self.fixed.items()), *self.axes.items()]:
            for value in values:
                try:
                    check_value(self.kind, key, _typed(key, value, defaults[key]), model_info)
                except CharonError as e:
                    in_file = self.where and key not in self.flag_keys
                    raise CharonError(f"{self.where}: {e}" if in_file else str(e)) from None
        for values in itertools.product(*(self.axes[n] for n in names)):
            config = {**defaults, **self.fixed, **dict(zip(names, values))}
            if self.kind == "training":
                config = with_framework(config, {*self.fixed, *names})
            config = normalise(self.kind, config)
            key = config_key(config)
            if key in seen:
                continue
            seen.add(key)
            model = config["model"]
            if model not in model_info:
                model_info[model] = ModelShape.of(model)
            rule = (illegal_training if self.kind == "training" else illegal_serving)(
                config, model_info[model]
            )
            yield Point(config, key, rule)


def with_framework(config: dict[str, Any], given: set[str]) -> dict[str, Any]:
    """A training point's settings under its framework's preset: the space's
    own settings (`given`) win, the preset fills what it decides of the rest."""
    defaults = point_defaults("training")
    typed = {key: _typed(key, config[key], defaults[key]) for key in config}
    resolved, _ = resolve(typed["framework"], {k: typed[k] for k in given if k in typed}, typed)
    # a point's settings are scalars: the blocking axes as "tp,pp"
    if isinstance(resolved.get("blocking_comm"), tuple):
        resolved["blocking_comm"] = ",".join(resolved["blocking_comm"])
    return resolved


def point_defaults(kind: str) -> dict[str, Any]:
    """Every setting a point of a `kind` ("training" or "serving") space has,
    at its default: what a space leaves out."""
    base = TRAINING_DEFAULTS if kind == "training" else SERVING_DEFAULTS
    return {**base, **HARDWARE_AXES}


def _canonical_name(key: str) -> str:
    return key.strip().replace("-", "_")


def load_space(source: str | Path | dict[str, Any], where: str = "space",
               flag_keys: frozenset[str] = frozenset()) -> Space:
    """A space from a YAML file or a dict; bad keys are one-line errors (naming
    the file, or `where` for a dict: the file it was read from, `flag_keys`
    the settings the command line gave over it)."""
    if isinstance(source, dict):
        raw = source
        file = "" if where == "space" else where
    else:
        where = file = str(source)
        raw = read_space_file(source)
    raw = {_canonical_name(str(k)): v for k, v in raw.items()}
    kind = raw.pop("kind", "training")
    if kind not in ("training", "serving"):
        raise CharonError(f"{where}: 'kind' must be training or serving, got '{kind}'")
    name = raw.pop("name", Path(where).stem if not isinstance(source, dict) else "sweep")
    if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name).strip():
        raise CharonError(f"{where}: 'name' must be a non-empty string (the results go to "
                          f"./<name>.sqlite), got {name!r}")
    name = str(name)
    costs = raw.pop("gpu_hour_cost", None) or {}
    if not isinstance(costs, dict):
        raise CharonError(f"{where}: 'gpu_hour_cost' must map GPU names to dollars per hour, got {costs!r}")
    try:
        costs = {str(k): float(v) for k, v in costs.items()}
    except (TypeError, ValueError):
        raise CharonError(f"{where}: 'gpu_hour_cost' must map GPU names to dollars per hour, "
                          f"got {costs!r}") from None
    top = raw.pop("top", 10)
    try:
        if isinstance(top, (bool, float)):
            raise ValueError
        top = int(top)
        if top < 1:
            raise ValueError
    except (TypeError, ValueError):
        raise CharonError(f"{where}: 'top' must be an integer >= 1 (rows of the ranked table), got {top!r}") from None
    raw.pop("objective", None)
    defaults = point_defaults(kind)
    fixed: dict[str, Any] = {}
    axes: dict[str, list[Any]] = {}
    for key, value in raw.items():
        if key not in defaults:
            known = ", ".join(sorted(defaults))
            raise CharonError(f"{where}: unknown setting '{key}' for a {kind} sweep (known: {known})")
        if isinstance(value, list):
            if not value:
                raise CharonError(f"{where}: axis '{key}' has no values")
            axes[key] = list(dict.fromkeys(_scalar(where, key, v) for v in value))
        else:
            fixed[key] = _scalar(where, key, value)
    if not (fixed.get("model") or axes.get("model")):
        raise CharonError(f"{where}: 'model' is required")
    return Space(kind, fixed, axes, name, costs, top, file,
                 frozenset(_canonical_name(k) for k in flag_keys))


def read_space_file(path: str | Path) -> dict[str, Any]:
    """The mapping of a space file; a file that cannot be read, is not UTF-8
    text, is not YAML or not a mapping is a one-line error naming it."""
    text = read_text(path, f"space file '{path}'")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        # aliases repeat a node by reference: 400 bytes of nested aliases expand to
        # 10^8 values (a "billion laughs"), so the expanded size is counted first
        size = _expanded_size(node)
        if size > MAX_SPACE_VALUES:
            raise CharonError(f"{path}: the space file expands to more than {MAX_SPACE_VALUES:,} values "
                              f"(aliases repeating aliases); a space file holds at most that")
        raw = (loader.construct_document(node) if node is not None else None) or {}  # empty: flags only
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise CharonError(f"{path}{at}: not valid YAML ({getattr(e, 'problem', e)})") from None
    except RecursionError:
        raise CharonError(f"{path}: not valid YAML (nested more than {MAX_NESTING} deep)") from None
    finally:
        loader.dispose()
    if nesting_depth(raw) > MAX_NESTING:
        raise CharonError(f"{path}: not valid YAML (nested more than {MAX_NESTING} deep)")
    if not isinstance(raw, dict):
        raise CharonError(f"{path}: a space file is a mapping of settings and axes")
    return raw


MAX_SPACE_VALUES = 100_000
"""The most values (scalars, lists and mappings, aliases counted as expanded) a
space file holds: the examples hold under 100."""


def _expanded_size(root: Any) -> int:
    """Nodes of the YAML tree under `root` with every alias expanded, counted over
    the node graph (an alias is the node it names) without expanding it: stops
    past MAX_SPACE_VALUES."""
    sizes: dict[int, int] = {}
    entered: set[int] = set()  # a recursive anchor (`&a [*a]`) is counted once
    stack = [(root, False)] if root is not None else []
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes or (not children_done and id(node) in entered):
            continue
        entered.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        if not children_done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        sizes[id(node)] = min(1 + sum(sizes.get(id(c), 1) for c in children), MAX_SPACE_VALUES + 1)
    return sizes.get(id(root), 0)


def _scalar(where: str, key: str, value: Any) -> Any:
    if isinstance(value, (dict, list)) or value is None:
        raise CharonError(f"{where}: '{key}' must be a value or a list of values, got {value!r}")
    return value


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _typed(key: str, value: Any, default: Any) -> Any:
    """`value` as the type of its setting's default; a value of another kind is a
    one-line error naming the setting."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise CharonError(f"'{key}' must be true or false, got {value!r}")
    if isinstance(default, (int, float)):
        number, what = (int, "an integer") if isinstance(default, int) else (float, "a number")
        if isinstance(value, bool) or number is int and isinstance(value, float) and not value.is_integer():
            # int(1.5) would be 1: a sweep of other points than the ones asked for
            raise CharonError(f"'{key}' must be {what}, got {value!r}")
        try:
            typed = number(value)
        except (TypeError, ValueError, OverflowError):
            raise CharonError(f"'{key}' must be {what}, got {value!r}") from None
        # counts, sizes and rates: none is negative (0 is each one's "unset" or "auto")
        if not typed >= 0 or typed == float("inf"):
            raise CharonError(f"'{key}' must be {what} >= 0, got {value!r}")
        return typed
    return str(value) if value is not None else ""


SERVING_UNUSED = ("cluster", "gpus_per_node", *(k for k in HARDWARE_AXES
                                                if k not in ("peak_flops_scale", "hbm_bw", "hbm_capacity")))
"""Settings a serving point carries but `charon serve` has no flag for (it
models one GPU type's implicit cluster): any other value than the default is
refused, not ignored."""


def _one_of(choices: tuple[Any, ...]) -> str:
    shown = [str(c) for c in choices if c != ""] + (["empty"] if "" in choices else [])
    return ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]


def _choices(kind: str) -> dict[str, tuple[Any, ...]]:
    """The settings whose values are names from a fixed list, and the list."""
    if kind == "serving":
        return {"precision": PRECISIONS, "policy": ("", *POLICIES)}
    return {
        "recompute": RECOMPUTE_POLICIES,
        "zero": (0, 1, 2, 3),
        "precision": ("bf16", "fp8"),
        "schedule": ("", *SCHEDULES),
        "optimizer": OPTIMIZERS,
        "attention_kernel": ("", *ATTENTION_KERNELS),
        "topology": ("", *TOPOLOGIES),
        "framework": tuple(FRAMEWORKS),
        "fp8_recipe": FP8_RECIPES,
        "grad_bytes": (2, 4),
        "cp_comm_type": CP_COMM_TYPES,
    }


def check_value(kind: str, key: str, value: Any, shapes: dict[str, ModelShape | None]) -> None:
    """Raise on a (typed) value that is wrong whatever the other settings are: an
    unknown model, GPU, cluster, engine or other name, a file that does not
    parse. Such a value is a typo to report before the sweep runs, not a point
    to prune (a pruned point is a legal value in a combination that cannot run).
    Counts keep their pruning rules. `shapes` caches the models' shapes."""
    choices = _choices(kind).get(key)
    if choices is not None:
        if value not in choices:
            raise CharonError(f"'{key}' must be {_one_of(choices)}, got {value!r}")
        return
    if kind == "serving" and key in SERVING_UNUSED:
        if value != point_defaults(kind)[key]:
            raise CharonError(f"'{key}' is not a setting of `charon serve` (it models the implicit "
                              f"cluster of one GPU type, 'hardware'), got {value!r}")
        return
    try:
        if key == "model" and value not in shapes:
            shapes[value] = ModelShape.of(value)
        elif key == "hardware" and value:
            resolve_gpu_name(value)
        elif key == "cluster" and value:
            load_cluster(value)
    except CharonError as e:
        raise CharonError(f"'{key}': {e}") from None
    if key == "engines":
        if not all(e.strip() in ENGINES for e in str(value).split(",")):
            raise CharonError(f"'engines' must be a comma-separated list of {_one_of(tuple(ENGINES))}, "
                              f"got {value!r}")
    elif key == "nic_speed" and value:
        nic_bandwidth(value)  # its error names the setting
    elif key in ("hbm_bw", "scale_up_bw", "scale_out_bw") and value:
        rate(key, value)
    elif key == "hbm_capacity" and value:
        size(key, value)
    elif key == "prefill_decode_split" and value:
        counts = value.split(":")
        if len(counts) != 2 or not all(c.strip().isascii() and c.strip().isdigit() and int(c) >= 1
                                       for c in counts):
            raise CharonError(f"'prefill_decode_split' must be 'P:D', counts >= 1 of prefill and decode "
                              f"replicas, or empty, got {value!r}")


def normalise(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """The canonical form of a point: typed values, derived dp, and settings that
    cannot matter reset to their default so equivalent points share one key."""
    out = dict(config)
    defaults = point_defaults(kind)
    for key, default in defaults.items():
        out[key] = _typed(key, out.get(key, default), default)
    if kind == "training":
        if out["tp"] == 1:
            out["sequence_parallel"] = False  # SP shards along TP: nothing to shard
        if out["tp"] == 1 or out["pp"] == 1:
            # nothing crosses stages, or no tp ranks hold it whole to send slices of
            out["pipeline_scatter_gather"] = False
        if not out["fuse"]:
            out["fuse_attention"] = defaults["fuse_attention"]  # the fuse pass does not run
        if not (out["fuse"] and out["fuse_attention"]):
            out["attention_kernel"] = ""  # no flash attention to price as a kernel
        if out["fsdp"]:
            out["zero"], out["fsdp"] = 3, False  # FSDP is ZeRO-3, one spelling
        if out["cp"] == 1:
            out["cp_comm_type"] = defaults["cp_comm_type"]  # no context-parallel attention
        if out["cp_comm_type"] != "a2a+p2p":
            out["hierarchical_cp"] = defaults["hierarchical_cp"]  # only a2a+p2p has an inner group
        model_parallel = out["tp"] * out["pp"] * out["cp"]
        if not out["dp"] and model_parallel and out["gpus"] % model_parallel == 0:
            out["dp"] = out["gpus"] // model_parallel
        if out["dp"] == 1:
            # one replica has no gradients to bucket or overlap, no parameters to gather
            for key in ("dp_bucket_mb", "dp_overlap", "dp_overlap_param_gather"):
                out[key] = defaults[key]
    elif out["prefill_decode_split"]:
        out["replicas"] = 1  # disaggregated: the split says how many of each
    return {key: out[key] for key in sorted(out)}


def config_key(config: dict[str, Any]) -> str:
    """A stable identity of a normalised point: the hash of its canonical JSON,
    without the `LATER_SETTINGS` that are at their defaults."""
    # the framework is not a setting of the run: the ones its preset decided are
    keyed = {k: v for k, v in config.items()
             if k != "framework" and (k not in LATER_SETTINGS or v != TRAINING_DEFAULTS[k])
             and (k not in LATER_HARDWARE_AXES or v != HARDWARE_AXES[k])}
    text = json.dumps(keyed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------
# Pruning rules
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """The few model dimensions the pruning rules need, read from the bundled
    or given config.json without importing the model."""

    layers: int
    heads: int
    kv_heads: int
    experts: int
    params: int
    """Total parameters (the bundled config's `_derived.total_params`), 0 unknown."""
    context: int = 0
    """Tokens of context (`max_position_embeddings`), 0 unknown."""
    megatron: bool = False
    """Megatron-Core's model code (`megatron:CONFIG`), built at the point's tp."""

    @staticmethod
    def of(model: str) -> ModelShape | None:
        if model.endswith(".mlir"):
            return None  # a hand-written step: the passes check it
        if model.startswith(MEGATRON_PREFIX):
            return ModelShape.of_megatron(model)
        _, config = load_config(model)

        def first(*names: str, default: int = 0) -> int:
            for name in names:
                if config.get(name) is not None:
                    return int(config[name])
            return default

        heads = first("num_attention_heads", "n_head")
        return ModelShape(
            layers=first("num_hidden_layers", "n_layer"),
            heads=heads,
            kv_heads=first("num_key_value_heads", default=heads),
            experts=expert_count(config),
            params=int((config.get("_derived") or {}).get("total_params") or 0),
            context=first("max_position_embeddings"),
        )


    @staticmethod
    def of_megatron(model: str) -> ModelShape:
        """The shape of a `megatron:CONFIG` model, in Megatron-Core's names."""
        _, config = load_megatron_config(model)

        def count(name: str, default: int = 0) -> int:
            value = config.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else default

        heads = count("num_attention_heads")
        return ModelShape(layers=count("num_layers"), heads=heads, kv_heads=count("num_query_groups", heads),
                          experts=count("num_moe_experts"), params=0,
                          context=count("max_sequence_length"), megatron=True)


def illegal_training(config: dict[str, Any], shape: ModelShape | None) -> str:
    """The first rule a training point breaks, or "" when it may run."""
    tp, pp, cp, ep, vpp = (config[k] for k in ("tp", "pp", "cp", "ep", "vpp"))
    gpus, mb = config["gpus"], config["micro_batch"]
    if min(tp, pp, cp, ep, vpp, gpus, mb) < 1:
        return "parallel degrees, gpus and micro-batch must be >= 1"
    if config["zero"] not in (0, 1, 2, 3):
        return f"zero must be 0..3, got {config['zero']}"
    if config["recompute"] not in RECOMPUTE_POLICIES:
        return f"recompute must be {POLICY_CHOICES}, got '{config['recompute']}'"
    if config["optimizer"] not in OPTIMIZERS:
        return f"optimizer must be {', '.join(OPTIMIZERS)}, got '{config['optimizer']}'"
    if config["attention_kernel"] and config["attention_kernel"] not in ATTENTION_KERNELS:
        return (f"attention_kernel must be {', '.join(ATTENTION_KERNELS)} or empty, "
                f"got '{config['attention_kernel']}'")
    if config["attention_kernel"] and config["hardware"]:
        if refusal := kernel_refusal(load_gpu(config["hardware"]), config["attention_kernel"]):
            return refusal
    if config["dp_bucket_mb"] < 1:
        return f"dp_bucket_mb must be >= 1, got {config['dp_bucket_mb']}"
    if config["dp_overlap_param_gather"] and config["zero"] not in (1, 2):
        return "dp_overlap_param_gather needs zero 1 or 2 (only they gather updated parameters)"
    if config["tp_comm_overlap"] and not config["sequence_parallel"]:
        return "tp_comm_overlap needs tp > 1 and sequence_parallel (as Megatron-Core's)"
    model_parallel = tp * pp * cp
    dp = config["dp"]
    if not dp or dp * model_parallel != gpus:
        return f"gpus {gpus} != tp x pp x cp x dp = {tp} x {pp} x {cp} x {dp or '?'}"
    if vpp > 1 and pp == 1:
        return f"vpp {vpp} needs pp > 1 (an interleaved schedule of one stage)"
    if ep > 1 and dp % ep:
        return f"ep {ep} does not divide dp {dp} (experts are spread over data-parallel ranks)"
    global_batch = config["global_batch"] or dp * mb
    if global_batch % (dp * mb):
        return f"global batch {global_batch} not divisible by dp x micro-batch = {dp * mb}"
    if config["seq_len"] % (2 * cp) and cp > 1:
        return f"seq_len {config['seq_len']} not divisible by 2 x cp = {2 * cp}"
    inner = config["hierarchical_cp"]
    if config["cp_comm_type"] == "a2a+p2p" and (not 1 < inner < cp or cp % inner):
        return (f"hierarchical_cp {inner} must divide cp {cp} and lie strictly between 1 and it "
                "(cp_comm_type a2a+p2p)")
    schedule = config["schedule"] or ("interleaved" if vpp > 1 else "1f1b")
    try:
        check_schedule(schedule, pp, vpp, global_batch // (dp * mb))
    except CharonError as e:
        return str(e)
    if shape is None:
        return ""
    if shape.heads % tp or shape.kv_heads % tp and tp % shape.kv_heads:
        return f"tp {tp} does not divide {shape.heads} heads / {shape.kv_heads} KV heads"
    if shape.megatron and tp > 1 and shape.kv_heads % tp:
        return f"tp {tp} does not divide Megatron-Core's {shape.kv_heads} query groups"
    if shape.megatron and tp > 1 and shape.experts and not config["sequence_parallel"]:
        return f"tp {tp}: a megatron: MoE model under tp needs sequence_parallel (as Megatron-Core's)"
    if shape.megatron and tp > 1 and ep > 1:
        return f"ep {ep} with tp {tp}: not on a megatron: model (its tp collectives beside the all-to-alls)"
    if pp * vpp > shape.layers:
        return f"pp x vpp = {pp * vpp} exceeds {shape.layers} layers"
    if cp > 1 and config["cp_comm_type"] != "p2p":
        # the heads a rank holds after tensor parallelism (a kv head shared by several)
        heads, kv_heads = shape.heads // tp, max(shape.kv_heads // tp, 1)
        group = cp if config["cp_comm_type"] == "a2a" else inner
        # Transformer Engine's all-to-alls split the kv heads as the queries'
        if heads % group or kv_heads % group:
            return (f"cp_comm_type {config['cp_comm_type']}: its all-to-all group of {group} does not divide "
                    f"{heads} heads / {kv_heads} KV heads a tp rank holds")
    if ep > 1 and (not shape.experts or shape.experts % ep):
        return f"ep {ep} does not divide {shape.experts} experts"
    return ""


def states_lower_bound(config: dict[str, Any], shape: ModelShape | None) -> int:
    """Bytes per GPU that parameters, gradients and Adam states alone need at
    least (16 B per parameter, ZeRO-sharded over dp, the model spread over at
    most tp x pp x ep ranks); 0 when the model's size is unknown. Activations,
    buffers, replicated norms and stage imbalance only add to it, so a point
    above the GPU's memory cannot fit whatever memory-analysis would add."""
    if shape is None or not shape.params:
        return 0
    dp = config["dp"]
    zero = 3 if config.get("fsdp") else config["zero"]  # FSDP is ZeRO-3 (`normalise`)
    per_rank = shape.params / (config["tp"] * config["pp"] * config["ep"])
    # FSDP2's fp32 shard is the master copy: 4 B sharded, Adam's m and v 8 B
    fp32_shards = zero >= 3 and config.get("fp32_param_shards", False)
    params = (4 if fp32_shards else 2) / (dp if zero >= 3 else 1)
    grads = 2 / (dp if zero >= 2 else 1)
    optimizer = (8 if fp32_shards else 12) / (dp if zero >= 1 else 1)
    return int(per_rank * (params + grads + optimizer))


def illegal_serving(config: dict[str, Any], shape: ModelShape | None) -> str:
    """The first rule a serving point breaks, or "" when it may run."""
    tp, pp, ep = config["tp"], config["pp"], config["ep"]
    if min(tp, pp, ep, config["replicas"]) < 1:
        return "tp, pp, ep and replicas must be >= 1"
    if bool(config["batch"]) == bool(config["rate"] or config["num_requests"]):
        return "give one request source: batch, or rate and num_requests"
    split = config["prefill_decode_split"]
    if split:
        try:
            prefill, decode = (int(x) for x in split.split(":"))
        except ValueError:
            return f"prefill_decode_split must be 'P:D' replica counts, got '{split}'"
        if min(prefill, decode) < 1:
            return f"prefill_decode_split {split} needs at least one replica of each role"
        # serve's default policy: static for a batch
        if (config["policy"] or ("static" if config["batch"] else "continuous")) == "static":
            return f"prefill_decode_split {split} needs continuous batching (policy continuous)"
    if shape is None:
        return ""
    if shape.heads % tp or shape.kv_heads % tp and tp % shape.kv_heads:
        return f"tp {tp} does not divide {shape.heads} heads / {shape.kv_heads} KV heads"
    if pp > shape.layers:
        return f"pp {pp} exceeds {shape.layers} layers"
    if ep > 1 and (not shape.experts or shape.experts % ep):
        return f"ep {ep} does not divide {shape.experts} experts"
    tokens = config["input_len"] + config["output_len"]
    if shape.context and tokens > shape.context:
        return f"input_len + output_len = {tokens} exceeds the {shape.context}-token context"
    return ""


def gpus_of(config: dict[str, Any]) -> int:
    """GPUs a point occupies (training: the job; serving: every replica)."""
    if "gpus" in config:
        return int(config["gpus"])
    split = config.get("prefill_decode_split") or ""
    replicas = sum(int(x) for x in split.split(":")) if split else int(config.get("replicas", 1))
    return config["tp"] * config["pp"] * replicas


def gpu_hour_cost(hardware: str, table: dict[str, float]) -> float:
    """Dollars per GPU hour: the space's table first (exact name or family),
    then the built-in rough prices; 0 when unknown."""
    for source in (table, DEFAULT_GPU_HOUR_COST):
        if hardware in source:
            return float(source[hardware])
        family = max((k for k in source if hardware.upper().startswith(k.upper())), key=len, default=None)
        if family:
            return float(source[family])
    return 0.0

