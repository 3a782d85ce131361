"""Jobs: the loop that joins engines, testbeds and the database, and what a job found."""

from nictune.jobs.report import job_header, job_report, trial_rows
from nictune.jobs.runner import JobOutcome, JobRunner, JobSpec, TrialEvent, create_job

__all__ = ["JobOutcome", "JobRunner", "JobSpec", "TrialEvent", "create_job", "job_header", "job_report", "trial_rows"]
