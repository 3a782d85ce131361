"""``optimize --dry-run``: the checks a job gets, then what its first configurations would do
on the testbed, with no job stored and nothing changed."""

from __future__ import annotations

from nictune.executors import LocalExecutor
from nictune.jobs.runner import JobSpec, _local_executor, check_spec, start_configs
from nictune.measure.testbeds import open_testbed
from nictune.measure.trial.dryrun import DryRun

#: How many of a job's start configurations a dry run shows (default, then baseline).
FIRST_CONFIGURATIONS = 2


def dry_run_job(spec: JobSpec, count: int = FIRST_CONFIGURATIONS) -> DryRun:
    """Check ``spec`` as :func:`~nictune.jobs.runner.create_job` does and plan the first
    ``count`` configurations the job would measure; no database is touched.

    Raises:
        InvalidInputError: naming the field at fault.
        MeasurementError: a read on a host failed.
    """
    if spec.testbed.startswith("pool:"):
        _local_executor(spec.testbed, spec.noise)  # raises: a pool's workers are the service's
    # A dry run restores no crash journal (it says there is one) and creates no veth pair.
    bed = open_testbed(spec.testbed, noise=spec.noise, recover_journal=False)
    with LocalExecutor(bed) as executor:
        pair = getattr(bed, "pair", None)
        checked = check_spec(spec, executor, probe=pair is None or pair.exists())
        space = checked.space
        firsts = start_configs(space)[:count]
        names = ["default", "baseline"]
        run = bed.dry_run([(names[i], space.settings(c)) for i, c in enumerate(firsts)], checked.workload,
                          spec.repeats)
        for plan, config in zip(run.trials, firsts, strict=True):
            plan.config = config.as_dict()
        run.notes.append(f"job: {checked.engine} on space {space.name}, objective {', '.join(spec.objectives)}, "
                         f"budget {spec.budget}; the first {len(firsts)} configuration(s) it measures are below "
                         "(nothing stored, no job created)")
        if spec.warm_start:
            run.notes.append("with --warm-start a job may first take configurations measured earlier on this "
                             "testbed from the cache; those are not measured again")
        return run
