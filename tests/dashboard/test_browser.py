"""The dashboard in headless Chromium (Debian's ``chromium``, driven by Playwright) against the real service.

The service runs in a subprocess (uvicorn on 127.0.0.1, a temporary SQLite file, trials slowed
down by a trial hook: :mod:`tests.api.pacing`) with the dashboard routers included. A job on
``sim:benson-40g`` is submitted through the API; the browser opens the job list, opens the running job, sees
its progress advance and its convergence chart drawn, sorts the trials, downloads an export, and
saves screenshots under the test's temporary directory (and in /tmp/nictune-screens/ with
``NICTUNE_SCREENSHOTS=1``): the job page, a Pareto job's page and the history page.

Issue 33: every page fits 1280 px without horizontal scrolling, a trial is shown by the knobs it
changed, metrics carry their label and unit, and numbers print exactly as the CLI prints them
(js/format.js checked on the same table of cases as nictune.formatting.format_number).

Without Chromium or Playwright the tests are skipped, unless ``$CI`` is set: then they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from nictune.cli import token as token_cli
from nictune.formatting import format_interval, format_number
from tests.api.server import Server, free_port
from tests.dashboard.format_cases import format_cases, interval_cases
from tests.environment import unavailable

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("NICTUNE_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Pause after every trial, so the job is still running while the browser watches.
TRIAL_DELAY_S = 0.25
#: The width the pages must fit without horizontal scrolling.
VIEWPORT = {"width": 1280, "height": 900}
#: Where screenshots are copied for a person to look at when NICTUNE_SCREENSHOTS=1.
SCREENS = Path("/tmp/nictune-screens")


def _require_browser() -> Any:
    """The Playwright module, or skip (fail under CI) when it or Chromium is missing."""
    problem = None
    sync_api: Any = None
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api as sync_api
    except ImportError:
        problem = problem or "the playwright package is not installed (pip install playwright)"
    if problem:
        unavailable(problem)
    return sync_api


@contextmanager
def dashboard_server(db_url: str, log: Path, *, trial_delay_s: float, timeout: float = 30.0) -> Iterator[Server]:
    """The service with the dashboard (tests/dashboard/serve_app.py) on 127.0.0.1; SIGTERM at the end."""
    port = free_port()
    command = [sys.executable, "-m", "tests.dashboard.serve_app", "--port", str(port), "--db", db_url,
               "--trial-delay", str(trial_delay_s)]
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer within {timeout}s:\n{log.read_text()}")
            time.sleep(0.05)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


def wait_until(page: Any, predicate: str, timeout: float = 15.0) -> Any:
    """Poll ``predicate`` (a JavaScript function source) in the page until it returns a truthy value.

    ``page.wait_for_function`` evaluates its predicate with ``eval``, which the dashboard's
    Content-Security-Policy forbids; ``page.evaluate`` goes through the DevTools protocol.
    A view is drawn on the ``hashchange`` after a click, so a predicate must read its element
    with ``?.``: right after the click the element may not exist yet.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(predicate)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout}s: {predicate}")
        time.sleep(0.1)


