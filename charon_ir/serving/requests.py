"""Requests and where they come from: a static batch, Poisson arrivals, a JSONL
trace, or synthetic length distributions. Every source is deterministic given
its seed.

A trace line is a JSON object:

    {"arrival_s": 0.5, "input_tokens": 812, "output_tokens": 130,
     "prefix_id": "sys-prompt-3", "prefix_tokens": 512,
     "stages": [{"kind": "retrieval", "documents": 8},
                {"kind": "remote_kv", "tokens": 4096},
                {"kind": "reasoning", "tokens": 2048, "budget": 1024}]}

`arrival_s` (alias `arrival_time`), `input_tokens` and `output_tokens` are
required; the rest is optional (see stages.py for the stage kinds).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from charon_ir.errors import CharonError

STAGE_KINDS = ("retrieval", "remote_kv", "reasoning")
"""The stages a request may name (stages.py prices them; routing comes from --router-model)."""
MAX_RETRIEVAL_DOCUMENTS = 100_000
"""Documents one retrieval stage fetches and re-ranks at most: re-rankers take
the top 10 to 1,000 of a first-stage search; 10^5 (40 s at the default cost per
document) is past any RAG pipeline, and beyond it the TTFT is the retrieval's."""

LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "exponential", "lognormal", "zipf")


@dataclass
class Stage:
    """One step of a multi-stage request's pipeline (stages.py prices it)."""

    kind: str
    amount: int = 0
    """documents for retrieval, tokens for remote_kv and reasoning (the tokens
    the model would think), decision tokens for routing."""
    budget: int = 0
    """reasoning: the most tokens it may decode (0: no cap); thinking stops
    there and the answer starts (budget forcing)."""

    @property
    def decoded_tokens(self) -> int:
        """Tokens a reasoning stage decodes: its tokens, cut at its budget."""
        return min(self.amount, self.budget) if self.budget else self.amount


@dataclass
class Request:
    id: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_id: str = ""
    prefix_tokens: int = 0
    stages: list[Stage] = field(default_factory=list)
    source: str = ""
    """`FILE:LINE` of a trace's request (errors name it); "" for generated ones."""


MAX_ARRIVAL_S = 1e9
"""A trace's latest arrival (about 32 years): float64 seconds keep sub-microsecond
steps below it; beyond, a step's time is lost in the clock's rounding."""
MAX_REQUESTS = 10_000_000
"""Requests one run holds (about 2 GB of them, hours of scheduling)."""
MAX_SAMPLED_TOKENS = 2.0**31
"""A sampled length beyond this is a spread no workload has (and past int64 it
wrapped to negative token counts)."""


def static_batch(batch: int, input_len: int, output_len: int) -> list[Request]:
    """`batch` identical requests, all there at time 0."""
    _check_lengths(input_len, output_len)
    if batch < 1:
        raise CharonError(f"--batch must be >= 1, got {batch}")
    return [Request(i, 0.0, input_len, output_len) for i in range(batch)]


def check_length_distribution(distribution: str, spread: float) -> None:
    """`--length-dist` and `--length-spread` are known and in range (checked for
    every request source, not only the one that samples them)."""
    if distribution not in LENGTH_DISTRIBUTIONS:
        raise CharonError(
            f"--length-dist must be one of {', '.join(LENGTH_DISTRIBUTIONS)}, got '{distribution}'"
        )
    if not 0 <= spread < math.inf:  # NaN fails too; numpy would fail deep inside
        raise CharonError(f"--length-spread must be a finite number >= 0, got {spread}")


