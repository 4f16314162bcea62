"""Typed stubs for the parts of Skein 0.8.2 that tfhadoop, its tests and benches use.

Skein has no annotations and gives required parameters a ``required`` sentinel as
default, which a type checker takes as the parameter's type: these stubs state the
real signatures (read from skein 0.8.2's source) instead.
"""

from . import core as core, exceptions as exceptions, kv as kv, model as model
from .core import ApplicationClient as ApplicationClient, Client as Client
from .exceptions import (
    ApplicationError as ApplicationError,
    ApplicationNotRunningError as ApplicationNotRunningError,
    ConnectionError as ConnectionError,
    DriverError as DriverError,
    DriverNotRunningError as DriverNotRunningError,
    SkeinError as SkeinError,
)
from .model import (
    ACLs as ACLs,
    ApplicationSpec as ApplicationSpec,
    File as File,
    FileType as FileType,
    FileVisibility as FileVisibility,
    LogLevel as LogLevel,
    Master as Master,
    Resources as Resources,
    Security as Security,
    Service as Service,
)

__version__: str
