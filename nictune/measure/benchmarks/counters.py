"""Kernel counters read on both hosts before and after a benchmark.

Receiver: ``/proc/interrupts`` (lines naming the device), ``/proc/softirqs`` (NET_RX,
NET_TX), ``/proc/net/dev`` (the device's bytes, packets, errors, drops), ``/proc/net/snmp``
(Udp, Tcp), ``/proc/net/softnet_stat`` (processed, dropped, time_squeeze summed over CPUs)
and ``/proc/stat`` (each CPU's busy and total time). Sender: ``/proc/stat`` and the drops
of the device's root qdisc (``tc -s -j qdisc show``). ``/proc/net/*`` and qdiscs are per
namespace; interrupts, softirqs, softnet_stat and ``/proc/stat`` are per machine (on a veth
pair both ends see the same CPUs). The counter window includes iperf3's warm-up and
connection set-up, so rates derived here are approximate; the iperf3 figures are the
primary ones.

:func:`bottleneck_metrics` turns the two deltas into the counters a tuner reads first (where
packets were dropped, how busy the busiest core of each end was): ``METRICS`` in
:mod:`nictune.measure._base` names them.
"""

from __future__ import annotations

import json
import re

from nictune.errors import HostCommandError
from nictune.measure.hosts import Host
from nictune.measure.validation import check_device

_DEV_FIELDS = ("bytes", "packets", "errs", "drop")
_SOURCES = (
    "/proc/interrupts",
    "/proc/softirqs",
    "/proc/net/dev",
    "/proc/net/snmp",
    "/proc/net/softnet_stat",
    "/proc/stat",
)
#: /proc/stat fields counted as idle (idle, iowait); the rest of the first eight is busy
#: (user, nice, system, irq, softirq, steal; guest time is inside user already).
_IDLE_FIELDS = (3, 4)


def _irq_total(text: str, device: str) -> tuple[int, int]:
    """(sum of counts, number of IRQ lines) over lines of ``/proc/interrupts`` naming device."""
    lines = text.splitlines()
    ncpu = len(lines[0].split()) if lines else 0
    pattern = re.compile(rf"(^|[\s@]){re.escape(device)}([-:@\s]|$)")
    total = count = 0
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        fields = rest.split()
        if not head.strip().isdigit() or not pattern.search(" ".join(fields[ncpu:])):
            continue
        total += sum(int(f) for f in fields[:ncpu] if f.isdigit())
        count += 1
    return total, count


