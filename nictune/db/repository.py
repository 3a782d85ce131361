"""Repository functions: every write nictune makes to its history, and its queries.

Plain functions taking a :class:`~sqlalchemy.orm.Session`; none of them commits. Run
them inside :func:`~nictune.db.session.session_scope`, which commits the whole block or
nothing. Database errors leave every function here as
:class:`~nictune.errors.StorageError`.

They live in small modules by subject (:mod:`~nictune.db.entities`,
:mod:`~nictune.db.jobs`, :mod:`~nictune.db.trials`, :mod:`~nictune.db.queries`); this
module is the one place to import them from.
"""

from __future__ import annotations

from nictune.db.entities import (
    get_or_create_configuration,
    get_or_create_testbed,
    get_or_create_workload,
    workload_names,
)
from nictune.db.jobs import create_job, delete_job, get_job, set_job_state
from nictune.db.queries import (
    MeasurementTotals,
    cached_samples,
    configuration_measurements,
    context_trials,
    list_jobs,
    measurement_totals,
    resolve_configuration,
)
from nictune.db.trials import (
    Sample,
    TrialSummaryRow,
    add_measurements,
    complete_trial,
    fail_trial,
    job_trial_summaries,
    job_trials,
    reset_running_trials,
    start_trial,
)

__all__ = [
    "MeasurementTotals",
    "Sample",
    "TrialSummaryRow",
    "add_measurements",
    "cached_samples",
    "complete_trial",
    "configuration_measurements",
    "context_trials",
    "create_job",
    "delete_job",
    "fail_trial",
    "get_job",
    "get_or_create_configuration",
    "get_or_create_testbed",
    "get_or_create_workload",
    "job_trial_summaries",
    "job_trials",
    "list_jobs",
    "measurement_totals",
    "reset_running_trials",
    "resolve_configuration",
    "set_job_state",
    "start_trial",
    "workload_names",
]
