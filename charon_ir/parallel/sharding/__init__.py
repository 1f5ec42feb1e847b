"""Sharding propagation over the sim dialect, shared by the parallelism passes.

A pass seeds some values with a `Shard` (a weight split on a dim, the token ids
split on the sequence) and propagates them over the module, walking it once in
program order. Each op's rule reads its operands' shards, picks the shards of its
results (a matmul of a replicated input by a column-split weight is split on its
last dim; by a row-split weight, it is a partial sum), gives the results their
per-rank types, and converts an operand whose shard does not fit with the
collective that fits (all_reduce, reduce_scatter, all_gather, all_to_all, or a
free local slice).

Every value keeps its one definition: the module stays one rank's program, never
a copy per GPU. Work that stays whole on every rank of the group (a norm on the
replicated hidden state) is summed in `replicated_flops`, which the pass records
on the module (`charon_ir.parallel.accounting`).

A `Shard` names one split dim (with how many ways it is split: the group size, or
less when a kv head is shared by several ranks) and what the dim is (`tag`:
heads, ffn, vocab, seq, experts, capacity), which guides reshapes whose dim
mapping the shapes alone leave open (a view that also transposes): a heads dim
goes to the output dim whose size is a head count. Where nothing fits, the
operands are gathered whole (correct, but it moves data).

The modules, each importing only those before it:
- layout.py       `Shard`, per-rank shapes, retyping a value through the rewriter
- conversions.py  the layout of each value, and the collective a change of layout needs
- state.py        `ShardingState`: what one propagation knows (hints, ops done, FLOPs before)
- rules.py        one rule per op family (`ShardPattern`s) and the default set
- propagation.py  `propagate`: the walk, then the tally of the replicated work
"""
