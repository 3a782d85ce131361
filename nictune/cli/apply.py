"""``nictune apply`` and ``nictune restore``: put a found configuration on a testbed, and take it off."""

from __future__ import annotations

import typer

from nictune.cli._common import console, err_console
from nictune.cli.dbopt import DB_OPTION, open_db
from nictune.errors import InvalidInputError, NotFoundError, RestoreError
from nictune.jobs import job_report, trial_rows
from nictune.jobs.runner import INT32_MAX
from nictune.measure.testbeds import open_testbed
from nictune.search_spaces import space_from_dict


def register(app: typer.Typer) -> None:
    app.command("apply")(apply)
    app.command("restore")(restore)


def apply(
    job_id: int = typer.Argument(..., min=1, max=INT32_MAX, help="Job whose configuration to apply."),
    testbed: str = typer.Option(..., "--testbed", "-t", help="veth:NAME or a pair YAML file (a real testbed)."),
    trial: int | None = typer.Option(None, "--trial", help="Apply this trial's configuration instead of the best."),
    db_url: str | None = DB_OPTION,
) -> None:
    """Apply a job's best configuration (or --trial N) to a testbed and keep it.

    The previous values are journaled: `nictune restore --testbed T` brings them back.
    """
    from nictune import db
    from nictune.measure.trial.keep import keep_settings

    if testbed.startswith("sim:"):
        raise InvalidInputError("a simulated testbed has no settings to apply; name a real testbed",
                                field="testbed", allowed="veth:NAME or a pair YAML file")
    dbe = open_db(db_url, must_exist=True)
    report = job_report(dbe, job_id)
    if trial is None:
        if not report.get("best"):
            raise InvalidInputError(f"job {job_id} has no completed trial to apply", field="job_id")
        config, number = report["best_config"], report["best"]["number"]
    else:
        with db.session_scope(dbe) as s:
            rows = {r["number"]: r for r in trial_rows(db.job_trial_summaries(s, job_id))}
        if trial not in rows:
            raise NotFoundError(f"job {job_id} has no trial {trial}", field="trial",
                                allowed=f"0..{max(rows) if rows else 0}")
        config, number = dict(rows[trial]["config"]), trial
    with db.session_scope(dbe) as s:
        space = space_from_dict(dict(db.get_job(s, job_id).space_definition))
    settings = space.settings(space.configuration(config, strict=False))
    with open_testbed(testbed) as bed:
        for notice in bed.notices:
            err_console.print(notice)
        pair = getattr(bed, "pair", None)
        if pair is not None and not pair.exists():
            raise InvalidInputError(f"{testbed} does not exist; create it with nictune testbed up --name "
                                    f"{pair.name}", field="testbed")
        lines = keep_settings(bed.endpoints(), settings, bed.journal_key)  # type: ignore[attr-defined]
        name = bed.name
    console.print(f"applied job {job_id} trial {number} to {name} and kept it:")
    for line in lines:
        console.print(f"  {line}")
    console.print(f"undo with: nictune restore --testbed {name}")


def restore(
    testbed: str = typer.Option(..., "--testbed", "-t", help="The testbed given to nictune apply."),
) -> None:
    """Bring back the values a `nictune apply` replaced on a testbed.

    With nothing applied there it says so and exits 0, so a cleanup step can always run it.
    A value that cannot be put back is an error (exit 1); the journal keeps it for a retry.
    """
    from nictune.measure.trial.keep import restore_kept

    keys: list[str] = []
    if testbed.endswith((".yaml", ".yml")):
        with open_testbed(testbed) as bed:
            # The pair's key; a configuration kept before 2026-11-28 was kept under the file's path.
            name, keys = bed.name, [bed.journal_key, bed.name]
    else:
        name = "veth:nt0" if testbed == "veth" else testbed
        if name.startswith("veth:"):
            from nictune.measure.testbeds import check_pair_name

            check_pair_name(name.partition(":")[2])
    report = None
    for key in dict.fromkeys(keys or [name]):
        report = restore_kept(key)
        if report is not None:
            break
    if report is None:
        # Idempotent, as TuneD's "off": a cleanup step may run it whether or not apply did.
        console.print(f"nothing to restore on {name}: no configuration applied there (nictune apply keeps one)")
        return
    if not report.ok:
        raise RestoreError(f"restore on {name} incomplete: {'; '.join(report.errors) or report.skipped}")
    console.print(f"restored {name}:")
    for line in report.restored:
        console.print(f"  {line}")