def save_screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """A full-page screenshot under the test's directory (copied to SCREENS with NICTUNE_SCREENSHOTS=1)."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("NICTUNE_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENS / name)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def assert_fits(page: Any, width: int = VIEWPORT["width"]) -> None:
    """The page needs no horizontal scrolling, and no table scrolls inside its own box either
    (a column cut off at the right edge of a scroll box is as hidden as one off the page)."""
    sizes = page.evaluate("""() => ({page: document.documentElement.scrollWidth,
        boxes: [...document.querySelectorAll('#view .scroll')].filter((e) => e.offsetParent !== null)
                 .map((e) => [e.closest('[id]')?.id, e.scrollWidth, e.clientWidth])})""")
    assert sizes["page"] <= width, sizes
    assert all(scroll <= client for _, scroll, client in sizes["boxes"]), sizes


def expected_changes(config: dict[str, Any], default: dict[str, Any]) -> list[str]:
    """``knob=value`` for each knob ``config`` sets differently from the job's default (the API's
    GET /v1/jobs/ID/default), as the dashboard spells it."""
    def text(v: Any) -> str:
        return ("on" if v else "off") if isinstance(v, bool) else str(v)
    return [f"{k}={text(v)}" for k, v in config.items() if default["config"].get(k, object()) != v]


def assert_trials_show_their_changes(page: Any, trials: list[dict[str, Any]], default: dict[str, Any]) -> None:
    """Each row of the trials table names the knobs its trial changed (the hash only in a tooltip)."""
    page.wait_for_selector("#trials td .changes")
    index = page.eval_on_selector("#trials thead tr",
                                  "tr => [...tr.children].findIndex(th => th.dataset.key === 'changes')")
    cells = dict(page.eval_on_selector_all(
        "#trials tbody tr", f"rows => rows.map(r => [r.children[0].textContent, r.children[{index}].textContent])"))
    assert len(cells) == len(trials)
    for trial in trials:
        cell = cells[str(trial["number"])]
        wanted = expected_changes(trial["config"], default)
        if wanted:  # in the space's order, which the test does not know: compared as a set
            assert sorted(cell.split(" ")) == sorted(wanted), (trial["number"], wanted, cell)
        else:
            assert cell == "default configuration", (trial["number"], cell)
        assert trial["config_hash"][:12] not in cell
    assert any("mtu=9000" in cell.split(" ") for cell in cells.values()), cells  # a trial that set it


def cli_token(db_url: str, role: str, name: str) -> str:
    """A token made by ``nictune token create``."""
    result = CliRunner().invoke(token_cli.app, ["create", "--role", role, "--name", name, "--db", db_url])
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[0]


@dataclass(frozen=True)
class Service:
    """The running service and the tokens of its database."""

    server: Server
    submit_token: str
    read_token: str


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service for the module's tests (starting it takes seconds)."""
    _require_browser()
    folder = tmp_path_factory.mktemp("dashboard-service")
    db_url = f"sqlite:///{folder / 'nictune.db'}"
    submit_token = cli_token(db_url, "submit", "ci")
    read_token = cli_token(db_url, "read", "dashboard")
    with dashboard_server(db_url, folder / "server.log", trial_delay_s=TRIAL_DELAY_S) as server:
        yield Service(server, submit_token, read_token)
    log = (folder / "server.log").read_text()
    assert "Traceback" not in log, log


