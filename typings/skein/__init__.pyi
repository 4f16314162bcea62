"""Typed stubs for the parts of Skein 0.8.2 that tfhadoop, its tests and benches use.

Skein has no annotations and gives required parameters a ``required`` sentinel as
default, which a type checker takes as the parameter's type: these stubs state the
real signatures (read from skein 0.8.2's source) instead.
"""

from . import core as core
from . import exceptions as exceptions
from . import kv as kv
from . import model as model
from .core import ApplicationClient as ApplicationClient
from .core import Client as Client
from .exceptions import (
    ApplicationError as ApplicationError,
)
from .exceptions import (
    ApplicationNotRunningError as ApplicationNotRunningError,
)
from .exceptions import (
    ConnectionError as ConnectionError,
)
from .exceptions import (
    DriverError as DriverError,
)
from .exceptions import (
    DriverNotRunningError as DriverNotRunningError,
)
from .exceptions import (
    SkeinError as SkeinError,
)
from .model import (
    ACLs as ACLs,
)
from .model import (
    ApplicationSpec as ApplicationSpec,
)
from .model import (
    File as File,
)
from .model import (
    FileType as FileType,
)
from .model import (
    FileVisibility as FileVisibility,
)
from .model import (
    LogLevel as LogLevel,
)
from .model import (
    Master as Master,
)
from .model import (
    Resources as Resources,
)
from .model import (
    Security as Security,
)
from .model import (
    Service as Service,
)

__version__: str
