"""Narrow-terminal tables (nictune.cli.fit): cells break at spaces, hyphens, colons and
slashes, never inside a word, and the room goes to the columns that then fit whole."""

from __future__ import annotations

from nictune.cli.fit import fit_widths, fitted, wrap


def test_wrap_breaks_after_hyphens_colons_and_slashes_and_at_spaces() -> None:
    assert wrap("tuned-network-throughput (stock)", 14) == "tuned-network-\nthroughput\n(stock)"
    assert wrap("sim:benson-40g", 8) == "sim:\nbenson-\n40g"
    assert wrap("39.6 ± 0.92 Gbit/s", 11) == "39.6 ± 0.92\nGbit/s"
    assert wrap("esnet (stock)", 14) == "esnet (stock)"
    assert wrap("x - y", 14) == "x - y"
    assert wrap("a-partlongerthanthewidth", 8) == "a-\npartlongerthanthewidth"  # kept whole
    assert wrap("netdev_max_backlog=250000 tcp+latency", 12) == "netdev_max_\nbacklog=\n250000 tcp+\nlatency"
    assert wrap("throughput\nGbit/s", 40) == "throughput\nGbit/s"  # given line breaks stay


def test_widths_fit_whole_where_they_can_and_never_below_a_part() -> None:
    columns = [["job", "1"], ["state", "interrupted"], ["testbed", "sim:benson-40g"], ["result", "39.6 ± 0.92 Gbit/s"]]
    assert fit_widths(columns, 60) == [3, 11, 14, 18]  # room for everything
    narrow = fit_widths(columns, 36)
    assert narrow is not None and sum(narrow) <= 36
    assert narrow[:2] == [3, 11]  # short columns whole first
    assert narrow[2] >= len("benson-") and narrow[3] >= len("Gbit/s")  # nothing below its longest part
    assert fit_widths(columns, 20) is None  # not even the parts fit: Rich decides ...
    squeezed = fit_widths(columns, 20, squeeze=True)  # ... or the widest give way first
    assert squeezed is not None and sum(squeezed) == 20 and squeezed[0] == 3, squeezed
    assert fit_widths(columns, 3, squeeze=True) is None  # less than a character a column


def test_fitted_wraps_every_cell_to_its_column() -> None:
    widths, rows = fitted(["testbed", "result"], [["sim:benson-40g", "39.6 ± 0.92 Gbit/s"]], 22)
    assert sum(w for w in widths if w is not None) <= 22
    for cell, width in zip(rows[0], widths, strict=True):
        assert width is not None and all(len(line) <= width for line in cell.split("\n")), (cell, width)
    assert fitted(["a"], [["a-very-long-name"]], 2) == ([None], [["a-very-long-name"]])


def _comparison(metrics: list[str]) -> dict[str, object]:
    values = {"latency_p99_us": 30.1, "loss_pct": 0.000947, "cpu_rx_pct": 107.2, "latency_p50_us": 20.5}

    def entry(name: str, value: float, stock: bool) -> dict[str, object]:
        return {"name": name, "stock": stock, "number": 1, "state": "completed", "value": value,
                "interval": {"low": value * 0.96, "high": value * 1.04, "n": 3, "confidence": 0.9},
                "metrics": {m: values[m] for m in metrics}, "change_pct": 432.8, "better": True, "error": None}

    rec = entry("recommendation", 38.99, False)
    return {"objective": {"name": "throughput", "metric": "throughput_gbps", "per": None, "direction": "maximize",
                          "label": "throughput", "unit": "Gbit/s"},
            "metrics": metrics, "recommendation": rec,
            "baselines": [entry("default", 7.3, False), entry("tuned-network-throughput", 6.8, True),
                          entry("tuned-network-latency", 6.9, True), entry("esnet", 7.1, True)]}


def test_the_comparison_with_the_stock_profiles_fits_80_columns_with_every_name_whole() -> None:
    from rich.console import Console

    from nictune.cli import results

    for metrics in (["loss_pct", "cpu_rx_pct"], ["latency_p99_us", "loss_pct", "cpu_rx_pct"]):  # 6 and 7 columns
        console = Console(width=80, record=True, color_system=None)
        original = results.console
        results.console = console
        try:
            results.print_baselines({"baselines": _comparison(metrics), "simulated": True, "space": "benson-40g"})
        finally:
            results.console = original
        out = console.export_text()
        table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
        assert table and all(len(line) <= 80 and line.rstrip()[-1] in "┓┃┩│┘" for line in table), out
        names = " ".join(line.split("│")[1].strip() for line in table if line.startswith("│"))
        assert "…" not in out, out
        for name in ("recommendation", "tuned-network- throughput (stock)", "esnet (stock)"):
            assert name in " ".join(names.split()), names
        assert "latency" in " ".join(names.split()), names


def test_the_best_configurations_fit_80_columns_with_every_word_whole() -> None:
    from rich.console import Console

    from nictune.cli import results

    config = {"app_cpu": "numa-local", "buffers": "large", "irq_affinity": "socket", "mtu": 9000,
              "netdev_max_backlog": 30000, "rx_mode": "adaptive", "rx_ring": 8192, "txqueuelen": 50000}
    rows = [{"config_hash": f"{i}7ddb58f757ea03d1b4d0", "config": config, "value": 39.6 - i, "feasible": True,
             "measurements": 3, "jobs": [1, 2], "interval": {"low": 38.6 - i, "high": 40.6 - i}} for i in range(2)]
    console = Console(width=80, record=True, color_system=None)
    original = results.console
    results.console = console
    try:
        results.print_best(rows, "best throughput on sim:benson-40g, workload tcp", "throughput", simulated=True)
    finally:
        results.console = original
    out = console.export_text()
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= 80 for line in table), out
    assert "measurements" in table[1].split("┃"), out  # the header whole, not "measurement" / "s"
    # Each row's configuration, put together again: broken only at spaces (dropped) and after
    # the characters a break may follow (kept), never inside a word.
    pieces = [line.split("│")[-2].strip() for line in table if line.startswith("│")]
    shown, cell = [], ""
    for piece in pieces:
        if piece.startswith("app_cpu=") and cell:
            shown.append(cell)
            cell = ""
        cell += piece if not cell or cell[-1] in "-:/+,_=" else " " + piece
    shown.append(cell)
    assert shown == [" ".join(f"{k}={v}" for k, v in config.items())] * 2, out