def test_the_dashboard_follows_a_running_job(service: Service, tmp_path: Path) -> None:
    sync_api = _require_browser()
    server, read_token = service.server, service.read_token
    screenshot = tmp_path / "dashboard-job.png"

    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {service.submit_token}"}) as api:
        created = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 400, "repeats": 1, "seed": 5})
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]

        with sync_api.sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport=VIEWPORT, accept_downloads=True)
            try:
                page = context.new_page()
                requests: list[str] = []
                errors: list[str] = []
                page.on("request", lambda r: requests.append(r.url))
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
                page.on("dialog", lambda d: d.accept())
                page.set_default_timeout(15_000)

                # No token yet: the list says how to get one.
                page.goto(f"{server.url}/#/jobs")
                wait_until(page, "() => document.querySelector('#jobs-status')?.textContent.includes('token')")

                # The token box: the job list shows the job with its state and progress.
                page.fill("#token-input", read_token)
                page.click("#login button[type=submit]")
                link = page.wait_for_selector(f"#jobs a.job-link[href='#/jobs/{job_id}']")
                row = page.locator("#jobs tbody tr", has=page.locator(f"a[href='#/jobs/{job_id}']"))
                assert "simulated (a model)" in row.inner_text()
                assert row.locator("progress").count() == 1
                assert row.locator("[data-state]").inner_text() in ("pending", "running")
                assert_fits(page)  # every column of the job list, at 1280 px

                # The job page: progress advances live (from the event stream).
                link.click()
                wait_until(page, "() => document.querySelector('#job-progress')?.value >= 2")
                first = page.eval_on_selector("#job-progress", "e => e.value")
                wait_until(page, f"() => document.querySelector('#job-progress')?.value > {first}")
                second = page.eval_on_selector("#job-progress", "e => e.value")
                assert second > first
                assert page.get_attribute("#live", "data-live") == "live"
                assert page.eval_on_selector("#job-progress", "e => e.max") == 400
                assert "simulated (a model)" in page.inner_text("#job-badges")

                # The convergence chart: one dot per completed trial, the best-so-far line, the default line.
                wait_until(page, "() => document.querySelectorAll('#convergence circle.pt:not(.legend *)').length >= 3")
                drawn = page.eval_on_selector("#convergence", "e => Number(e.dataset.points)")
                assert drawn >= 3
                assert page.locator("#convergence path.best-line").count() >= 1
                assert page.locator("#convergence .default-ref line.default-line").count() == 1
                wait_until(page, f"() => Number(document.querySelector('#convergence')?.dataset.points) > {drawn}")

                # Default vs best, and the best so far.
                compare = page.inner_text("#default-vs-best")
                assert "Default" in compare and "Best" in compare and "throughput (Gbit/s)" in compare
                assert "throughput_gbps" not in compare  # labels and units, not code names
                assert "Gbit/s" in page.inner_text("#best-so-far")

                # The trials table sorts by any column: throughput, descending after two clicks.
                header = page.locator("#trials th[data-key='m:throughput_gbps'] button")
                header.click()
                header.click()
                assert page.get_attribute("#trials th[data-key='m:throughput_gbps']", "aria-sort") == "descending"
                index = page.eval_on_selector("#trials thead tr", "tr => [...tr.children].findIndex("
                                                                  "th => th.dataset.key === 'm:throughput_gbps')")
                values = page.eval_on_selector_all(
                    "#trials tbody tr",
                    f"rows => rows.map(r => Number(r.children[{index}].textContent.replace(/,/g, '')))")
                assert len(values) >= 3 and values == sorted(values, reverse=True)
                # Headers from nictune's metric definitions; the drop counters in one column, all in 1280 px.
                headers = page.eval_on_selector_all("#trials thead th", "ths => ths.map(th => th.textContent)")
                assert "throughput (Gbit/s) ★" in headers[1] and "interrupts (per GB)" in headers
                assert "drops (per run)" in headers and not any("_" in h for h in headers), headers
                assert not any("latency" in h for h in headers)  # a tcp job measures no latency
                assert_fits(page)

                # An export download (fetched with the token, saved by the browser).
                with page.expect_download() as download_info:
                    page.click("#export-buttons button[data-format='json']")
                download = download_info.value
                assert download.suggested_filename == f"nictune-job{job_id}.json"
                saved = tmp_path / download.suggested_filename
                download.save_as(saved)
                document = json.loads(saved.read_text())
                assert document["job_id"] == job_id and document["testbed"]["simulated"] is True

                # A read token may not cancel: the page says so (403).
                page.click("#cancel")
                wait_until(page, "() => document.querySelector('#notice')?.textContent.includes('may not')")

                save_screenshot(page, tmp_path, screenshot.name)

                # The history page: best configurations per testbed and workload.
                page.goto(f"{server.url}/#/history")
                card = ".testbed-card[data-testbed='sim:benson-40g']"
                assert page.wait_for_selector(f"{card} .workload[data-workload='tcp'] table") is not None
                assert "simulated (a model)" in page.inner_text(card)
                assert "90% CI" in page.inner_text(card) and "±" in page.inner_text(card)
                check_history_ranking(page, api, card)
                page.wait_for_selector(f"{card} .workload[data-workload='tcp'] td .changes")
                assert_fits(page)
                save_screenshot(page, tmp_path, "dashboard-history.png")

                assert not errors, errors
                assert requests and all(url.startswith(f"{server.url}/") for url in requests), requests
            finally:
                context.close()

        cancelled = api.post(f"/v1/jobs/{job_id}/cancel")
        assert cancelled.status_code in (200, 202), cancelled.text

    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 10_000


def check_history_ranking(page: Any, api: httpx.Client, card: str) -> None:
    """The history page says configurations are ranked by the lower confidence bound, and its rows
    are in that order; every interval prints as format_number prints it (as the CLI does)."""
    text = " ".join(page.inner_text("#history-ranking").split())
    assert "ranked by the interval's conservative end: the lower confidence bound when higher is better" in text
    assert "scored on the mean" not in text
    best = api.get("/v1/history/best", params={"testbed": "sim:benson-40g", "workload": "tcp",
                                               "objective": "throughput", "top": 10}).json()
    table = f"{card} .workload[data-workload='tcp'] table"
    rows = page.eval_on_selector_all(f"{table} tbody tr",
                                     "rows => rows.map(r => [...r.children].map(c => c.textContent))")
    heads = page.eval_on_selector_all(f"{table} thead th", "ths => ths.map(th => th.dataset.key)")
    assert heads[:3] == ["rank", "value", "bound"]
    # A job runs beside this page: the history may have gained a configuration between the
    # page's request and this one (it never loses one), up to the top 10 both ask for.
    assert 2 <= len(rows) <= len(best["items"]) <= 10, (rows, best["items"])
    lows = [item["interval"]["low"] for item in best["items"]]
    assert lows == sorted(lows, reverse=True)  # what the API ranks by ...
    # ... is the column the page ranks by (a job still runs beside this page, so the figures may
    # have moved between the page's request and this one: the page is checked on its own rows).
    shown = [float(row[2].replace(",", "")) for row in rows]
    assert shown == sorted(shown, reverse=True), rows
    for i, row in enumerate(rows, 1):
        assert row[0] == str(i)
        assert re.fullmatch(r"-?[\d,]+(\.\d+)? ± [\d,.e+-]+", row[1]), row  # formatInterval (test_format_number)


