"""What a trial measures: the workloads and the benchmark runners.

The workload model and its files (:mod:`~nictune.measure.benchmarks.workload_spec`, the
built-in ones in ``builtin_workloads/`` loaded by :mod:`~nictune.measure.benchmarks.workloads`),
the server/client plumbing both runners share (:mod:`~nictune.measure.benchmarks.benchmark`),
the iperf3 and sockperf runners, the kernel counters read on both hosts around a run
(:mod:`~nictune.measure.benchmarks.counters`) and the background CPU load (:mod:`~nictune.measure.benchmarks.busy`).
"""
