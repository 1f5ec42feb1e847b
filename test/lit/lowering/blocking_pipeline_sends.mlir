// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'pipeline{pp=2 microbatches=2},set-target{hardware=A100-SXM4-80GB},cost-annotate,lower-to-events{blocking=pp}' | filecheck %s
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'pipeline{pp=2 microbatches=2},set-target{hardware=A100-SXM4-80GB},cost-annotate,lower-to-events' | filecheck %s --check-prefix=FREE

// Megatron-Core's non-interleaved 1F1B waits on every batched isend/irecv
// (`lower-to-events{blocking=pp}`, the megatron-core preset's
// `pp_send_overlap=false`): each send is followed by a zero-length `comm_wait`
// on the stage's compute stream that waits for it, so the stage's next compute
// starts after the send has completed. A receive is waited for by its data
// dependence alone; no `comm_issue` precedes a send (it already follows the
// compute whose output it carries).

// CHECK:      event.program @stage0
// CHECK-NOT:  comm_issue
// CHECK:      %[[ACT:.*]] = event.comm "send" on @comm_pp_send {{.*}} channel = "act", src = 0 : i64, dst = 1 : i64
// CHECK-NEXT: %{{.*}} = event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[ACT]])
// CHECK:      event.program @stage1
// CHECK:      %[[GRAD:.*]] = event.comm "send" on @comm_pp_send {{.*}} channel = "grad", src = 1 : i64, dst = 0 : i64
// CHECK-NEXT: %{{.*}} = event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[GRAD]])

// FREE:     event.program @stage0
// FREE-NOT: comm_wait
// FREE:     event.comm "send" on @comm_pp_send
// FREE-NOT: comm_wait