def _finished_job(service: Service, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Submit a job through the API, wait until it completes; the job and its trials."""
    with httpx.Client(base_url=service.server.url, headers={"Authorization": f"Bearer {service.submit_token}"}) as api:
        created = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", **body})
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]
        deadline = time.monotonic() + 240  # it may queue behind the running job of another test
        while (job := api.get(f"/v1/jobs/{job_id}").json())["state"] != "completed":
            assert job["state"] in ("pending", "running") and time.monotonic() < deadline, job
            time.sleep(0.2)
        trials = api.get(f"/v1/jobs/{job_id}/trials", params={"limit": 100}).json()["items"]
    return job, trials


def _default_of(service: Service, job_id: int) -> dict[str, Any]:
    """GET /v1/jobs/ID/default: the default configuration of the job's space."""
    answer = httpx.get(f"{service.server.url}/v1/jobs/{job_id}/default",
                       headers={"Authorization": f"Bearer {service.read_token}"})
    assert answer.status_code == 200, answer.text
    default: dict[str, Any] = answer.json()
    return default


@contextmanager
def _job_page(service: Service, tmp_path: Path, job_id: int) -> Iterator[Any]:
    """Chromium on the dashboard, logged in with the read token, on the page of ``job_id``."""
    sync_api = _require_browser()
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport=VIEWPORT)
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.set_default_timeout(15_000)
            page.goto(f"{service.server.url}/#/jobs")
            page.fill("#token-input", service.read_token)
            page.click("#login button[type=submit]")
            page.wait_for_selector(f"#jobs a.job-link[href='#/jobs/{job_id}']").click()
            yield page
            assert errors == [], errors  # no script error on the way
        finally:
            context.close()


def test_a_finished_job_shows_its_recommendation_with_its_interval(service: Service, tmp_path: Path) -> None:
    """The page's headline is the job's recommendation (best lower confidence bound), as the
    CLI and the API give it, not the luckiest single run."""
    _require_browser()
    job, trials = _finished_job(service, {"budget": 8, "seed": 3})
    default = _default_of(service, job["id"])
    rec = job["recommendation"]
    assert rec and rec["n"] >= 2 and job["noise"]["objective"]["cv"] > 0

    with _job_page(service, tmp_path, job["id"]) as page:
        wait_until(page, "() => document.querySelector('#best-so-far')?.textContent.includes('Recommended')")
        headline = page.inner_text("#best-so-far")
        mean = page.evaluate("() => document.querySelector('#best-value').textContent")
        # The interval as the CLI prints it (format_interval: the same rounding as `optimize`).
        assert mean == f"{format_interval(rec['mean'], (rec['high'] - rec['low']) / 2)} Gbit/s"
        assert f"n={rec['n']}, 90% CI" in headline and f"trial {rec['number']}" in headline
        assert f"{job['noise']['objective']['cv'] * 100:.1f} % coefficient of variation" in headline
        # Default vs best is drawn once the default configuration has loaded.
        wait_until(page, "() => document.querySelector('#default-vs-best')?.textContent.includes('Recommended')")
        assert page.locator("#front-card").is_hidden()  # one objective: no Pareto front
        # The job's notice: the model of sim:benson-40g has no term for the space's tx_ring.
        assert job["notices"] and job["notices"][0] in " ".join(page.inner_text("body").split())
        # What racing did, not "8 trials x 3 repeats": the benchmark runs the job made.
        facts = " ".join(page.inner_text("#job-facts").split())
        assert job["racing"] and job["runs"] and f"{job['runs']} benchmark runs" in facts and "×" not in facts
        assert f"8 trials ({job['progress']['measured']} measured, {job['progress']['cached']} from the cache)" in facts
        assert_trials_show_their_changes(page, trials, default)
        assert "breaks a constraint" not in (page.text_content("#convergence .legend") or "")  # the job has none
        assert_fits(page)
        save_screenshot(page, tmp_path, "dashboard-finished-job.png")


