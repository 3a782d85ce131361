"""Print the simulated testbed's calibration figures next to the seed papers' figures.

Usage: .venv/bin/python bench/calibration.py

All figures are noise-free outputs of the model (nictune.measure.sim), not measurements.
"""

from __future__ import annotations

from dataclasses import replace

from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES, evaluate
from nictune.search_spaces import load_space


def main() -> None:
    benson, space = PROFILES["sim:benson-40g"], load_space("benson-40g")

    def b(wl: str, base: str = "baseline", scenario: str = "idle", **ch: object) -> dict[str, float]:
        w = get_workload(wl, scenario=scenario)
        if w.protocol == "udp":
            w = replace(w, streams=2)
        return evaluate(benson, space.settings(space.configuration(ch, base=base)), w).metrics

    tcp0, udp0 = b("tcp"), b("udp-jumbo")
    mishra, tcp_space = PROFILES["sim:mishra-10g"], load_space("linux-tcp")

    def m(base: str) -> float:
        cfg = tcp_space.configuration({}, base=base)
        return evaluate(mishra, tcp_space.settings(cfg), get_workload("tcp")).metrics["throughput_gbps"]

    ix, ixs = PROFILES["sim:ixgbe-10g"], load_space("ixgbe-numa")
    all_fixes = ixs.configuration({"numa_local_buffers": True, "buffer_alignment": True,
                                   "no_shared_refs": True})
    ix_stock = evaluate(ix, [], get_workload("udp-small")).metrics["packet_rate_mpps"]
    ix_best = evaluate(ix, ixs.settings(all_fixes), get_workload("udp-small")).metrics["packet_rate_mpps"]
    cai = evaluate(PROFILES["sim:cai-100g"], [], get_workload("tcp"))
    p1u, p8u = b("udp-jumbo", mtu=1500), b("udp-jumbo", rx_ring=1024, tx_ring=1024)
    rows = [
        ("B0 Benson TCP, Table III baseline", "35-40 Gbps", f"{tcp0['throughput_gbps']:.1f} Gbps"),
        ("BU Benson TCP, untuned", "< 10 Gbps", f"{b('tcp', base='default')['throughput_gbps']:.1f} Gbps"),
        ("B1t baseline, MTU 1500, TCP", "15 +- 3 Gbps", f"{b('tcp', mtu=1500)['throughput_gbps']:.1f} Gbps"),
        ("B1u baseline, MTU 1500, UDP", "8 +- 2 Gbps, loss > 50%",
         f"{p1u['throughput_gbps']:.1f} Gbps, {p1u['loss_pct']:.0f}% loss"),
        ("B3 baseline / not pinned, TCP", "1.6-2.2x",
         f"{tcp0['throughput_gbps'] / b('tcp', app_cpu='unpinned')['throughput_gbps']:.2f}x"),
        ("B8t rings 1024, TCP", "within 2 Gbps",
         f"{tcp0['throughput_gbps'] - b('tcp', rx_ring=1024, tx_ring=1024)['throughput_gbps']:.1f} Gbps lower"),
        ("B8u rings 1024, UDP", "loss 35-65%, >= 10 Gbps lower",
         f"{p8u['loss_pct']:.0f}% loss, {udp0['throughput_gbps'] - p8u['throughput_gbps']:.1f} Gbps lower"),
        ("B10 backlog 1000, TCP", "> 5 Gbps lower",
         f"{tcp0['throughput_gbps'] - b('tcp', netdev_max_backlog=1000)['throughput_gbps']:.1f} Gbps lower"),
        ("B12 txqueuelen 1000, TCP", "> 5 Gbps lower",
         f"{tcp0['throughput_gbps'] - b('tcp', txqueuelen=1000)['throughput_gbps']:.1f} Gbps lower"),
        ("BF UDP on a busy host", "loss up, throughput down",
         f"loss {udp0['loss_pct']:.0f}% -> {b('udp-jumbo', scenario='busy')['loss_pct']:.0f}%, "
         f"{udp0['throughput_gbps']:.1f} -> {b('udp-jumbo', scenario='busy')['throughput_gbps']:.1f} Gbps"),
        ("M1/M2 Mishra default / tuned", "0.9-1.5 / 3.66 +- 10% Gbps", f"{m('default'):.2f} / {m('tuned'):.2f} Gbps"),
        ("I1 ixgbe stock / all fixes", "1.5 / 5.7 Mpps", f"{ix_stock:.2f} / {ix_best:.2f} Mpps"),
        ("C1 Cai one core, all offloads", "42 Gbps +- 15%, copy 45-55%",
         f"{cai.metrics['throughput_gbps']:.1f} Gbps, copy {100 * cai.detail['copy_share']:.0f}%"),
    ]
    width = max(len(r[0]) for r in rows)
    print("simulated testbed calibration (model output, noise-free) vs the seed papers")
    print(f"{'target':{width}}  {'paper':30}  model")
    for target, paper, model in rows:
        print(f"{target:{width}}  {paper:30}  {model}")


if __name__ == "__main__":
    main()
