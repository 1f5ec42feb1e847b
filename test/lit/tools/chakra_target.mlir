// -t chakra writes one Chakra trace per rank of the mesh (here the 8-way tp group
// of one decoder layer) and the process groups beside them.
// RUN: rm -rf %t && charon-opt %examples/transformer_layer.mlir -p 'set-target{hardware=H100-SXM5-80GB gpus=8},cost-annotate,lower-to-events' -t 'chakra{dir="%t" ranks="0-1,7"}' | filecheck %s
// RUN: ls %t | filecheck %s --check-prefix=FILES
// RUN: cat %t/comm_group.json | filecheck %s --check-prefix=GROUPS
// A rank outside the mesh is one line, and no trace is written.
// RUN: rm -rf %t.bad && not charon-opt %examples/transformer_layer.mlir -p 'set-target{hardware=H100-SXM5-80GB gpus=8}' -t 'chakra{dir="%t.bad" ranks="0-8"}' 2>&1 | filecheck %s --check-prefix=RANKS
// RUN: not ls %t.bad/charon.0.et
// RUN: not charon-opt %examples/transformer_layer.mlir -t chakra 2>&1 | filecheck %s --check-prefix=NODIR

// CHECK:      {{.*}}/charon.0.et: [[N:[0-9]+]] nodes, main
// CHECK-NEXT: {{.*}}/charon.1.et: [[N]] nodes, main
// CHECK-NEXT: {{.*}}/charon.7.et: [[N]] nodes, main
// CHECK-NEXT: {{.*}}/comm_group.json: 1 process groups

// FILES:      charon.0.et
// FILES-NEXT: charon.1.et
// FILES-NEXT: charon.7.et
// FILES-NEXT: comm_group.json

// GROUPS: "{{[0-9]+}}": [0, 1, 2, 3, 4, 5, 6, 7]

// RANKS: charon-opt: error: chakra: option 'ranks' '0-8': rank 8 is outside the run's 8 GPUs (0-7)
// NODIR: charon-opt: error: chakra: option 'dir' names no folder
