"""The Python API of a training job, in one import: ``JobSpec(...)`` or ``JobSpec.from_yaml``,
``submit`` and ``follow`` (README, "Python API"). Each lives in the module of its role: ``spec``
(the settings), ``submit`` (the Skein application) and ``follow`` (progress to the end).
"""
from __future__ import annotations

from tfhadoop.trainer.follow import follow
from tfhadoop.trainer.spec import DEFAULT_PHASE_TIMEOUTS, JobSettings, JobSpec, mebibytes
from tfhadoop.trainer.submit import application_spec, pack_python_path, submit, tracking_url

__all__ = ["DEFAULT_PHASE_TIMEOUTS", "JobSettings", "JobSpec", "application_spec", "follow", "mebibytes",
           "pack_python_path", "submit", "tracking_url"]

