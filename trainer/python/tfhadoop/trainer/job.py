"""The Python API of a training job, in one import: ``JobSpec(...)`` or ``JobSpec.from_yaml``,
``submit`` and ``follow`` (README, "Python API"). Each lives in the module of its role: ``spec``
(the settings), ``submit`` (the Skein application) and ``follow`` (progress to the end).
"""
from __future__ import annotations

from tfhadoop.trainer.follow import follow
from tfhadoop.trainer.spec import DEFAULT_PHASE_TIMEOUTS, JobSettings, JobSpec, mebibytes
from tfhadoop.trainer.submit import application_spec, pack_python_path, submit, tracking_url

__all__ = ["DEFAULT_PHASE_TIMEOUTS", "JobSettings", "JobSpec", "application_spec", "follow", "job_settings",
           "mebibytes", "pack_python_path", "submit", "tracking_url"]


def job_settings(job: dict) -> dict:
    """``job.json`` over the JobSpec's defaults, as a dict: what the masters and the coordinator
    read until they take ``JobSettings.from_dict`` (issue 28); new code reads JobSettings."""
    from dataclasses import fields

    from tfhadoop.trainer.spec import default_of, is_required

    return {**{f.name: default_of(f) for f in fields(JobSpec) if not is_required(f)}, **job}