def test_a_two_objective_job_shows_its_pareto_front(service: Service, tmp_path: Path) -> None:
    """The front the API returns, as a table, highlighted in a scatter of every trial and in
    the trials table."""
    _require_browser()
    job, trials = _finished_job(service, {"objectives": ["throughput", "interrupts"], "budget": 10, "seed": 4})
    default = _default_of(service, job["id"])
    front = sorted(f["number"] for f in job["front"])
    completed = [t for t in trials if t["state"] == "completed"]
    assert 1 <= len(front) < len(completed)
    recommended = job["recommendation"]["number"]
    assert recommended in front
    # Log axes where the values span more than 100x (the default's point included).
    points = [t["metrics"] for t in completed] + ([default["trial"]["metrics"]] if default["trial"] else [])
    throughput = [m["throughput_gbps"] for m in points]
    per_gb = [m["interrupts_per_gb"] for m in points]

    with _job_page(service, tmp_path, job["id"]) as page:
        page.wait_for_selector("#front-table tbody tr")
        assert sorted(int(n) for n in page.eval_on_selector_all(
            "#front-table tbody tr", "rows => rows.map(r => r.dataset.trial)")) == front
        header = " ".join(page.inner_text("#front-table thead").split())
        assert "throughput (Gbit/s)" in header and "interrupts per GB (interrupts/GB)" in header
        # The front comes first, right under the job's facts; the recommended member is marked.
        order = page.evaluate("() => [...document.querySelectorAll('#view > section')].map(s => s.id || "
                              "s.querySelector('[id]')?.id)")
        assert order.index("front-card") == 1, order
        assert page.get_attribute("#front-table tr.recommended", "data-trial") == str(recommended)
        assert page.get_attribute("#pareto .recommended", "data-trial") == str(recommended)
        assert page.locator("#pareto .default-pt").count() == (1 if default["trial"] else 0)
        legend = page.text_content("#pareto .legend") or ""
        assert "recommended" in legend and "breaks a constraint" not in legend  # no constraint: no such entry
        for axis, values in (("xscale", throughput), ("yscale", per_gb)):
            wanted = "log" if max(values) / min(values) > 100 else "linear"
            assert page.get_attribute("#pareto", f"data-{axis}") == wanted, (axis, min(values), max(values))
        # The trials table shows the objective in its unit: interrupts per GB, not per second.
        page.wait_for_selector("#trials th[data-key='m:interrupts_per_gb']")
        assert "interrupts per GB (interrupts/GB) ★" in page.inner_text("#trials th[data-key='m:interrupts_per_gb']")
        cells = page.eval_on_selector_all(
            "#trials tbody tr", "rows => rows.map(r => r.children[[...r.closest('table').querySelectorAll('thead th')]"
                                ".findIndex(th => th.dataset.key === 'm:interrupts_per_gb')].textContent)")
        assert sorted(cells) == sorted(format_number(t["metrics"]["interrupts_per_gb"]) for t in completed)
        assert_trials_show_their_changes(page, completed, default)
        assert page.get_attribute("#pareto", "data-front") == str(len(front))
        assert page.get_attribute("#pareto", "data-points") == str(len(completed))
        assert f"{len(front)} configuration" in page.inner_text("#front-info")
        wait_until(page, f"() => document.querySelectorAll('#trials tbody tr.on-front').length === {len(front)}")
        assert_fits(page)
        save_screenshot(page, tmp_path, "dashboard-pareto-front.png")


def test_a_job_whose_engine_ran_out_says_so_by_its_progress(service: Service, tmp_path: Path) -> None:
    """sim:ixgbe-10g's space has 8 configurations: at a budget of 20 the bar stops at 8 of 20,
    and the line next to it says why."""
    _require_browser()
    job, _ = _finished_job(service, {"testbed": "sim:ixgbe-10g", "budget": 20, "seed": 1})
    assert job["engine_done_at"] == 8

    with _job_page(service, tmp_path, job["id"]) as page:
        wait_until(page, "() => document.querySelector('#progress-text')?.textContent.includes('nothing left')")
        text = page.inner_text("#progress-text")
        assert text.startswith("8 / 20 trials") and "nothing left to propose after 8 trials" in text


@pytest.fixture(scope="module")
def blank_page(service: Service) -> Iterator[Any]:
    """A Chromium page on the dashboard (no token), for the tests of its pure JavaScript modules."""
    sync_api = _require_browser()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{service.server.url}/")
            yield page
        finally:
            browser.close()