def sample_lengths(
    rng: np.random.Generator, n: int, mean: int, distribution: str, spread: float
) -> np.ndarray:
    """`n` lengths around `mean` (>= 1). `spread`: the coefficient of variation
    of lognormal, the half-width / mean of uniform, the exponent of zipf."""
    check_length_distribution(distribution, spread)
    if distribution == "fixed":
        x = np.full(n, float(mean))
    elif distribution == "uniform":
        half = min(spread, 1.0) * mean
        x = rng.uniform(mean - half, mean + half, n)
    elif distribution == "exponential":
        x = rng.exponential(mean, n)
    elif distribution == "lognormal":
        sigma = np.sqrt(np.log1p(spread * spread))
        x = rng.lognormal(np.log(mean) - sigma * sigma / 2, sigma, n)
    else:  # zipf: heavy tail, scaled so the median is near `mean`
        a = max(spread, 1.01) + 1.0
        x = rng.zipf(a, n) * (mean / 1.5)
    if not np.all(x <= MAX_SAMPLED_TOKENS):  # inf, NaN or past int64 would wrap around
        raise CharonError(f"--length-spread {spread:g}: {distribution} lengths around {mean} leave the "
                          "range of token counts (up to 2^31); give a smaller spread")
    return np.maximum(1, np.rint(x)).astype(np.int64)


def poisson(
    rate: float,
    num_requests: int,
    input_len: int,
    output_len: int,
    seed: int = 0,
    length_distribution: str = "fixed",
    spread: float = 0.5,
    max_len: int = 0,
) -> list[Request]:
    """Poisson arrivals at `rate` per second (rate 0: all at time 0)."""
    _check_lengths(input_len, output_len)
    if not 1 <= num_requests <= MAX_REQUESTS:
        raise CharonError(f"--num-requests must be in 1..{MAX_REQUESTS:,} (a longer run: several), "
                          f"got {num_requests}")
    if not 0 <= rate < math.inf:  # NaN fails too
        raise CharonError(f"--rate must be a finite number >= 0, got {rate}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, num_requests) if rate > 0 else np.zeros(num_requests)
    arrivals = np.cumsum(gaps) - (gaps[0] if rate > 0 else 0.0)
    if not arrivals[-1] <= MAX_ARRIVAL_S:  # as a trace's: past it, seconds lose their digits
        raise CharonError(f"--rate {rate:g}: {num_requests} requests arrive over {arrivals[-1]:.3g} s, "
                          f"beyond {MAX_ARRIVAL_S:g} s")
    inputs = sample_lengths(rng, num_requests, input_len, length_distribution, spread)
    outputs = sample_lengths(rng, num_requests, output_len, length_distribution, spread)
    if max_len:
        inputs = np.minimum(inputs, max_len)
        outputs = np.minimum(outputs, max_len)
    return [
        Request(i, float(arrivals[i]), int(inputs[i]), int(outputs[i]))
        for i in range(num_requests)
    ]


def _check_lengths(input_len: int, output_len: int) -> None:
    if input_len < 1 or output_len < 1:
        raise CharonError(
            f"--input-len and --output-len must be >= 1, got {input_len} and {output_len}"
        )


def _positive_int(obj: dict[str, Any], key: str, where: str, minimum: int = 1) -> int:
    v = obj.get(key)
    # JSON's NaN and Infinity are floats that int() cannot take
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or v != int(v) or not minimum <= v <= MAX_SAMPLED_TOKENS):
        shown = f"{v:.3g}" if isinstance(v, float) and abs(v) > 1e15 else repr(v)  # not 300 digits
        raise CharonError(f"{where}: '{key}' must be an integer in {minimum}..2^31, got {shown}")
    return int(v)


def _stage(obj: Any, where: str) -> Stage:
    if not isinstance(obj, dict) or obj.get("kind") not in STAGE_KINDS:
        kind = obj.get("kind") if isinstance(obj, dict) else obj
        raise CharonError(
            f"{where}: stage kind {kind!r} is not one of {', '.join(STAGE_KINDS)}"
        )
    key = "documents" if obj["kind"] == "retrieval" else "tokens"
    amount = _positive_int(obj, key, where, 0) if key in obj else 0
    if key == "documents" and amount > MAX_RETRIEVAL_DOCUMENTS:  # as --stage retrieval:N
        raise CharonError(f"{where}: 'documents' must be at most {MAX_RETRIEVAL_DOCUMENTS:,}, got {amount}")
    unknown = sorted(set(obj) - {"kind", key, "budget"}) or (["budget"] if "budget" in obj and
                                                              obj["kind"] != "reasoning" else [])
    if unknown:  # a misspelt 'tokens' would be a stage of none, silently
        raise CharonError(f"{where}: a {obj['kind']} stage takes 'kind', '{key}'"
                          + (" and 'budget'" if obj["kind"] == "reasoning" else "")
                          + f", not '{unknown[0][:40]}'")
    budget = _positive_int(obj, "budget", where) if "budget" in obj else 0
    return Stage(obj["kind"], amount, budget)


