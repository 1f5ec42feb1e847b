"""Serving on a cluster of several node kinds (issue 26): prefill replicas on one
kind, decode replicas on another, the KV handed over across the slower links."""

from __future__ import annotations

from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.serving import serve

COMMON = dict(prefill_replicas=1, decode_replicas=1, tp=8, rate=4.0, num_requests=24, input_len=2048,
              output_len=64)
PAIR = """name = "pair"
node h100 {{ gpu = H100-SXM5-80GB  gpus = 8  nodes = {h100} }}
node b200 {{ gpu = B200  gpus = 8  nodes = 1  nic {{ count = 8  speed = {b200_nic} }} }}
nic {{ count = 8  speed = 400Gb/s  latency = 1us }}
"""


def pair(tmp_path: Path, h100: int = 1, b200_nic: str = "400Gb/s") -> str:
    path = tmp_path / f"pair-{h100}-{b200_nic.replace('/', '')}.cluster"
    path.write_text(PAIR.format(h100=h100, b200_nic=b200_nic))
    return str(path)


def test_prefill_and_decode_on_their_kinds(tmp_path) -> None:
    report = serve("llama-3.1-8b", cluster=pair(tmp_path), **COMMON)
    assert {r["role"]: r["hardware"] for r in report["replicas"]} == {
        "prefill": "H100-SXM5-80GB", "decode": "B200-SXM-180GB"}
    assert report["config"]["node_kinds"] == {"prefill": "h100", "decode": "b200"}
    assert report["decode_memory"]["hardware"] == "B200-SXM-180GB"
    # the same as naming both GPUs: the links the KV crosses are the same NICs
    named = serve("llama-3.1-8b", hardware="H100-SXM5-80GB", decode_hardware="B200", **COMMON)
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert report[key] == named[key]
    # the kinds swapped: decode on the H100s is slower per token
    swapped = serve("llama-3.1-8b", cluster=pair(tmp_path), prefill_kind="b200", decode_kind="h100", **COMMON)
    assert swapped["tpot_s"]["mean"] > report["tpot_s"]["mean"]


def test_the_handover_crosses_the_slower_nics(tmp_path) -> None:
    fast = serve("llama-3.1-8b", cluster=pair(tmp_path), **COMMON)
    slow = serve("llama-3.1-8b", cluster=pair(tmp_path, b200_nic="25Gb/s"), **COMMON)
    assert slow["ttft_s"] == fast["ttft_s"]  # prefill alone decides the first token
    assert slow["e2e_s"]["mean"] > fast["e2e_s"]["mean"]


@pytest.mark.parametrize("options, message", [
    (dict(replicas=2, rate=4.0, num_requests=4), "has node kinds h100, b200: serve on it disaggregated"),
    (dict(COMMON, prefill_kind="a100"), "--prefill-kind a100: cluster 'pair' has node kinds h100, b200"),
    (dict(COMMON, prefill_replicas=2), "2 prefill replicas of 8 GPUs need 16 GPUs but node kind 'h100' "
                                       "of cluster 'pair' has 8"),
    (dict(COMMON, decode_hardware="H200"), "--decode-hardware with a cluster of several node kinds"),
    (dict(COMMON, hardware="B200"), "--hardware B200 is not the GPU of node kind 'h100'"),
])
def test_bad_placements_are_one_line(tmp_path, options, message) -> None:
    with pytest.raises(CharonError) as e:
        serve("llama-3.1-8b", cluster=pair(tmp_path), **options)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_kind_needs_a_cluster_of_several(charon_fails) -> None:
    line = charon_fails("serve", "--model", "llama-3.1-8b", "--prefill-replicas", "1", "--decode-replicas", "1",
                        "--decode-kind", "b200", "--rate", "1", "--num-requests", "2")
    assert "--decode-kind names a node kind of a cluster of several" in line


def test_cpu_nodes_serve_retrieval(tmp_path) -> None:
    path = tmp_path / "rag.cluster"
    path.write_text(PAIR.format(h100=1, b200_nic="400Gb/s") + "cpu_nodes retrieval { nodes = 2 }\n")
    rag = dict(COMMON, rate=20.0, num_requests=60, input_len=512, stages=("retrieval:200",))
    two = serve("llama-3.1-8b", cluster=str(path), **rag)
    assert two["stages"]["retrieval"]["servers"] == 2
    # --stage-servers sizes the pool over the file: one server queues longer
    one = serve("llama-3.1-8b", cluster=str(path), stage_servers=("retrieval=1",), **rag)
    assert one["stages"]["retrieval"]["servers"] == 1
    assert one["stages"]["retrieval"]["queueing_delay_s"]["mean"] > two["stages"]["retrieval"]["queueing_delay_s"]["mean"]
