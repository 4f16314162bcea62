"""``tfhadoop kill``: see jobs_cli."""
from tfhadoop.trainer.jobs_cli import register_kill as register  # noqa: F401