def read_trace(path: str | Path) -> list[Request]:
    """Requests of a JSONL trace, sorted by arrival (ties keep file order)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise CharonError(f"cannot read trace {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CharonError(f"{path}: not a text file") from None
    requests: list[Request] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CharonError(f"{where}: not a JSON object ({e.msg})") from None
        except RecursionError:
            raise CharonError(f"{where}: not a JSON object (nested too deeply)") from None
        if not isinstance(obj, dict):
            raise CharonError(f"{where}: a trace line must be a JSON object")
        arrival = obj.get("arrival_s", obj.get("arrival_time"))
        if (isinstance(arrival, bool) or not isinstance(arrival, (int, float))
                or not 0 <= arrival <= MAX_ARRIVAL_S):
            raise CharonError(f"{where}: 'arrival_s' must be a number of seconds in 0..{MAX_ARRIVAL_S:g}, "
                              f"got {arrival!r}")
        stages = obj.get("stages", [])
        if not isinstance(stages, list):
            raise CharonError(f"{where}: 'stages' must be a list")
        prefix_id = obj.get("prefix_id", "")
        if not isinstance(prefix_id, str):
            raise CharonError(f"{where}: 'prefix_id' must be a string")
        request = Request(
            len(requests),
            float(arrival),
            _positive_int(obj, "input_tokens", where),
            _positive_int(obj, "output_tokens", where),
            prefix_id,
            _positive_int(obj, "prefix_tokens", where, 0) if "prefix_tokens" in obj else 0,
            [_stage(s, where) for s in stages],
            where,
        )
        if request.prefix_tokens > request.input_tokens:
            raise CharonError(f"{where}: 'prefix_tokens' exceeds 'input_tokens'")
        if any(st.kind == "remote_kv" and st.amount > request.input_tokens for st in request.stages):
            # the fetched KV is the prompt's own: more of it was cut to the prompt unseen
            raise CharonError(f"{where}: a remote_kv stage fetches more 'tokens' than 'input_tokens'")
        requests.append(request)
    if not requests:
        raise CharonError(f"{path}: the trace holds no request")
    requests.sort(key=lambda r: r.arrival_s)
    for i, r in enumerate(requests):
        r.id = i
    return requests


def long_context(num_requests: int, rate: float, seed: int = 0, min_tokens: int = 4096,
                 max_tokens: int = 1048576, output_tokens: int = 256) -> list[Request]:
    """A long-context workload: Poisson arrivals at `rate` per second, prompt
    lengths log-uniform in [min_tokens, max_tokens] (as many prompts of 4K-8K
    tokens as of 512K-1M), `output_tokens` each. numpy's default_rng(seed)
    draws the gaps, then the lengths: the same arguments give the same requests."""
    if not 1 <= num_requests <= MAX_REQUESTS:
        raise CharonError(f"num_requests must be in 1..{MAX_REQUESTS:,}, got {num_requests}")
    if not 0 < rate < math.inf:
        raise CharonError(f"rate must be a finite number > 0, got {rate}")
    if not 1 <= min_tokens <= max_tokens or output_tokens < 1:
        raise CharonError(f"lengths must satisfy 1 <= min_tokens <= max_tokens and output_tokens >= 1, "
                          f"got {min_tokens}, {max_tokens}, {output_tokens}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, num_requests)
    arrivals = np.cumsum(gaps) - gaps[0]
    prompts = np.exp(rng.uniform(math.log(min_tokens), math.log(max_tokens), num_requests))
    prompts = np.clip(np.rint(prompts), min_tokens, max_tokens).astype(np.int64)
    return [Request(i, float(arrivals[i]), int(prompts[i]), output_tokens) for i in range(num_requests)]
