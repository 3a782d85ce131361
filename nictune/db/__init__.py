"""nictune's history: SQLAlchemy models, sessions, repository functions, migrations.

Typical use::

    engine = open_database()            # creates or upgrades the schema
    with session_scope(engine) as s:    # one transaction
        job = get_job(s, 12)
"""

from __future__ import annotations

from nictune.db import auth  # noqa: F401 - registers the api_tokens table on Base.metadata
from nictune.db._json import canonical_json, content_hash
from nictune.db.migrate import alembic_config, current_revision, head_revision, open_database, upgrade
from nictune.db.models import (
    MAIN_METRICS,
    TESTBED_KINDS,
    Base,
    Configuration,
    Job,
    JobState,
    Measurement,
    Testbed,
    Trial,
    TrialItem,
    TrialLandmark,
    TrialSource,
    TrialState,
    Workload,
    config_stats,
)
from nictune.db.repository import (
    MeasurementTotals,
    Sample,
    TrialSummaryRow,
    add_measurements,
    cached_samples,
    complete_trial,
    configuration_measurements,
    context_trials,
    create_job,
    delete_job,
    fail_trial,
    get_job,
    get_or_create_configuration,
    get_or_create_testbed,
    get_or_create_workload,
    job_trial_summaries,
    job_trials,
    list_jobs,
    measurement_totals,
    reset_running_trials,
    resolve_configuration,
    set_job_state,
    start_trial,
    workload_names,
)
from nictune.db.session import connection_scope, default_url, make_engine, resolve_url, session_scope, sqlite_path
from nictune.db.trial_item import clean_score, finite, item_json, trial_item

__all__ = [
    "MAIN_METRICS",
    "TESTBED_KINDS",
    "Base",
    "Configuration",
    "Job",
    "JobState",
    "Measurement",
    "MeasurementTotals",
    "Sample",
    "Testbed",
    "Trial",
    "TrialItem",
    "TrialLandmark",
    "TrialSource",
    "TrialState",
    "TrialSummaryRow",
    "Workload",
    "add_measurements",
    "alembic_config",
    "cached_samples",
    "canonical_json",
    "clean_score",
    "complete_trial",
    "config_stats",
    "configuration_measurements",
    "connection_scope",
    "content_hash",
    "context_trials",
    "create_job",
    "current_revision",
    "default_url",
    "delete_job",
    "fail_trial",
    "finite",
    "get_job",
    "get_or_create_configuration",
    "get_or_create_testbed",
    "get_or_create_workload",
    "head_revision",
    "item_json",
    "job_trial_summaries",
    "job_trials",
    "list_jobs",
    "make_engine",
    "measurement_totals",
    "open_database",
    "reset_running_trials",
    "resolve_configuration",
    "resolve_url",
    "session_scope",
    "set_job_state",
    "sqlite_path",
    "start_trial",
    "trial_item",
    "upgrade",
    "workload_names",
]
