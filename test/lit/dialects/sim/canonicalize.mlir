// RUN: charon-opt %s -p canonicalize | filecheck %s

// The canonical forms of a value another pipeline stage holds (`sim.off_stage`):
// what only computes from it is off-stage too, a collective of it is not run here,
// a phase stops yielding it, an optimizer step stops updating its pair; then
// dead-code elimination takes what nothing reads. A collective nobody reads stays
// (communication, `MemoryWriteEffect`), and so does a phase result nobody reads
// (the loss the step returns).

builtin.module {
  coll.grid @mesh(axes = ["pp", "tp"], shape = 2x2)
  %w = sim.param "w" : tensor<8x8xbf16>
  %v = sim.param "v" : tensor<8x8xbf16>
  %x = sim.input "x" : tensor<4x8xbf16>
  // CHECK:      %[[W:.*]] = sim.param "w" : tensor<8x8xbf16>
  // CHECK-NOT:  sim.param "v"
  // CHECK-NEXT: %[[X:.*]] = sim.input "x" : tensor<4x8xbf16>

  %f:3 = sim.phase "forward" -> tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16> {
    %h = sim.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
    %stat = coll.all_reduce %h on @mesh ["tp"] : tensor<4x8xbf16>
    %away = sim.off_stage : tensor<4x8xbf16>
    %y = sim.matmul %away, %v : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
    %z = coll.all_reduce %y on @mesh ["tp"] : tensor<4x8xbf16>
    %loss = sim.elementwise "mul" %h, %h : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
    %unused = sim.elementwise "exp" %h : tensor<4x8xbf16> -> tensor<4x8xbf16>
    sim.yield %h, %z, %loss : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
  }
  // CHECK:      %[[F0:.*]], %[[LOSS:.*]] = sim.phase "forward" -> tensor<4x8xbf16>, tensor<4x8xbf16> {
  // CHECK-NEXT:   %[[H:.*]] = sim.matmul %[[X]], %[[W]]
  // CHECK-NEXT:   coll.all_reduce %[[H]] on @mesh ["tp"] : tensor<4x8xbf16>
  // CHECK-NEXT:   %[[L:.*]] = sim.elementwise "mul" %[[H]], %[[H]]
  // CHECK-NEXT:   sim.yield %[[H]], %[[L]] : tensor<4x8xbf16>, tensor<4x8xbf16>
  // CHECK-NEXT: }

  %b:2 = sim.phase "backward" -> tensor<8x8xbf16>, tensor<8x8xbf16> {
    %dw = sim.matmul %f#0, %x {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
    %dv = sim.matmul %f#1, %x {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
    sim.yield %dw, %dv : tensor<8x8xbf16>, tensor<8x8xbf16>
  }
  // CHECK-NEXT: %[[DW:.*]] = sim.phase "backward" -> tensor<8x8xbf16> {
  // CHECK-NEXT:   %[[G:.*]] = sim.matmul %[[F0]], %[[X]] {transpose_lhs}
  // CHECK-NEXT:   sim.yield %[[G]] : tensor<8x8xbf16>
  // CHECK-NEXT: }

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%w, %v : tensor<8x8xbf16>, tensor<8x8xbf16>) grads (%b#0, %b#1 : tensor<8x8xbf16>, tensor<8x8xbf16>)
    %gone = sim.off_stage : tensor<8x8xbf16>
    sim.optimizer_step "sgd" (%gone : tensor<8x8xbf16>) grads (%b#0 : tensor<8x8xbf16>)
    sim.yield
  }
  // CHECK-NEXT: sim.phase "optimizer" {
  // CHECK-NEXT:   sim.optimizer_step "adamw"(%[[W]] : tensor<8x8xbf16>) grads(%[[DW]] : tensor<8x8xbf16>)
  // CHECK-NEXT:   sim.yield
  // CHECK-NEXT: }

  sim.phase "decode" {
    sim.yield
  }
  // CHECK-NEXT: }
  // CHECK-NOT:  sim.phase
  // CHECK-NOT:  sim.off_stage
}
