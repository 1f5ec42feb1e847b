"""Sharding propagation over the sim dialect, shared by the parallelism passes.

A pass seeds some values with a `Shard` (a weight split on a dim, the token ids
split on the sequence) and propagates them over the module, walking it once in
program order. Each op's rule (the factors it declares, `sim.ShardingRule`, or a
pattern where factors do not say it) reads its operands' layouts and decides the layouts
of its results (a matmul of a replicated input by a column-split weight is split
on its last dim; by a row-split weight, it is a partial sum) and the layout an
operand that does not fit must be converted to, by the collective that fits
(all_reduce, reduce_scatter, all_gather, all_to_all, or a free local slice).

As MLIR's shard dialect separates sharding propagation from partitioning, the
propagation can only record (`ShardingAnalysis`: a `ShardingPlan`, by place, with
the module unchanged), and rewrite patterns then materialise the plan through the
rewriter (per-rank types by `replace_value_with_new_type`, conversions and row
statistics inserted), in whatever order the ops are visited. An op that runs as
ops of its own (ring attention's steps) gets a `Partition`, applied by a pattern
once its operands and results are laid out; a rule that picks a conversion's
ops itself (shard-expert's routed all_to_alls) records them as steps. shard-tensor,
shard-context and shard-expert all work so; the tests hold the materialised plan
to a state that makes each decision IR at once, as the walk goes (as the passes
did before).

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
- conversions.py  the steps a change of layout needs (planned from shapes), and their ops
- state.py        `Sharding`: what the rules see and ask for; `Partition`
- rules.py        `ShardByRule`, which applies the factor rule each op declares
                  (`sharding_rule()`, beside `flops()`), the patterns for what
                  factors do not say, and the default set
- analysis.py     `ShardingAnalysis`: the rules' requests recorded in a `ShardingPlan`
- materialise.py  the patterns that make a plan IR (and apply partitions)
- propagation.py  `analyse` (the walk), `propagate` (walk, materialise), the tally
  of the replicated work
"""
