// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'offload-activations{layers=3},set-target{hardware=H100-SXM5-80GB},memory-analysis,cost-annotate,lower-to-events{host-bandwidth=1e10}' | filecheck %s
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'offload-activations{layers=3},set-target{hardware=H100-SXM5-80GB},memory-analysis,cost-annotate,lower-to-events' | filecheck %s --check-prefix=DEFAULT
// RUN: charon-opt %S/Inputs/eight_layers.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events' | filecheck %s --check-prefix=OFF
// RUN: not charon-opt %S/Inputs/eight_layers.mlir -p 'offload-activations{layers=3},set-target{hardware=H100-SXM5-80GB},memory-analysis,cost-annotate,lower-to-events{host-bandwidth=0.0}' 2>&1 | filecheck %s --check-prefix=BAD

// Eight layers, the first three offloaded (8192 bytes saved a layer):
// Transformer Engine's layer_window_map is [2, 5, 7]. Forward: the copy of
// layer 0 starts after its forward; after layer 2 the compute waits for it and
// the copy of layer 1 starts; after 5, the wait for 1 and the copy of 2; after
// 7, the wait for 2. Backward: before layer 7 the reload of layer 2 starts;
// before 5 the compute waits for it and the reload of 1 starts; before 2, the
// wait for 1 and the reload of 0; before 0 the wait for every reload. The layer
// loop splits at those layers.
// CHECK:      event.stream @comm_host_d2h copy {axes = ["host"]}
// CHECK-NEXT: event.stream @comm_host_h2d copy {axes = ["host"]}
// CHECK:      %[[L0:.*]] = event.loop 1 iter
// CHECK:      %[[C0:.*]] = event.comm "offload" on @comm_host_d2h duration 8.192000e-07 after(%[[L0]]) {bytes = 8192 : i64, group = 1 : i64}
// CHECK-NEXT: %[[L12:.*]] = event.loop 2 iter(%[[L0]])
// CHECK:      %[[W0:.*]] = event.compute "offload_wait" on @compute duration 0.000000e+00 after(%[[L12]], %[[C0]])
// CHECK-NEXT: %[[C1:.*]] = event.comm "offload" on @comm_host_d2h {{.*}} after(%[[W0]])
// CHECK-NEXT: %[[L35:.*]] = event.loop 3 iter(%[[W0]])
// CHECK:      %[[W1:.*]] = event.compute "offload_wait" on @compute {{.*}} after(%[[L35]], %[[C1]])
// CHECK-NEXT: %[[C2:.*]] = event.comm "offload" on @comm_host_d2h {{.*}} after(%[[W1]])
// CHECK-NEXT: %[[L67:.*]] = event.loop 2 iter(%[[W1]])
// CHECK:      event.compute "offload_wait" on @compute {{.*}} after(%[[L67]], %[[C2]])
// CHECK:      %[[R2:.*]] = event.comm "reload" on @comm_host_h2d duration 8.192000e-07 after(%{{.*}}) {bytes = 8192 : i64, group = 1 : i64}
// CHECK-NEXT: %[[B76:.*]] = event.loop 2 iter
// CHECK:      %[[V1:.*]] = event.compute "reload_wait" on @compute {{.*}} after(%[[B76]], %[[R2]])
// CHECK-NEXT: %[[R1:.*]] = event.comm "reload" on @comm_host_h2d {{.*}} after(%[[V1]])
// CHECK-NEXT: %[[B53:.*]] = event.loop 3 iter(%[[V1]])
// CHECK:      %[[V0:.*]] = event.compute "reload_wait" on @compute {{.*}} after(%[[B53]], %[[R1]])
// CHECK-NEXT: %[[R0:.*]] = event.comm "reload" on @comm_host_h2d {{.*}} after(%[[V0]])
// CHECK-NEXT: %[[B21:.*]] = event.loop 2 iter(%[[V0]])
// CHECK:      %[[VL:.*]] = event.compute "reload_wait" on @compute {{.*}} after(%[[B21]], %[[R0]])
// CHECK-NEXT: event.loop 1 iter(%[[VL]])

// the project's host link, 25 GB/s: 8192 bytes in 3.2768e-07 s
// DEFAULT: event.comm "offload" on @comm_host_d2h duration 3.276800e-07

// OFF-NOT: comm_host
// OFF:     event.loop 8 iter

// BAD: charon-opt: error: lower-to-events: option 'host-bandwidth' must be a number of bytes/s > 0, got 0.0
