// set-target on a cluster of several node kinds gives each sim.stage the kind its
// ranks sit on; the two middle stages, one class after `pipeline`, sit on
// different kinds and are split. cost-annotate then prices each stage on its
// own GPU (these 64x64 GEMMs take the launch latency on both: test/unit/passes/
// test_node_kinds.py compares the times of larger ones).
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4}' | filecheck %s
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4},cost-annotate' | filecheck %s --check-prefix=PRICED
// The kinds survive printing: a second charon-opt prices the parsed module per stage.
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4}' | charon-opt -p cost-annotate | filecheck %s --check-prefix=PRICED
// Lowered, each stage's program names its GPU, and the report its stages':
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4},cost-annotate,lower-to-events' | filecheck %s --check-prefix=LOWERED
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4},cost-annotate,lower-to-events' -t simulate | filecheck %s --check-prefix=REPORT
// A stage naming a kind the cluster does not have (a hand-edited module):
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4}' | sed 's/sim.node_kind = "b200"/sim.node_kind = "z100"/' | not charon-opt -p cost-annotate 2>&1 | filecheck %s --check-prefix=UNKNOWN-KIND
// A stage (here the whole job, dp 2 with no pipeline) whose ranks span two kinds:
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4},set-target{cluster="%S/Inputs/four_kinds.cluster" gpus=4}' 2>&1 | filecheck %s --check-prefix=SPAN
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'set-target{cluster="%S/Inputs/uncovered.cluster"}' 2>&1 | filecheck %s --check-prefix=UNCOVERED

// CHECK:      sim.stage [0] attributes {sim.node_kind = "h100"} {
// CHECK:      sim.stage [1] attributes {sim.node_kind = "h100"} {
// CHECK:      sim.stage [2] attributes {sim.node_kind = "b200"} {
// CHECK:      sim.stage [3] attributes {sim.node_kind = "b200"} {

// PRICED:      sim.stage [1] attributes {sim.node_kind = "h100"} {
// PRICED:        sim.matmul {{.*}}cost = #sim.cost<time_s = {{.*}}, engine = "analytic">
// PRICED:        coll.send {{.*}} on @mesh ["pp"] {{.*}}cost = #sim.cost<time_s = {{.*}}, engine = "analytic">
// PRICED:      sim.stage [2] attributes {sim.node_kind = "b200"} {
// PRICED:        sim.matmul {{.*}}cost = #sim.cost<time_s = {{.*}}, engine = "analytic">

// SPAN: charon-opt: error: set-target: the job's ranks lie on node kinds h100 and b200 of cluster 'h100-b200-chain': a stage runs on one kind
// UNCOVERED: charon-opt: error: {{.*}}uncovered.cluster:2:9: 'nodes' is 5 but the node kinds hold 4 (h100: 2, b200: 2): the kinds must cover every node
// UNKNOWN-KIND: charon-opt: error: cost-annotate: sim.stage [2]: sim.node_kind 'z100' is no kind of cluster 'h100-b200-chain' (kinds: h100, b200)
// LOWERED: event.program @stage1 ranks 1 attributes {{.*}}hardware = "H100-SXM5-80GB"
// LOWERED: event.program @stage2 ranks 1 attributes {{.*}}hardware = "B200-SXM-180GB"
// REPORT-DAG: "hardware": "H100-SXM5-80GB+B200-SXM-180GB"
// REPORT-DAG: "hardware": "B200-SXM-180GB"