def _softirqs(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() in ("NET_RX", "NET_TX"):
            out[f"softirq_{name.strip().lower()}"] = sum(int(f) for f in rest.split())
    return out


def _net_dev(text: str, device: str) -> dict[str, int]:
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() != device:
            continue
        f = [int(x) for x in rest.split()]
        out = {f"dev_rx_{k}": f[i] for i, k in enumerate(_DEV_FIELDS)}
        out.update({f"dev_tx_{k}": f[8 + i] for i, k in enumerate(_DEV_FIELDS)})
        return out
    return {}


def _snmp(text: str) -> dict[str, int]:
    wanted = {
        "Udp": ("InDatagrams", "InErrors", "RcvbufErrors", "NoPorts"),
        "Tcp": ("InSegs", "OutSegs", "RetransSegs"),
    }
    out: dict[str, int] = {}
    lines = text.splitlines()
    for head, values in zip(lines[::2], lines[1::2], strict=False):
        proto, _, names = head.partition(":")
        if proto not in wanted:
            continue
        table = dict(zip(names.split(), values.partition(":")[2].split(), strict=False))
        for name in wanted[proto]:
            if name in table:
                key = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
                out[f"{proto.lower()}_{key}"] = int(table[name])
    return out


def _softnet(text: str) -> dict[str, int]:
    processed = dropped = squeezed = 0
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            processed += int(f[0], 16)
            dropped += int(f[1], 16)
            squeezed += int(f[2], 16)
    return {
        "softnet_processed": processed,
        "softnet_dropped": dropped,
        "softnet_time_squeeze": squeezed,
    }


def _cpu_times(text: str) -> dict[str, int]:
    """Busy and total time (in clock ticks) of every CPU: ``cpuN_busy``, ``cpuN_total``."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 9 or not f[0].startswith("cpu") or not f[0][3:].isdigit():
            continue
        ticks = [int(x) for x in f[1:9]]
        total = sum(ticks)
        out[f"{f[0]}_busy"] = total - sum(ticks[i] for i in _IDLE_FIELDS)
        out[f"{f[0]}_total"] = total
    return out


def read_counters(host: Host, device: str) -> dict[str, int]:
    """All receiver counters of ``device`` on ``host`` (see the module docstring)."""
    dev = check_device(device)
    files = host.read_files(_SOURCES)
    irqs, irq_lines = _irq_total(files["/proc/interrupts"], dev)
    out = {"irq_total": irqs, "irq_lines": irq_lines}
    out.update(_softirqs(files["/proc/softirqs"]))
    out.update(_net_dev(files["/proc/net/dev"], dev))
    out.update(_snmp(files["/proc/net/snmp"]))
    out.update(_softnet(files["/proc/net/softnet_stat"]))
    out.update(_cpu_times(files["/proc/stat"]))
    return out


def qdisc_drops(text: str) -> int | None:
    """Packets dropped by the root qdisc in ``tc -s -j qdisc show`` output (its children's
    drops are in it); ``None`` when the output names no qdisc with counters."""
    try:
        qdiscs = json.loads(text or "[]")
    except ValueError:
        return None
    roots = [q for q in qdiscs if isinstance(q, dict) and q.get("root") and isinstance(q.get("drops"), int)]
    return sum(int(q["drops"]) for q in roots) if roots else None


def read_sender_counters(host: Host, device: str) -> dict[str, int]:
    """The sender's counters: each CPU's times and the drops of ``device``'s root qdisc
    (left out when ``tc`` cannot tell, e.g. a device without a qdisc)."""
    dev = check_device(device)
    out = _cpu_times(host.read_files(["/proc/stat"])["/proc/stat"])
    try:
        res = host.run(["tc", "-s", "-j", "qdisc", "show", "dev", dev], check=False, timeout=10)
    except HostCommandError:
        return out
    drops = qdisc_drops(res.stdout) if res.returncode == 0 else None
    if drops is not None:
        out["qdisc_drops"] = drops
    return out


def busiest_core_pct(delta: dict[str, int]) -> float | None:
    """How busy the busiest CPU was between two reads, in percent; ``None`` without CPU times."""
    shares = [100.0 * delta.get(key[: -len("_total")] + "_busy", 0) / total
              for key, total in delta.items() if key.startswith("cpu") and key.endswith("_total") and total > 0]
    return min(100.0, max(0.0, max(shares))) if shares else None


def bottleneck_metrics(receiver: dict[str, int], sender: dict[str, int], protocol: str) -> dict[str, float]:
    """The drop counters and busiest cores of a run from the receiver's and the sender's
    counter deltas; a figure the counters cannot give is left out."""
    out: dict[str, float] = {}
    sources = {
        "ring_drops": receiver.get("dev_rx_drop"),
        "backlog_drops": receiver.get("softnet_dropped"),
        "socket_drops": receiver.get("udp_rcvbuf_errors") if protocol == "udp" else 0,
        "qdisc_drops": sender.get("qdisc_drops"),
    }
    for name, value in sources.items():
        if value is not None:
            out[name] = float(max(0, value))
    for name, delta in (("rx_core_busy_pct", receiver), ("tx_core_busy_pct", sender)):
        busiest = busiest_core_pct(delta)
        if busiest is not None:
            out[name] = busiest
    return out


def counter_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """``after - before`` for every counter in both (``irq_lines`` is kept, not subtracted)."""
    out = {k: after[k] - before[k] for k in after if k in before and k != "irq_lines"}
    out["irq_lines"] = after.get("irq_lines", 0)
    return out


def derive(delta: dict[str, int], elapsed_s: float, delivered_bytes: float) -> dict[str, float]:
    """Rates from a counter delta.

    Args:
        delta: from :func:`counter_delta`.
        elapsed_s: seconds between the two reads.
        delivered_bytes: payload bytes the receiver got (for per-gigabyte figures).

    Returns:
        ``interrupts_per_s`` and ``interrupts_per_gb`` (0 when the device has no IRQs, as
        veth), ``rx_packets_per_s`` from the device counters and ``udp_loss_pct_counters``:
        datagrams the receiver's stack dropped (``InErrors``, which includes
        ``RcvbufErrors``) in percent of those that reached UDP.
    """
    irqs = float(delta.get("irq_total", 0))
    gb = delivered_bytes / 1e9
    in_dgrams = delta.get("udp_in_datagrams", 0)
    in_errors = delta.get("udp_in_errors", 0)
    reached = in_dgrams + in_errors
    return {
        "interrupts_per_s": irqs / elapsed_s if elapsed_s > 0 else 0.0,
        "interrupts_per_gb": irqs / gb if gb > 0 else 0.0,
        "rx_packets_per_s": delta.get("dev_rx_packets", 0) / elapsed_s if elapsed_s > 0 else 0.0,
        "udp_loss_pct_counters": 100.0 * in_errors / reached if reached else 0.0,
    }