def test_the_dashboard_formats_numbers_as_the_cli_does(blank_page: Any) -> None:
    """js/format.js on the table of cases format_number is tested on (test_format_number.py):
    the same text for every value, ties rounded to even as Python does."""
    cases = format_cases()
    got = blank_page.evaluate("""async (values) => {
        const {formatNumber} = await import('./static/js/format.js');
        const special = {nan: NaN, inf: Infinity, '-inf': -Infinity};
        return values.map((v) => formatNumber(typeof v === 'string' ? special[v] : v));
    }""", [c["value"] for c in cases])
    assert [(c["value"], text) for c, text in zip(cases, got, strict=True)] == [(c["value"], c["text"]) for c in cases]
    intervals = interval_cases()
    shown = blank_page.evaluate("""async (pairs) => {
        const {formatInterval} = await import('./static/js/format.js');
        return pairs.map(([mean, half]) => formatInterval(mean, half));
    }""", [[c["mean"], c["half"]] for c in intervals])
    assert shown == [c["text"] for c in intervals]


def test_the_event_stream_parser(blank_page: Any) -> None:
    """The dashboard's SSE parser (js/sse.js), run in Chromium on frames split at awkward places."""
    stream = ('id: 0\r\nevent: trial\r\ndata: {"number":0}\r\n\r\n'
              ": keep-alive\n\n"
              "event: state\ndata: {\"state\":\n"
              "data: \"running\"}\n\n"
              "retry: 2500\nid: 7\nevent: trial\ndata:{\"number\":7}\r\r"
              "event: ignored-without-data\n\n"
              "event: end\ndata: {\"state\":\"completed\"}\n\n"
              "event: trial\ndata: {\"cut\": true}")  # no closing blank line: never dispatched
    expected = [{"type": "trial", "data": '{"number":0}', "id": "0"},
                {"type": "state", "data": '{"state":\n"running"}', "id": "0"},
                {"type": "trial", "data": '{"number":7}', "id": "7"},
                {"type": "end", "data": '{"state":"completed"}', "id": "7"}]
    script = """async ([text, sizes]) => {
        const {SseParser} = await import('./static/js/sse.js');
        const runs = [];
        for (const size of sizes) {
            const events = [];
            const parser = new SseParser((e) => events.push(e));
            for (let i = 0; i < text.length; i += size) parser.push(text.slice(i, i + size));
            parser.end();
            runs.push({events, retry: parser.retry});
        }
        return runs;
    }"""
    runs = blank_page.evaluate(script, [stream, [1, 2, 3, 7, 13, len(stream)]])
    for run in runs:
        assert run["events"] == expected
        assert run["retry"] == 2500


def test_a_read_refused_with_429_is_tried_again_after_retry_after_and_a_submission_is_not(blank_page: Any) -> None:
    """js/api.js: the service answers 429 when a token has too many requests in progress
    (several tabs); the dashboard waits Retry-After and asks again instead of showing an error,
    and never sends a POST twice."""
    got = blank_page.evaluate("""async () => {
        const {api, ApiError} = await import('./static/js/api.js');
        const realFetch = window.fetch;
        const calls = [];
        const answers = (plan) => async (url, init) => {
            calls.push([init.method, new URL(url).pathname, performance.now()]);
            const status = plan.shift();
            return new Response(JSON.stringify(status === 200 ? {ok: true} : {error: "too_many_requests",
                                message: "busy", field: "token"}),
                                {status, headers: {"Content-Type": "application/json", "Retry-After": "1"}});
        };
        try {
            window.fetch = answers([429, 429, 200]);
            const read = await api('/v1/jobs');
            const readCalls = calls.splice(0);
            window.fetch = answers([429, 200]);
            let posted = null;
            try { await api('/v1/jobs', {method: 'POST', body: {budget: 1}}); }
            catch (err) { posted = err instanceof ApiError ? err.status : String(err); }
            const postCalls = calls.splice(0);
            window.fetch = answers([429, 429, 429, 429, 429, 429, 429]);
            let gaveUp = null;
            try { await api('/v1/spaces'); } catch (err) { gaveUp = err.status; }
            return {read, reads: readCalls.length, waited: readCalls[2][2] - readCalls[0][2],
                    posted, posts: postCalls.length, gaveUp, tries: calls.length};
        } finally {
            window.fetch = realFetch;
        }
    }""")
    assert got["read"] == {"ok": True} and got["reads"] == 3 and got["waited"] >= 1900, got
    assert got["posted"] == 429 and got["posts"] == 1, got
    assert got["gaveUp"] == 429 and got["tries"] == 6, got
